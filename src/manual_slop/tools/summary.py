"""``get_file_summary``: a short, heuristic description of a file, chosen by its type.

==================  =================================================================
Python              module docstring line, imports, classes (with methods), functions
C, C++, JS/TS,      the outline's top-level entries (tree-sitter)
Rust, Go
Markdown            the headings, indented by level
TOML, JSON          the top-level keys and tables (with the type of each value)
YAML                the top-level keys
anything else       the first 20 lines
==================  =================================================================

Every summary starts with one line: path, size in bytes and line count.
"""

from __future__ import annotations

import ast
import json
import re
import tomllib
from pathlib import Path
from typing import Any

from manual_slop.tools.errors import ToolError
from manual_slop.tools.outline import LANGUAGE_BY_SUFFIX, code_outline
from manual_slop.tools.registry import Tool, ToolRun
from manual_slop.tools.textio import read_text

__all__ = ["summarize", "summary_tools"]

SUMMARY_READ_LIMIT = 5_000_000
HEAD_LINES = 20
LIST_LIMIT = 60


def _clip(items: list[str]) -> str:
    shown = items[:LIST_LIMIT]
    more = f", ... ({len(items) - LIST_LIMIT} more)" if len(items) > LIST_LIMIT else ""
    return ", ".join(shown) + more


def _python(text: str) -> list[str]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError) as exc:
        return [f"Python (does not parse: {exc}); first lines:", *_head(text)]
    out = ["Python module"]
    doc = ast.get_docstring(tree)
    if doc:
        out.append(f"docstring: {doc.strip().splitlines()[0]}")
    imports: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            imports += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            imports.append("." * node.level + (node.module or ""))
    if imports:
        out.append(f"imports: {_clip(list(dict.fromkeys(imports)))}")
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            methods = [n.name for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
            out.append(f"class {node.name} (line {node.lineno}): methods {_clip(methods) or 'none'}")
    functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    if functions:
        out.append(f"functions: {_clip(functions)}")
    return out


def _markdown(text: str) -> list[str]:
    headings = []
    in_fence = False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        match = None if in_fence else re.match(r"(#{1,6})\s+(.*)", line)
        if match:
            headings.append("  " * (len(match.group(1)) - 1) + match.group(2).strip())
    return (
        ["Markdown; headings:", *headings[: LIST_LIMIT * 2]]
        if headings
        else ["Markdown, no headings", *_head(text)]
    )


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return f"table of {len(value)}"
    if isinstance(value, list):
        return f"list of {len(value)}"
    return type(value).__name__


def _mapping(kind: str, data: Any) -> list[str]:
    if isinstance(data, dict):
        return [
            f"{kind}; top-level keys:",
            *(f"  {k}: {_describe(v)}" for k, v in list(data.items())[:LIST_LIMIT]),
        ]
    return [f"{kind}; top level is {_describe(data)}"]


def _toml(text: str) -> list[str]:
    try:
        return _mapping("TOML", tomllib.loads(text))
    except tomllib.TOMLDecodeError as exc:
        return [f"TOML (does not parse: {exc}); first lines:", *_head(text)]


def _json(text: str) -> list[str]:
    try:
        return _mapping("JSON", json.loads(text))
    except json.JSONDecodeError as exc:
        return [f"JSON (does not parse: {exc}); first lines:", *_head(text)]


def _yaml(text: str) -> list[str]:
    keys = re.findall(r"^([A-Za-z_][\w.-]*)\s*:", text, flags=re.MULTILINE)
    return ["YAML; top-level keys:", _clip(list(dict.fromkeys(keys)))] if keys else ["YAML", *_head(text)]


def _head(text: str) -> list[str]:
    lines = text.splitlines()
    head = [line[:200] for line in lines[:HEAD_LINES]]
    if len(lines) > HEAD_LINES:
        head.append(f"... ({len(lines) - HEAD_LINES} more lines)")
    return head


def summarize(path: Path, shown: str) -> str:
    """The summary text of one file."""
    file = read_text(path, shown, SUMMARY_READ_LIMIT)
    text = file.text
    suffix = path.suffix.lower()
    partial = " (first part only)" if file.size > SUMMARY_READ_LIMIT else ""
    header = f"{shown}: {file.size:,} bytes, {len(text.splitlines())} lines{partial}"
    if file.size == 0:
        return f"{header}; empty"
    if suffix in {".py", ".pyi"}:
        body = _python(text)
    elif suffix in LANGUAGE_BY_SUFFIX:
        try:
            outline = [
                line
                for line in code_outline(LANGUAGE_BY_SUFFIX[suffix], text.encode())
                if not line.startswith(" ")
            ]
            body = [
                f"{LANGUAGE_BY_SUFFIX[suffix]} source; top-level definitions:",
                *outline[: LIST_LIMIT * 2],
            ]
        except ToolError as exc:  # grammar missing
            body = [f"source ({exc}); first lines:", *_head(text)]
    elif suffix in {".md", ".markdown"}:
        body = _markdown(text)
    elif suffix == ".toml":
        body = _toml(text)
    elif suffix == ".json":
        body = _json(text)
    elif suffix in {".yaml", ".yml"}:
        body = _yaml(text)
    else:
        body = ["first lines:", *_head(text)]
    return "\n".join([header, *body])


def get_file_summary(args: dict[str, Any], run: ToolRun) -> str:
    return summarize(run.path(), run.display(run.path()))


def summary_tools() -> list[Tool]:
    return [
        Tool(
            "get_file_summary",
            "Summarize a file without reading all of it: for code its imports, classes and functions; "
            "for Markdown its headings; for TOML/JSON/YAML its top-level keys; otherwise its first "
            "lines. Starts with the size and line count.",
            {
                "type": "object",
                "properties": {"path": {"type": "string", "minLength": 1, "description": "File path"}},
                "required": ["path"],
                "additionalProperties": False,
            },
            get_file_summary,
            path_params=("path",),
        )
    ]
