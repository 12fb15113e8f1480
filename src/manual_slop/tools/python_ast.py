"""Python tools built on the standard ``ast`` module.

Names are dotted paths from the module: ``load``, ``Config``, ``Config.save``,
``Outer.Inner.method``. A definition's source spans its decorators through its last line,
taken verbatim from the file. ``py_update_definition`` re-indents the new source to the
definition's column, replaces exactly those lines and refuses the edit unless the whole
file still parses. The skeleton, the outline and definition headers are those of
:mod:`manual_slop.summarize`, which context aggregation uses too.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from manual_slop import pyparse
from manual_slop.summarize import definition_header, first_line, python_outline_entries, python_skeleton
from manual_slop.tools.edits import EditPlan
from manual_slop.tools.errors import ToolInputError
from manual_slop.tools.files import walk_files
from manual_slop.tools.textio import TextFile, read_text, to_newline, write_text
from manual_slop.tools.tool import Tool, ToolRun

__all__ = [
    "Parsed",
    "find_definition",
    "outline_lines",
    "parse",
    "python_tools",
    "syntax_message",
    "write_planned",
]

SOURCE_LIMIT = 10_000_000
USAGE_LIMIT = 500
Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
_DEF_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True, slots=True)
class Parsed:
    file: TextFile
    shown: str
    tree: ast.Module

    @property
    def lines(self) -> list[str]:
        return self.file.text.splitlines(keepends=True)


def parse(path: Path, shown: str) -> Parsed:
    file = read_text(path, shown, SOURCE_LIMIT)
    try:
        tree = pyparse.parse(file.text, filename=shown)
    except SyntaxError as exc:
        raise ToolInputError(f"cannot parse {shown}: {syntax_message(exc)}") from None
    except ValueError as exc:  # source with NUL bytes
        raise ToolInputError(f"cannot parse {shown}: {exc}") from None
    return Parsed(file, shown, tree)


def syntax_message(exc: SyntaxError) -> str:
    return f"{type(exc).__name__} at line {exc.lineno}, column {exc.offset}: {exc.msg}"


def _kind(node: ast.AST) -> str:
    if isinstance(node, ast.ClassDef):
        return "class"
    if isinstance(node, ast.AsyncFunctionDef):
        return "async def"
    return "def"


def _assigned_names(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def _children(body: list[ast.stmt], name: str) -> Iterator[ast.stmt]:
    for node in body:
        if (isinstance(node, _DEF_TYPES) and node.name == name) or name in _assigned_names(node):
            yield node


def find_definition(tree: ast.Module, dotted: str, shown: str) -> ast.stmt:
    """The class, function or assignment named by ``dotted``; ToolInputError listing names."""
    parts = [p for p in dotted.strip().split(".") if p]
    if not parts:
        raise ToolInputError("name is empty; give a dotted name like Class.method")
    body: list[ast.stmt] = tree.body
    node: ast.stmt | None = None
    for depth, part in enumerate(parts):
        matches = list(_children(body, part))
        if not matches:
            scope = ".".join(parts[:depth]) or shown
            known = sorted(
                {n.name for n in body if isinstance(n, _DEF_TYPES)}
                | {a for n in body for a in _assigned_names(n)}
            )
            listing = ", ".join(known[:60]) or "none"
            raise ToolInputError(
                f"{'.'.join(parts[: depth + 1])} is not defined in {scope}; names there: {listing}"
            )
        node = matches[-1]  # the last definition wins, as at run time
        body = node.body if isinstance(node, _DEF_TYPES) else []
    assert node is not None
    return node


def _segment(parsed: Parsed, node: ast.stmt) -> tuple[int, int, str]:
    start, end = first_line(node), node.end_lineno or node.lineno
    return start, end, "".join(parsed.lines[start - 1 : end])


# -- outline and signatures ----------------------------------------------------------------------
def outline_lines(tree: ast.Module) -> list[str]:
    """Classes and functions, nested, with their headers and line ranges, in the form of the
    tree-sitter outlines: ``def save(self, path: Path) -> None (lines 40-52)``."""
    return [f"{'  ' * e.depth}{e.header} (lines {e.start}-{e.end})" for e in python_outline_entries(tree)]


def _signature(node: ast.stmt) -> str:
    if isinstance(node, _DEF_TYPES):
        return definition_header(node) + ":"
    return ast.unparse(node).splitlines()[0]


# -- handlers ------------------------------------------------------------------------------------
def _parsed(run: ToolRun) -> Parsed:
    return parse(run.path(), run.display(run.path()))


def py_get_skeleton(args: dict[str, Any], run: ToolRun) -> str:
    parsed = _parsed(run)
    return python_skeleton(parsed.file.text, parsed.tree) or "(empty module)"


def py_get_code_outline(args: dict[str, Any], run: ToolRun) -> str:
    parsed = _parsed(run)
    lines = outline_lines(parsed.tree)
    return "\n".join(lines) if lines else f"{parsed.shown} defines no classes or functions"


def py_get_definition(args: dict[str, Any], run: ToolRun) -> str:
    parsed = _parsed(run)
    node = find_definition(parsed.tree, args["name"], parsed.shown)
    start, end, text = _segment(parsed, node)
    return f"[{parsed.shown}: {args['name']}, lines {start}-{end}]\n{text}"


def py_get_signature(args: dict[str, Any], run: ToolRun) -> str:
    parsed = _parsed(run)
    return _signature(find_definition(parsed.tree, args["name"], parsed.shown))


def py_get_docstring(args: dict[str, Any], run: ToolRun) -> str:
    parsed = _parsed(run)
    name = args.get("name", "").strip()
    node: Any = parsed.tree if not name else find_definition(parsed.tree, name, parsed.shown)
    if not isinstance(node, (ast.Module, *_DEF_TYPES)):
        raise ToolInputError(f"{name} is an assignment; only modules, classes and functions have docstrings")
    doc = ast.get_docstring(node)
    what = name or f"module {parsed.shown}"
    return doc if doc else f"{what} has no docstring"


def py_get_imports(args: dict[str, Any], run: ToolRun) -> str:
    parsed = _parsed(run)
    lines = []
    for node in ast.walk(parsed.tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            lines.append((node.lineno, f"line {node.lineno}: {ast.unparse(node)}"))
    lines.sort()
    return "\n".join(text for _, text in lines) if lines else f"{parsed.shown} imports nothing"


def py_check_syntax(args: dict[str, Any], run: ToolRun) -> str:
    path = run.path()
    shown = run.display(path)
    file = read_text(path, shown, SOURCE_LIMIT)
    try:
        pyparse.parse(file.text, shown)  # compile(..., PyCF_ONLY_AST) under the parse lock
    except SyntaxError as exc:
        pointer = ""
        if exc.text:
            pointer = "\n  " + exc.text.rstrip("\r\n") + "\n  " + " " * max(0, (exc.offset or 1) - 1) + "^"
        return f"{shown}: {syntax_message(exc)}{pointer}"
    except ValueError as exc:
        return f"{shown}: cannot be compiled: {exc}"
    return f"{shown}: OK, no syntax errors ({len(file.text.splitlines())} lines)"


def py_find_usages(args: dict[str, Any], run: ToolRun) -> str:
    name = args["name"].strip().split(".")[-1]
    root = run.path()
    if not root.exists():
        raise ToolInputError(f"no such file or directory: {run.display(root)}")
    found: list[str] = []
    skipped: list[str] = []
    for path in walk_files(run, root, (".py", ".pyi")):
        shown = run.display(path)
        try:
            parsed = parse(path, shown)
        except ToolInputError:
            skipped.append(shown)
            continue
        source = parsed.lines
        for line, col, kind in _usages(parsed.tree, name):
            text = source[line - 1].strip() if line - 1 < len(source) else ""
            found.append(f"{shown}:{line}:{col + 1}: {kind}: {text[:200]}")
            if len(found) >= USAGE_LIMIT:
                break
        if len(found) >= USAGE_LIMIT or run.stopped():
            break
    note = f"\n(files that do not parse were skipped: {', '.join(skipped[:20])})" if skipped else ""
    if not found:
        return f"no usages of {name!r} under {run.display(root)}{note}"
    more = f"\n(stopped at {USAGE_LIMIT} usages)" if len(found) >= USAGE_LIMIT else ""
    return "\n".join(found) + more + note


def _usages(tree: ast.Module, name: str) -> Iterator[tuple[int, int, str]]:
    hits: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, _DEF_TYPES) and node.name == name:
            hits.append((node.lineno, node.col_offset, f"{_kind(node)} definition"))
        elif isinstance(node, ast.Name) and node.id == name:
            kind = "assignment" if isinstance(node.ctx, ast.Store) else "reference"
            hits.append((node.lineno, node.col_offset, kind))
        elif isinstance(node, ast.Attribute) and node.attr == name:
            hits.append((node.end_lineno or node.lineno, (node.end_col_offset or 0) - len(name), "attribute"))
        elif isinstance(node, ast.alias) and (node.asname or node.name.split(".")[-1]) == name:
            hits.append((node.lineno, node.col_offset, "import"))
        elif isinstance(node, ast.arg) and node.arg == name:
            hits.append((node.lineno, node.col_offset, "parameter"))
        elif isinstance(node, ast.keyword) and node.arg == name:
            hits.append((node.lineno, node.col_offset, "keyword argument"))
    yield from sorted(hits)


# -- py_update_definition -------------------------------------------------------------------------
def plan_update_definition(args: dict[str, Any], run: ToolRun) -> EditPlan:
    parsed = _parsed(run)
    node = find_definition(parsed.tree, args["name"], parsed.shown)
    start, end, _ = _segment(parsed, node)
    lines = parsed.lines
    first = lines[start - 1]
    indent = first[: len(first) - len(first.lstrip())]
    newline = parsed.file.newline
    replacement = textwrap.indent(textwrap.dedent(to_newline(args["new_source"], "\n")).strip("\n"), indent)
    replacement = to_newline(replacement + "\n", newline)
    if not lines[end - 1].endswith(("\n", "\r")):
        replacement = replacement.rstrip("\r\n")
    updated = "".join(lines[: start - 1]) + replacement + "".join(lines[end:])
    try:
        pyparse.parse(updated, filename=parsed.shown)
    except SyntaxError as exc:
        raise ToolInputError(
            f"refused: with this new source {parsed.shown} would not parse ({syntax_message(exc)}); "
            "nothing was changed"
        ) from None
    return EditPlan(
        run.path(), parsed.shown, parsed.file.text, updated, parsed.file.encode(updated), created=False
    )


def write_planned(change: EditPlan, name: str, what: str, *, subject: str = "") -> str:
    """Write an approved Python edit (nothing when it changes nothing) and say what happened:
    the one ending of every tool that edits a definition or a declaration."""
    if change.old_text == change.new_text:
        return f"{name} in {change.shown} already has this {what}; nothing written"
    write_text(change.path, change.data)
    return f"updated {subject or name} in {change.shown}; the file still parses"


def py_update_definition(args: dict[str, Any], run: ToolRun) -> str:
    return write_planned(plan_update_definition(args, run), args["name"], "source")


# -- declarations ------------------------------------------------------------------------------------
_PATH = {"type": "string", "minLength": 1, "description": "Python file path, relative to the base dir"}
_NAME = {
    "type": "string",
    "minLength": 1,
    "description": "Dotted name, e.g. 'load', 'Config' or 'Config.save'",
}


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def python_tools() -> list[Tool]:
    path_only = _schema({"path": _PATH}, ["path"])
    path_name = _schema({"path": _PATH, "name": _NAME}, ["path", "name"])

    def tool(name: str, description: str, schema: dict[str, Any], handler: Any, **extra: Any) -> Tool:
        return Tool(name, description, schema, handler, path_params=("path",), **extra)

    return [
        tool(
            "py_get_skeleton",
            "Show a Python file's shape without its bodies: imports, module constants, every class and "
            "function signature as written (decorators included) with its docstring, function bodies "
            "replaced by '...'. Much shorter than the file.",
            path_only,
            py_get_skeleton,
        ),
        tool(
            "py_get_code_outline",
            "List the classes and functions of a Python file, nested, with their signatures and line "
            "ranges (e.g. 'def save(self, path: Path) -> None (lines 40-52)'). Use the ranges with "
            "get_file_slice.",
            path_only,
            py_get_code_outline,
        ),
        tool(
            "py_get_definition",
            "Return the exact source of one class, function, method or module-level assignment, "
            "decorators included, by dotted name ('Config.save').",
            path_name,
            py_get_definition,
        ),
        tool(
            "py_update_definition",
            "Replace the whole source of one class, function or method (by dotted name) with "
            "new_source, re-indented to where it sits. Refused unless the file still parses. The user "
            "sees a diff and must approve.",
            _schema(
                {
                    "path": _PATH,
                    "name": _NAME,
                    "new_source": {
                        "type": "string",
                        "minLength": 1,
                        "description": "Complete new definition, decorators included",
                    },
                },
                ["path", "name", "new_source"],
            ),
            py_update_definition,
            mutating=True,
            preview=lambda args, run: plan_update_definition(args, run).diff(),
        ),
        tool(
            "py_get_signature",
            "Return the signature line of a function or method ('def save(self, path: Path) -> None:') "
            "or the header of a class, by dotted name.",
            path_name,
            py_get_signature,
        ),
        tool(
            "py_find_usages",
            "Find where a name is defined, assigned, referenced, imported, used as an attribute, "
            "parameter or keyword, in one Python file or every .py file under a folder. Returns "
            "'path:line:column: kind: source line'.",
            _schema(
                {
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": "Python file or folder ('.' for the project)",
                    },
                    "name": _NAME,
                },
                ["path", "name"],
            ),
            py_find_usages,
        ),
        tool(
            "py_get_imports",
            "List every import statement of a Python file with its line number.",
            path_only,
            py_get_imports,
        ),
        tool(
            "py_check_syntax",
            "Check whether a Python file parses. Returns 'OK' or the syntax error with its line, column "
            "and a pointer. Use it after editing.",
            path_only,
            py_check_syntax,
        ),
        tool(
            "py_get_docstring",
            "Return the docstring of a class, function or method by dotted name, or of the module when "
            "name is ''.",
            _schema(
                {"path": _PATH, "name": {"type": "string", "description": "Dotted name; '' for the module"}},
                ["path", "name"],
            ),
            py_get_docstring,
        ),
    ]
