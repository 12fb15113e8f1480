"""``get_file_summary``: a short, heuristic description of a file, chosen by its type.

==================  =================================================================
C, C++, JS/TS,      the outline's top-level entries (tree-sitter, :mod:`.outline`)
Rust, Go
anything else       the summary of :func:`manual_slop.summarize.summary_text` (the one
                    context aggregation uses): Python docstring, imports, classes with
                    their methods, functions and constants; Markdown headings; TOML
                    and JSON keys with the type of each value; YAML top-level keys;
                    otherwise the first 20 lines
==================  =================================================================

Every summary starts with one line: path, size in bytes and line count.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from manual_slop import pyparse
from manual_slop.summarize import summary_text, text_summary
from manual_slop.tools.errors import ToolError
from manual_slop.tools.outline import LANGUAGE_BY_SUFFIX, code_outline
from manual_slop.tools.textio import read_text
from manual_slop.tools.tool import Tool, ToolRun

__all__ = ["source_summary", "summarize", "summary_tools"]

SUMMARY_READ_LIMIT = 5_000_000
OUTLINE_ENTRIES = 120  # top-level definitions listed for a tree-sitter language


def source_summary(language: str, text: str) -> str:
    """The top-level entries of the tree-sitter outline of ``text`` (a ``language`` of
    :data:`~manual_slop.tools.outline.GRAMMARS`); the first lines when the grammar is missing.
    The context's summary view of C, C++, JS/TS, Rust and Go files is this text too."""
    try:
        outline = [line for line in code_outline(language, text.encode()) if not line.startswith(" ")]
    except ToolError as exc:  # grammar missing
        return "\n".join([f"source ({exc}); first lines:", text_summary(text)])
    more = [f"… and {len(outline) - OUTLINE_ENTRIES} more"] if len(outline) > OUTLINE_ENTRIES else []
    return "\n".join([f"{language} source; top-level definitions:", *outline[:OUTLINE_ENTRIES], *more])


def summarize(path: Path, shown: str) -> str:
    """The summary text of one file."""
    file = read_text(path, shown, SUMMARY_READ_LIMIT)
    text = file.text
    suffix = path.suffix.lower()
    partial = " (first part only)" if file.size > SUMMARY_READ_LIMIT else ""
    lines = len(text.splitlines())
    header = f"{shown}: {file.size:,} bytes, {lines} line{'' if lines == 1 else 's'}{partial}"
    if file.size == 0:
        return f"{header}; empty"
    if suffix in LANGUAGE_BY_SUFFIX:
        body = [source_summary(LANGUAGE_BY_SUFFIX[suffix], text)]
    else:
        body = [summary_text(path.name, text, lambda: pyparse.parse(text))]
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
