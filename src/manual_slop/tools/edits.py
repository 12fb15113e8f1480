"""Mutating file tools: write_file, edit_file, set_file_slice.

Each tool has a *plan* function that computes the file's new bytes from its current
content and the arguments. The plan runs twice: once for the approval preview (a unified
diff shown in the ``tool_approval`` dialog) and again, on the approved — possibly edited —
arguments, right before the atomic write. Files keep their encoding, BOM and line-ending
style: text the model sends with ``\\n`` is written with ``\\r\\n`` into a CRLF file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from manual_slop.tools.errors import ToolInputError
from manual_slop.tools.textio import TextFile, read_text, to_newline, unified_diff, write_text
from manual_slop.tools.tool import Tool, ToolRun

__all__ = ["EditPlan", "edit_tools", "plan_edit_file", "plan_set_file_slice", "plan_write_file"]

EDIT_READ_LIMIT = 50_000_000  # files larger than this are not edited in place


@dataclass(frozen=True, slots=True)
class EditPlan:
    """A change to one file: its text before and after, and the bytes to write."""

    path: Path
    shown: str
    old_text: str
    new_text: str
    data: bytes
    created: bool

    def diff(self) -> str:
        return unified_diff(self.old_text, self.new_text, self.shown)


def _load(run: ToolRun, *, must_exist: bool) -> tuple[Path, str, TextFile | None]:
    path = run.path()
    shown = run.display(path)
    if path.is_dir():
        raise ToolInputError(f"{shown} is a directory")
    if not path.exists():
        if must_exist:
            raise ToolInputError(f"no such file: {shown} (use write_file to create it)")
        return path, shown, None
    current = read_text(path, shown, EDIT_READ_LIMIT + 1)
    if current.size > EDIT_READ_LIMIT:
        raise ToolInputError(f"{shown} is {current.size:,} bytes; too large to edit in place")
    return path, shown, current


def plan_write_file(args: dict[str, Any], run: ToolRun) -> EditPlan:
    path, shown, current = _load(run, must_exist=False)
    content: str = args["content"]
    if current is None:
        return EditPlan(path, shown, "", content, content.encode("utf-8"), created=True)
    if current.newline != "\n" and "\r" not in content:
        content = to_newline(content, current.newline)
    return EditPlan(path, shown, current.text, content, current.encode(content), created=False)


def plan_edit_file(args: dict[str, Any], run: ToolRun) -> EditPlan:
    path, shown, current = _load(run, must_exist=True)
    assert current is not None
    old: str = args["old_string"]
    new: str = args["new_string"]
    if old == "":
        raise ToolInputError("old_string is empty; give the exact text to replace")
    if old == new:
        raise ToolInputError("old_string and new_string are the same; nothing would change")
    text = current.text
    old_n, new_n = old, new
    if current.newline != "\n":
        old_n, new_n = to_newline(old, current.newline), to_newline(new, current.newline)
        if old_n not in text and old in text:  # the model copied the file's own endings
            old_n, new_n = old, new
    count = text.count(old_n)
    if count == 0:
        hint = _closest_line_hint(text, old)
        raise ToolInputError(
            f"old_string was not found in {shown}{hint}; read the file and copy the text exactly"
        )
    if count > 1 and not args.get("replace_all", False):
        raise ToolInputError(
            f"old_string occurs {count} times in {shown}; add surrounding lines to make it unique "
            "or set replace_all to true"
        )
    updated = text.replace(old_n, new_n) if args.get("replace_all", False) else text.replace(old_n, new_n, 1)
    return EditPlan(path, shown, text, updated, current.encode(updated), created=False)


def _closest_line_hint(text: str, old: str) -> str:
    first = next((line.strip() for line in old.splitlines() if line.strip()), "")
    if not first:
        return ""
    for number, line in enumerate(text.splitlines(), start=1):
        if first in line:
            return f" (its first line appears at line {number}; check whitespace and the lines after it)"
    return ""


def plan_set_file_slice(args: dict[str, Any], run: ToolRun) -> EditPlan:
    path, shown, current = _load(run, must_exist=True)
    assert current is not None
    start, end = int(args["start_line"]), int(args["end_line"])
    lines = current.text.splitlines(keepends=True)
    total = len(lines)
    if start > total + 1:
        raise ToolInputError(f"start_line {start} is past the end of {shown} ({total} lines)")
    if end < start - 1:
        raise ToolInputError(
            f"end_line ({end}) must be >= start_line - 1 (start_line - 1 inserts before start_line)"
        )
    if end > total:
        raise ToolInputError(f"end_line {end} is past the end of {shown} ({total} lines)")
    new_content = to_newline(args["new_content"], current.newline)
    if new_content and not new_content.endswith(current.newline) and end < total:
        new_content += current.newline  # keep the following line on its own line
    if start > 1 and not lines[start - 2].endswith(("\n", "\r")) and new_content:
        lines[start - 2] += current.newline
    updated = "".join(lines[: start - 1]) + new_content + "".join(lines[end:])
    return EditPlan(path, shown, current.text, updated, current.encode(updated), created=False)


def _runner(plan_fn: Any) -> Any:
    def handler(args: dict[str, Any], run: ToolRun) -> str:
        plan = plan_fn(args, run)
        if plan.old_text == plan.new_text and not plan.created:
            return f"{plan.shown} already has this content; nothing written"
        write_text(plan.path, plan.data)
        verb = "created" if plan.created else "updated"
        return f"{verb} {plan.shown} ({len(plan.data):,} bytes, {len(plan.new_text.splitlines())} lines)"

    return handler


def _previewer(plan_fn: Any) -> Any:
    def preview(args: dict[str, Any], run: ToolRun) -> str:
        return plan_fn(args, run).diff()

    return preview


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


_PATH = {"type": "string", "minLength": 1, "description": "File path, relative to the project's base dir"}


def edit_tools() -> list[Tool]:
    return [
        Tool(
            "write_file",
            "Create a file or replace its whole content. Missing folders are created. The user sees a "
            "diff and must approve. Prefer edit_file for changing part of an existing file.",
            _schema(
                {"path": _PATH, "content": {"type": "string", "description": "The complete new content"}},
                ["path", "content"],
            ),
            _runner(plan_write_file),
            mutating=True,
            path_params=("path",),
            preview=_previewer(plan_write_file),
        ),
        Tool(
            "edit_file",
            "Replace old_string with new_string in a file. old_string must match the file exactly "
            "(whitespace included) and be unique, unless replace_all is true. Line endings of the "
            "file are kept. The user sees a diff and must approve.",
            _schema(
                {
                    "path": _PATH,
                    "old_string": {"type": "string", "description": "Exact text to replace"},
                    "new_string": {"type": "string", "description": "Replacement text"},
                    "replace_all": {
                        "type": "boolean",
                        "default": False,
                        "description": "Replace every occurrence",
                    },
                },
                ["path", "old_string", "new_string"],
            ),
            _runner(plan_edit_file),
            mutating=True,
            path_params=("path",),
            preview=_previewer(plan_edit_file),
        ),
        Tool(
            "set_file_slice",
            "Replace lines start_line..end_line (1-based, inclusive) of a file with new_content. "
            "end_line = start_line - 1 inserts before start_line; empty new_content deletes the lines. "
            "Read the lines first with get_file_slice. The user sees a diff and must approve.",
            _schema(
                {
                    "path": _PATH,
                    "start_line": {"type": "integer", "minimum": 1, "description": "First line to replace"},
                    "end_line": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "Last line to replace (inclusive)",
                    },
                    "new_content": {"type": "string", "description": "Text that takes the lines' place"},
                },
                ["path", "start_line", "end_line", "new_content"],
            ),
            _runner(plan_set_file_slice),
            mutating=True,
            path_params=("path",),
            preview=_previewer(plan_set_file_slice),
        ),
    ]
