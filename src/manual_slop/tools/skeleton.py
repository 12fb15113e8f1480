"""``get_skeleton``: a source file's shape with the function bodies left out.

One tool for every language, chosen by the file's extension:

- Python (``.py``, ``.pyi``): the skeleton of :func:`manual_slop.summarize.python_skeleton`
  (what ``py_get_skeleton`` and the context's skeleton view show);
- C, C++, JavaScript, TypeScript/TSX, Rust, Go: the file as written, with the block body
  of every function, method, lambda and closure replaced by ``{ ... }``. Declarations,
  types, struct and class bodies, imports and comments stay, so a header-like view of the
  file remains. The grammars and the suffix table are those of :mod:`.outline`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from manual_slop import pyparse
from manual_slop.summarize import python_skeleton
from manual_slop.tools.errors import ToolInputError
from manual_slop.tools.outline import LANGUAGE_BY_SUFFIX, tree_sitter_language
from manual_slop.tools.textio import read_bytes
from manual_slop.tools.tool import Tool, ToolRun

__all__ = ["ELIDED", "FUNCTION_NODES", "code_skeleton", "skeleton_tools"]

SOURCE_LIMIT = 10_000_000
ELIDED = b"{ ... }"
_JS_FUNCTIONS = frozenset(
    {
        "function_declaration", "generator_function_declaration", "function_expression", "function",
        "generator_function", "arrow_function", "method_definition",
    }
)  # fmt: skip
# node types whose ``body`` field is elided when it is a block (an arrow's expression body stays)
FUNCTION_NODES: dict[str, frozenset[str]] = {
    "c": frozenset({"function_definition"}),
    "cpp": frozenset({"function_definition", "lambda_expression"}),
    "javascript": _JS_FUNCTIONS,
    "typescript": _JS_FUNCTIONS,
    "tsx": _JS_FUNCTIONS,
    "rust": frozenset({"function_item", "closure_expression"}),
    "go": frozenset({"function_declaration", "method_declaration", "func_literal"}),
}
_BLOCKS = frozenset({"compound_statement", "statement_block", "block"})


def code_skeleton(language: str, source: bytes) -> str:
    """``source`` (C, C++, JS, TS, TSX, Rust or Go) with block bodies of functions elided."""
    import tree_sitter

    tree = tree_sitter.Parser(tree_sitter_language(language)).parse(source)
    functions = FUNCTION_NODES[language]
    cuts: list[tuple[int, int]] = []
    stack = [tree.root_node]  # iterative: minified code nests deeper than Python's recursion limit
    while stack:
        node = stack.pop()
        for child in node.named_children:
            body = child.child_by_field_name("body") if child.type in functions else None
            if body is not None and body.type in _BLOCKS:
                cuts.append((body.start_byte, body.end_byte))
            else:
                stack.append(child)
    out = bytearray()
    position = 0
    for start, end in sorted(cuts):
        out += source[position:start] + ELIDED
        position = end
    out += source[position:]
    text = out.decode("utf-8", "replace").rstrip()
    if tree.root_node.has_error:
        text += "\n(the parser met syntax errors; parts of the skeleton may keep their bodies)"
    return text


def get_skeleton(args: dict[str, Any], run: ToolRun) -> str:
    path: Path = run.path()
    shown = run.display(path)
    suffix = path.suffix.lower()
    if suffix not in {".py", ".pyi", *LANGUAGE_BY_SUFFIX}:
        known = ", ".join(sorted({*LANGUAGE_BY_SUFFIX, ".py", ".pyi"}))
        raise ToolInputError(
            f"no skeleton for {suffix or 'files without an extension'} files; supported: {known}. "
            "Use get_file_summary for other files"
        )
    data, size = read_bytes(path, shown, SOURCE_LIMIT + 1)
    if size > SOURCE_LIMIT:
        raise ToolInputError(f"{shown} is {size:,} bytes; too large for a skeleton")
    if suffix in LANGUAGE_BY_SUFFIX:
        text = code_skeleton(LANGUAGE_BY_SUFFIX[suffix], data)
    else:
        source = data.decode("utf-8", "replace")
        try:
            text = python_skeleton(source, pyparse.parse(source, filename=shown))
        except (SyntaxError, ValueError) as exc:
            raise ToolInputError(f"cannot parse {shown}: {exc}; use py_check_syntax for details") from None
    return text or f"{shown}: empty"


def skeleton_tools() -> list[Tool]:
    return [
        Tool(
            "get_skeleton",
            "Show a source file without its function bodies (Python, C, C++, JS, TS, Rust, Go). "
            "Python: imports, signatures and docstrings, bodies as '...'. The others: declarations, "
            "types, signatures and comments as written, every function body as '{ ... }'. Much "
            "shorter than the file.",
            {
                "type": "object",
                "properties": {"path": {"type": "string", "minLength": 1, "description": "Source file path"}},
                "required": ["path"],
                "additionalProperties": False,
            },
            get_skeleton,
            path_params=("path",),
        )
    ]
