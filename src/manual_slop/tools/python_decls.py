"""Python tools that read or rewrite one declaration in place: a signature or an assignment.

- ``py_set_signature`` replaces the header of a function, method or class — from ``def``
  (or ``async def`` / ``class``) through the colon that opens its body — and nothing else:
  decorators, docstring and body stay as they are.
- ``py_get_var_declaration`` / ``py_set_var_declaration`` read or replace one module- or
  class-level assignment (``LIMIT: int = 10``, ``Config.name``), annotation included.

Both setters are mutating tools: their plan runs once for the approval diff and once more on
the approved arguments, and refuses the edit unless the new text is the right kind of
statement and the whole file still parses (like ``py_update_definition``).
"""

from __future__ import annotations

import ast
import io
import re
import textwrap
import tokenize
from collections.abc import Callable
from typing import Any

from manual_slop import pyparse
from manual_slop.tools.edits import EditPlan
from manual_slop.tools.errors import ToolInputError
from manual_slop.tools.python_ast import Parsed, find_definition, parse, syntax_message, write_planned
from manual_slop.tools.textio import to_newline
from manual_slop.tools.tool import Tool, ToolRun

__all__ = ["declaration_tools", "plan_set_signature", "plan_set_var_declaration"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_ASSIGNMENTS = (ast.Assign, ast.AnnAssign)
_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # the line breaks ast counts


def _parsed(run: ToolRun) -> Parsed:
    return parse(run.path(), run.display(run.path()))


def _line_starts(text: str) -> list[int]:
    """Character offset of each line's start, counting lines the way ``ast`` does."""
    return [0, *(m.end() for m in _LINE_BREAK.finditer(text))]


def _offset(text: str, starts: list[int], line: int, byte_col: int) -> int:
    """Character offset of an ``ast`` position (``col_offset`` counts UTF-8 bytes)."""
    start = starts[line - 1]
    end = starts[line] if line < len(starts) else len(text)
    return start + len(text[start:end].encode("utf-8")[:byte_col].decode("utf-8", "replace"))


def _indent_at(text: str, starts: list[int], line: int) -> str:
    head = text[starts[line - 1] :]
    return head[: len(head) - len(head.lstrip(" \t"))]


def _replace(parsed: Parsed, run: ToolRun, start: int, end: int, new: str, indent: str) -> EditPlan:
    """The file with ``text[start:end]`` replaced by ``new`` (continuation lines indented by
    ``indent``, line endings the file's); refused unless the result parses."""
    body = textwrap.indent(new, indent)[len(indent) :] if indent else new
    text = parsed.file.text
    updated = text[:start] + to_newline(body, parsed.file.newline) + text[end:]
    try:
        pyparse.parse(updated, filename=parsed.shown)
    except (SyntaxError, ValueError) as exc:
        why = syntax_message(exc) if isinstance(exc, SyntaxError) else str(exc)
        raise ToolInputError(
            f"refused: with this change {parsed.shown} would not parse ({why}); nothing was changed"
        ) from None
    return EditPlan(run.path(), parsed.shown, text, updated, parsed.file.encode(updated), created=False)


def _normalised(source: str, what: str) -> str:
    text = textwrap.dedent(to_newline(source, "\n")).strip()
    if not text:
        raise ToolInputError(f"{what} is empty")
    return text


# -- py_set_signature ---------------------------------------------------------------------------
def _header_end(text: str, start: int, shown: str, name: str) -> int:
    """Offset just past the colon that ends the header beginning at ``start``."""
    segment = text[start:]
    rows = [0, *(m.end() for m in re.finditer("\n", segment))]
    depth = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(segment).readline):
            if token.type != tokenize.OP:
                continue
            if token.string in "([{":
                depth += 1
            elif token.string in ")]}":
                depth -= 1
            elif token.string == ":" and depth == 0:
                row, col = token.end
                return start + rows[row - 1] + col
    except (tokenize.TokenError, SyntaxError):
        pass
    raise ToolInputError(f"cannot find where the header of {name} ends in {shown}")


def _new_header(source: str, node: ast.stmt) -> str:
    """The new signature, checked: one header of the same kind, without decorators."""
    header = _normalised(source, "new_signature").removesuffix(":").rstrip()
    try:
        probe = pyparse.parse(header + ":\n    pass\n")
    except SyntaxError as exc:
        raise ToolInputError(
            f"new_signature is not a valid header ({syntax_message(exc)}); write it like "
            "'def save(self, path: Path) -> None:'"
        ) from None
    wanted = ast.ClassDef if isinstance(node, ast.ClassDef) else _FUNCTIONS
    kind = (
        "a class header ('class Name(Base):')"
        if isinstance(node, ast.ClassDef)
        else "a 'def' or 'async def' header"
    )
    stmt = probe.body[0] if len(probe.body) == 1 else None
    if stmt is None or not isinstance(stmt, wanted) or len(stmt.body) != 1:
        raise ToolInputError(f"new_signature must be {kind}, and nothing else")
    if stmt.decorator_list:
        raise ToolInputError(
            "new_signature has decorators; give the header only (py_update_definition changes decorators)"
        )
    return header + ":"


def plan_set_signature(args: dict[str, Any], run: ToolRun) -> EditPlan:
    parsed = _parsed(run)
    node = find_definition(parsed.tree, args["name"], parsed.shown)
    if not isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
        raise ToolInputError(f"{args['name']} is an assignment; use py_set_var_declaration")
    header = _new_header(args["new_signature"], node)
    text = parsed.file.text
    starts = _line_starts(text)
    start = _offset(text, starts, node.lineno, node.col_offset)
    end = _header_end(text, start, parsed.shown, args["name"])
    return _replace(parsed, run, start, end, header, _indent_at(text, starts, node.lineno))


# -- py_get_var_declaration / py_set_var_declaration -----------------------------------------------
def _assignment(parsed: Parsed, name: str) -> ast.Assign | ast.AnnAssign:
    node = find_definition(parsed.tree, name, parsed.shown)
    if not isinstance(node, _ASSIGNMENTS):
        kind = "a class" if isinstance(node, ast.ClassDef) else "a function"
        raise ToolInputError(
            f"{name} is {kind}, not an assignment; use py_get_definition or py_get_signature"
        )
    return node


def _span(parsed: Parsed, node: ast.stmt) -> tuple[int, int, list[int]]:
    text = parsed.file.text
    starts = _line_starts(text)
    start = _offset(text, starts, node.lineno, node.col_offset)
    end = _offset(text, starts, node.end_lineno or node.lineno, node.end_col_offset or 0)
    return start, end, starts


def py_get_var_declaration(args: dict[str, Any], run: ToolRun) -> str:
    parsed = _parsed(run)
    node = _assignment(parsed, args["name"])
    start, end, _ = _span(parsed, node)
    last = node.end_lineno or node.lineno
    lines = f"line {node.lineno}" if last == node.lineno else f"lines {node.lineno}-{last}"
    return f"[{parsed.shown}: {args['name']}, {lines}]\n{parsed.file.text[start:end]}"


def _new_declaration(source: str, name: str) -> str:
    text = _normalised(source, "new_declaration")
    try:
        probe = pyparse.parse(text)
    except SyntaxError as exc:
        raise ToolInputError(f"new_declaration does not parse ({syntax_message(exc)})") from None
    stmt = probe.body[0] if len(probe.body) == 1 else None
    if stmt is None or not isinstance(stmt, _ASSIGNMENTS):
        raise ToolInputError(f"new_declaration must be one assignment, like '{name}: int = 10'")
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    if not any(isinstance(t, ast.Name) and t.id == name for t in targets):
        raise ToolInputError(f"new_declaration must assign {name} (to rename, edit the file with edit_file)")
    return text


def plan_set_var_declaration(args: dict[str, Any], run: ToolRun) -> EditPlan:
    parsed = _parsed(run)
    node = _assignment(parsed, args["name"])
    new = _new_declaration(args["new_declaration"], args["name"].strip().split(".")[-1])
    start, end, starts = _span(parsed, node)
    return _replace(parsed, run, start, end, new, _indent_at(parsed.file.text, starts, node.lineno))


# -- declarations ------------------------------------------------------------------------------------
def _writer(
    plan: Callable[[dict[str, Any], ToolRun], EditPlan], what: str
) -> Callable[[dict[str, Any], ToolRun], str]:
    def handler(args: dict[str, Any], run: ToolRun) -> str:
        name = args["name"]
        return write_planned(plan(args, run), name, what, subject=f"the {what} of {name}")

    return handler


def _preview(plan: Callable[[dict[str, Any], ToolRun], EditPlan]) -> Callable[[dict[str, Any], ToolRun], str]:
    return lambda args, run: plan(args, run).diff()


def _schema(extra: dict[str, Any] | None = None) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "path": {
            "type": "string",
            "minLength": 1,
            "description": "Python file path, relative to the base dir",
        },
        "name": {
            "type": "string",
            "minLength": 1,
            "description": "Dotted name, e.g. 'LIMIT' or 'Config.save'",
        },
        **(extra or {}),
    }
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def declaration_tools() -> list[Tool]:
    return [
        Tool(
            "py_set_signature",
            "Replace only the 'def ...:' or 'class ...:' header of a definition, by dotted name. "
            "Decorators, docstring and body stay. Refused unless the file still parses. The user sees "
            "a diff and must approve.",
            _schema(
                {
                    "new_signature": {
                        "type": "string",
                        "minLength": 1,
                        "description": "The new header, e.g. 'def save(self, path: Path) -> None:'",
                    }
                }
            ),
            _writer(plan_set_signature, "signature"),
            mutating=True,
            path_params=("path",),
            preview=_preview(plan_set_signature),
        ),
        Tool(
            "py_get_var_declaration",
            "Return the source of a module- or class-level assignment, by dotted name. Examples: "
            "'LIMIT', 'Config.name'; annotation and value included, with its line range.",
            _schema(),
            py_get_var_declaration,
            path_params=("path",),
        ),
        Tool(
            "py_set_var_declaration",
            "Replace a module- or class-level assignment, by dotted name. The new_declaration must "
            "assign the same name ('LIMIT: int = 20'). Refused unless the file still parses. The user "
            "sees a diff and must approve.",
            _schema(
                {
                    "new_declaration": {
                        "type": "string",
                        "minLength": 1,
                        "description": "The whole new assignment, e.g. 'LIMIT: int = 20'",
                    }
                }
            ),
            _writer(plan_set_var_declaration, "declaration"),
            mutating=True,
            path_params=("path",),
            preview=_preview(plan_set_var_declaration),
        ),
    ]
