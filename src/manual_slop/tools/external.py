"""Tools an external agent runs itself (the Gemini CLI), judged by our rules.

Our own read-only tools never ask for approval but are confined to the project's allowed
paths. The same holds for an external agent's file-reading tools: a call that only reads,
and only inside the project, is approved by policy; anything else (writes, shell, web,
tools we do not know, reads outside the project) asks the user. A call that names a file
our path policy never lets near a model (credentials, the app's config, ``.env``, private
keys, ...) is refused without asking anyone, as our own tools refuse it
(:func:`external_refusal`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from manual_slop.tools.errors import AccessDenied
from manual_slop.tools.security import PathPolicy

__all__ = ["EXTERNAL_FILE_TOOLS", "EXTERNAL_READ_ONLY_TOOLS", "external_refusal", "read_only_approval"]

# Gemini CLI tool name -> the arguments that hold paths (a string or a list of strings).
EXTERNAL_READ_ONLY_TOOLS: dict[str, tuple[str, ...]] = {
    "read_file": ("file_path", "absolute_path", "path"),
    "read_many_files": ("paths", "include"),
    "list_directory": ("dir_path", "path"),
    "glob": ("dir_path", "path"),
    "search_file_content": ("dir_path", "path"),
}
# Every Gemini CLI tool that names files: the read-only ones and the ones that write.
EXTERNAL_FILE_TOOLS: dict[str, tuple[str, ...]] = {
    **EXTERNAL_READ_ONLY_TOOLS,
    "write_file": ("file_path", "path"),
    "replace": ("file_path", "path"),
}


def _paths(args: Mapping[str, Any], names: tuple[str, ...]) -> list[Any]:
    found: list[Any] = []
    for name in names:
        value = args.get(name)
        found.extend(value if isinstance(value, list) else [value] if value is not None else [])
    return found


def external_refusal(tool: str, args: Mapping[str, Any], policy: PathPolicy) -> str:
    """Why the path policy refuses this call outright (``ACCESS DENIED: ...``), or ``""``."""
    for item in _paths(args, EXTERNAL_FILE_TOOLS.get(tool, ())):
        if isinstance(item, str) and not any(ch in item for ch in "*?["):
            reason = policy.refusal(item)
            if reason is not None:
                return f"ACCESS DENIED: {item!r}: {reason}"
    return ""


def read_only_approval(tool: str, args: Mapping[str, Any], policy: PathPolicy) -> str:
    """The rule that approves this call without asking, or ``""`` when the user must decide."""
    path_args = EXTERNAL_READ_ONLY_TOOLS.get(tool)
    if path_args is None:
        return ""
    for name in path_args:
        value = args.get(name)
        values = value if isinstance(value, list) else [value] if value is not None else []
        for item in values:
            if not isinstance(item, str):
                return ""
            if any(ch in item for ch in "*?[") and name == "include":
                continue  # a glob pattern for read_many_files, resolved by the CLI inside its paths
            try:
                policy.check(item)
            except AccessDenied:
                return ""
    return f"read-only tool {tool} inside the project"
