"""Heuristic views of a file's text: skeleton, outline and summary (no model call).

- **skeleton** (Python): imports, signatures, docstrings and short module/class-level
  statements, taken verbatim from the source by line and column so formatting and
  comments in signatures survive; function bodies become ``...``. Other files get
  their summary.
- **outline**: Python classes and functions (nested, also inside ``if``/``try``/``with``)
  with their headers and line ranges; Markdown headings, TOML tables and YAML keys with
  line numbers; JSON keys with their types.
- **summary**: a few lines per file: Python docstring, imports, classes with their
  methods, functions, constants; Markdown headings; TOML tables and keys; JSON keys;
  YAML top-level keys; the head of any other text.

One implementation serves both readers: context aggregation (:mod:`manual_slop.context.views`,
which takes Python trees from the AST cache) and the model's tools (``py_get_skeleton``,
``py_get_code_outline``, ``get_code_outline``, ``get_file_summary`` in
:mod:`manual_slop.tools`). It imports only the standard library.

Everything here is a pure function of the text (and, for Python, its parsed tree) and
fast: a skeleton costs a fraction of the ``ast.parse`` it needs (see
``scripts/bench_aggregate.py``).
"""

from __future__ import annotations

import ast
import copy
import functools
import json
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

__all__ = [
    "OutlineEntry",
    "definition_header",
    "first_line",
    "markdown_outline",
    "markdown_summary",
    "outline_text",
    "python_outline",
    "python_outline_entries",
    "python_skeleton",
    "python_summary",
    "skeleton_text",
    "summary_text",
    "text_summary",
    "yaml_outline",
    "yaml_summary",
]

MAX_LISTED = 40  # names per list in a summary
HEAD_LINES = 20  # lines shown of an unknown text file
SHORT_STATEMENT_LINES = 3  # module/class statements up to this long are kept verbatim
SHORT_COMPOUND_LINES = 6

TreeGetter = Callable[[], ast.Module]  # raises SyntaxError (or ValueError for NUL bytes)

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_KEPT = (*_DEFS, ast.ClassDef, ast.Import, ast.ImportFrom, ast.If, ast.Try, ast.TryStar)
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_TOML_TABLE = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_\-.\"' ]+?)\s*\]\]?\s*(?:#.*)?$")
_TOML_KEY = re.compile(r"^\s*([A-Za-z0-9_\-\"'.]+)\s*=")
_YAML_KEY = re.compile(r"^([A-Za-z_][\w.-]*)\s*:")
_KINDS = {
    ".py": "python",
    ".pyi": "python",
    ".md": "markdown",
    ".markdown": "markdown",
    ".toml": "toml",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
}


# ======================================================================================
# dispatch by file type
# ======================================================================================
def _kind(name: str) -> str:
    return _KINDS.get(PurePosixPath(name).suffix.lower(), "text")


def skeleton_text(name: str, text: str, tree: TreeGetter) -> str:
    """Skeleton of a Python file; the summary of anything else or of Python that does not parse."""
    if _kind(name) != "python":
        return summary_text(name, text, tree)
    try:
        parsed = tree()
    except (SyntaxError, ValueError) as exc:
        return f"(does not parse: {_syntax_error(exc)}; summary instead)\n" + text_summary(text)
    return python_skeleton(text, parsed)


def outline_text(name: str, text: str, tree: TreeGetter) -> str:
    """Outline by file type; the summary when the type has no structure to outline."""
    kind = _kind(name)
    if kind == "python":
        try:
            return python_outline(tree())
        except (SyntaxError, ValueError) as exc:
            return f"(does not parse: {_syntax_error(exc)})\n" + text_summary(text)
    return _TEXT_VIEWS[kind].outline(text) if kind in _TEXT_VIEWS else text_summary(text)


def summary_text(name: str, text: str, tree: TreeGetter) -> str:
    """Heuristic summary by file type."""
    kind = _kind(name)
    if kind == "python":
        try:
            return python_summary(text, tree())
        except (SyntaxError, ValueError) as exc:
            reason = f"Python file, {_lines(text)} (does not parse: {_syntax_error(exc)})."
            return reason + "\n" + text_summary(text)
    return _TEXT_VIEWS[kind].summary(text) if kind in _TEXT_VIEWS else text_summary(text)


def _syntax_error(exc: SyntaxError | ValueError) -> str:
    if not isinstance(exc, SyntaxError):  # ast.parse on Python 3.11: NUL bytes in the source
        return str(exc)
    return f"{exc.msg} at line {exc.lineno}" if exc.lineno else str(exc.msg)


def _count_lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _lines(text: str) -> str:
    count = _count_lines(text)
    return f"{count} line" if count == 1 else f"{count} lines"


def _listed(names: list[str]) -> str:
    if len(names) <= MAX_LISTED:
        return ", ".join(names)
    return ", ".join(names[:MAX_LISTED]) + f", … and {len(names) - MAX_LISTED} more"


# ======================================================================================
# Python skeleton (line/column slicing of the original source)
# ======================================================================================
class _SkeletonWriter:
    def __init__(self, source: str) -> None:
        self.lines = source.split("\n")
        self.out: list[str] = []
        self.last_line = 0  # last source line emitted (statements sharing a line are not repeated)

    # -- text helpers ----------------------------------------------------------------
    def _prefix(self, lineno: int, col: int) -> str:
        line = self.lines[lineno - 1]
        return line[:col] if line.isascii() else line.encode("utf-8")[:col].decode("utf-8", "replace")

    def _suffix(self, lineno: int, col: int) -> str:
        line = self.lines[lineno - 1]
        return line[col:] if line.isascii() else line.encode("utf-8")[col:].decode("utf-8", "replace")

    def _indent_of(self, lineno: int) -> str:
        line = self.lines[lineno - 1]
        return line[: len(line) - len(line.lstrip())]

    def _verbatim(self, first: int, last: int) -> None:
        first = max(first, self.last_line + 1)
        if first > last:
            return
        self.out.extend(self.lines[first - 1 : last])
        self.last_line = last

    # -- statements ------------------------------------------------------------------
    def block(self, body: list[ast.stmt]) -> None:
        for index, node in enumerate(body):
            if (node.end_lineno or node.lineno) <= self.last_line:
                continue  # shares an already emitted line (``a = 1; b = 2``)
            if isinstance(node, (*_DEFS, ast.ClassDef)):
                self._definition(node)
            elif (index == 0 and _is_docstring(node)) or isinstance(node, ast.Import | ast.ImportFrom):
                self._verbatim(node.lineno, node.end_lineno or node.lineno)
            else:
                self._other(node)

    def _definition(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        start = first_line(node)
        if self.out and self.out[-1].strip() and not self.out[-1].rstrip().endswith(":"):
            self.out.append("")
        first = node.body[0]
        same_line = bool(self._prefix(first.lineno, first.col_offset).strip())
        indent = self._header(start, node, first)
        rest = node.body
        if _is_docstring(first):
            self._docstring(first, indent)
            rest = node.body[1:]
        if rest:
            if isinstance(node, ast.ClassDef) and not same_line:
                self.block(rest)
            else:
                self.out.append(indent + "...")
        self.last_line = max(self.last_line, node.end_lineno or node.lineno)

    def _header(self, start: int, node: ast.stmt, first: ast.stmt) -> str:
        """Emit the lines from ``start`` up to the body; return the body's indentation."""
        indent, _ = self._clause_header(start, node.lineno, first)
        return indent

    def _clause_header(self, start: int, indent_line: int, first: ast.stmt) -> tuple[str, bool]:
        """Emit a clause header (``def …:``, ``if …:``, ``else:``); its body's indent and
        whether the body starts on the header's own line."""
        start = max(start, self.last_line + 1)
        first_line, first_col = _start_of(first)
        prefix = self._prefix(first_line, first_col)
        header = self.lines[start - 1 : first_line - 1]
        same_line = bool(prefix.strip())
        if same_line:  # the body starts on the header's last line: ``def f(): return 1``
            header.append(prefix.rstrip())
            indent = self._indent_of(indent_line) + "    "
        else:
            # comments and blank lines just above the first statement belong to the body
            while header and (not header[-1].strip() or header[-1].lstrip().startswith("#")):
                header.pop()
            indent = self._indent_of(first_line)
        self.out.extend(header)
        self.last_line = first_line - 1
        return indent, same_line

    def _docstring(self, node: ast.stmt, indent: str) -> None:
        end = node.end_lineno or node.lineno
        if self._prefix(node.lineno, node.col_offset).strip():  # shares its line with the header
            self.out.append(indent + self._suffix(node.lineno, node.col_offset).strip())
            self.last_line = node.lineno
            self._verbatim(node.lineno + 1, end)
            return
        self._verbatim(node.lineno, end)

    def _other(self, node: ast.stmt) -> None:
        end = node.end_lineno or node.lineno
        span = end - node.lineno + 1
        body = getattr(node, "body", None)
        compound = isinstance(body, list) and bool(body)
        if span <= (SHORT_COMPOUND_LINES if compound else SHORT_STATEMENT_LINES):
            self._verbatim(node.lineno, end)
            return
        value = getattr(node, "value", None)
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and value is not None:
            first = max(node.lineno, self.last_line + 1)
            head = "\n".join(
                [*self.lines[first - 1 : value.lineno - 1], self._prefix(value.lineno, value.col_offset)]
            )
            self.out.extend((_trim_assignment_head(head) + " ...").split("\n"))
        elif isinstance(node, ast.If | ast.Try | ast.TryStar):
            self._branches(node)
        elif compound and isinstance(body, list):  # for / while / with: the loop's else is dropped
            indent, same_line = self._clause_header(node.lineno, node.lineno, body[0])
            self._clause_body(body, indent, same_line)
        else:
            first_line = self.lines[node.lineno - 1].strip()
            shown = first_line if len(first_line) <= 60 else first_line[:57] + "..."
            self.out.append(f"{self._indent_of(node.lineno)}...  # {shown} ({span} lines)")
        self.last_line = end

    def _branches(self, node: ast.If | ast.Try | ast.TryStar) -> None:
        """An ``if``/``try`` keeps every clause (so the skeleton still parses); clause bodies
        keep their definitions and imports, anything else becomes ``...``."""
        indent, same_line = self._clause_header(node.lineno, node.lineno, node.body[0])
        self._clause_body(node.body, indent, same_line)
        if isinstance(node, ast.If):
            if not node.orelse:
                return
            first = node.orelse[0]
            if isinstance(first, ast.If) and self.lines[first.lineno - 1].lstrip().startswith("elif"):
                self._branches(first)
            else:
                self._keyword_clause("else", node.orelse, node.lineno)
            return
        for handler in node.handlers:
            indent, same_line = self._clause_header(handler.lineno, handler.lineno, handler.body[0])
            self._clause_body(handler.body, indent, same_line)
        if node.orelse:
            self._keyword_clause("else", node.orelse, node.lineno)
        if node.finalbody:
            self._keyword_clause("finally", node.finalbody, node.lineno)

    def _keyword_clause(self, keyword: str, body: list[ast.stmt], owner_line: int) -> None:
        line = body[0].lineno
        while line > self.last_line + 1 and not self.lines[line - 1].lstrip().startswith(keyword):
            line -= 1
        indent, same_line = self._clause_header(line, owner_line, body[0])
        self._clause_body(body, indent, same_line)

    def _clause_body(self, body: list[ast.stmt], indent: str, same_line: bool) -> None:
        end = max(n.end_lineno or n.lineno for n in body)
        if not same_line and any(isinstance(n, _KEPT) for n in body):
            self.block(body)
        else:
            self.out.append(indent + "...")
        self.last_line = max(self.last_line, end)


def _trim_assignment_head(head: str) -> str:
    """``X = (  # note\\n`` → ``X =``: drop opening parentheses, continuations and comments."""
    lines = head.split("\n")
    while lines:
        last = lines[-1].rstrip().rstrip("(\\").rstrip()
        if not last or last.lstrip().startswith("#"):
            lines.pop()
            continue
        if last != lines[-1]:
            lines[-1] = last
            continue
        break
    return "\n".join(lines)


def first_line(node: ast.stmt) -> int:
    """The line where a statement's text begins: its first decorator's, if it has any."""
    return _start_of(node)[0]


def _start_of(node: ast.stmt) -> tuple[int, int]:
    """Line and column where a statement's text begins (its first decorator's ``@``)."""
    decorators = getattr(node, "decorator_list", None)
    if decorators:
        first = min(decorators, key=lambda d: (d.lineno, d.col_offset))
        return first.lineno, max(first.col_offset - 1, 0)
    return node.lineno, node.col_offset


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def python_skeleton(source: str, tree: ast.Module) -> str:
    """Signatures, docstrings, imports and short statements of ``source``; bodies elided.

    ``tree`` is ``ast.parse(source)``. Line endings may be ``\n``, ``\r\n`` or ``\r``
    (the parser counts each as one line break); the skeleton's are ``\n``.
    """
    if "\r" in source:
        source = source.replace("\r\n", "\n").replace("\r", "\n")
    writer = _SkeletonWriter(source)
    writer.block(tree.body)
    while writer.out and not writer.out[-1].strip():
        writer.out.pop()
    return "\n".join(writer.out)


# ======================================================================================
# Python outline and summary
# ======================================================================================
def definition_header(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> str:
    """``def save(self, path: Path) -> None`` or ``class Config(Base)``: the header without
    decorators, body or the closing colon, normalised by ``ast.unparse``."""
    header = copy.copy(node)
    header.body = [ast.Pass()]
    header.decorator_list = []
    return ast.unparse(header).split("\n", 1)[0].removesuffix(":")


@dataclass(frozen=True, slots=True)
class OutlineEntry:
    """One class or function of a Python outline."""

    depth: int  # nesting: 0 at module level, +1 inside each class or function
    header: str  # see definition_header
    start: int  # first line, decorators included
    end: int  # last line


def python_outline_entries(tree: ast.Module) -> list[OutlineEntry]:
    """Classes and functions in source order, nested; also those inside module- or
    class-level ``if``/``try``/``with`` blocks (``if TYPE_CHECKING:``, ``try: import``)."""
    out: list[OutlineEntry] = []

    def walk(body: list[ast.stmt], depth: int) -> None:
        for node in body:
            if isinstance(node, (*_DEFS, ast.ClassDef)):
                end = node.end_lineno or node.lineno
                out.append(OutlineEntry(depth, definition_header(node), first_line(node), end))
                walk(node.body, depth + 1)
            elif isinstance(node, ast.If | ast.Try | ast.TryStar | ast.With | ast.AsyncWith):
                for part in ("body", "orelse", "finalbody"):
                    walk(getattr(node, part, []), depth)
                for handler in getattr(node, "handlers", []):
                    walk(handler.body, depth)

    walk(tree.body, 0)
    return out


def python_outline(tree: ast.Module) -> str:
    """Classes and functions, nested, each with its line range: ``def f(x) -> int  [L3-9]``."""
    lines = [f"{'  ' * e.depth}{e.header}  [L{e.start}-{e.end}]" for e in python_outline_entries(tree)]
    return "\n".join(lines) if lines else "(no classes or functions)"


def python_summary(source: str, tree: ast.Module) -> str:
    """A few lines: docstring, imports, classes with methods, functions, constants."""
    out = [f"Python module, {_lines(source)}."]
    doc = ast.get_docstring(tree, clean=True)
    if doc:
        out.append("Docstring: " + doc.strip().splitlines()[0])
    imports: list[str] = []
    classes: list[str] = []
    functions: list[str] = []
    constants: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            imports.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imports.append("." * node.level + (node.module or ""))
        elif isinstance(node, ast.ClassDef):
            methods = [n.name for n in node.body if isinstance(n, _DEFS)]
            classes.append(f"{node.name} ({', '.join(methods)})" if methods else node.name)
        elif isinstance(node, _DEFS):
            functions.append(f"{node.name}({', '.join(a.arg for a in node.args.args)})")
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            constants.extend(t.id for t in targets if isinstance(t, ast.Name) and t.id.isupper())
    for label, names in (
        ("Imports", sorted(set(imports))),
        ("Classes", classes),
        ("Functions", functions),
        ("Constants", constants),
    ):
        if names:
            out.append(f"{label}: {_listed(names)}")
    return "\n".join(out)


# ======================================================================================
# Markdown, TOML, JSON, other text
# ======================================================================================
def _headings(text: str) -> list[tuple[int, int, str]]:
    """(line number, level, title) of each ATX heading outside fenced code."""
    found: list[tuple[int, int, str]] = []
    fence: str | None = None
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            marker = stripped[:3]
            fence = None if fence == marker else (fence or marker)
            continue
        if fence is None:
            match = _HEADING.match(line)
            if match:
                found.append((number, len(match.group(1)), match.group(2)))
    return found


def markdown_outline(text: str) -> str:
    """Headings with their line numbers, indented by level."""
    heads = _headings(text)
    if not heads:
        return "(no headings)"
    return "\n".join(f"{'  ' * (level - 1)}{title}  [L{number}]" for number, level, title in heads)


def markdown_summary(text: str) -> str:
    """Line count and the headings (first ones when there are many)."""
    heads = _headings(text)
    out = [f"Markdown, {_lines(text)}, {len(heads)} headings."]
    out.extend(f"{'  ' * (level - 1)}- {title}" for _, level, title in heads[:MAX_LISTED])
    if len(heads) > MAX_LISTED:
        out.append(f"… and {len(heads) - MAX_LISTED} more headings")
    return "\n".join(out)


def _toml_outline(text: str) -> str:
    out: list[str] = []
    in_table = False
    for number, line in enumerate(text.split("\n"), 1):
        table = _TOML_TABLE.match(line)
        if table:
            in_table = True
            closing = "]]" if table.group(1) == "[[" else "]"
            out.append(f"{table.group(1)}{table.group(2)}{closing}  [L{number}]")
        elif not in_table:
            key = _TOML_KEY.match(line)
            if key:
                out.append(f"{key.group(1)}  [L{number}]")
    return "\n".join(out) if out else text_summary(text)


def _yaml_keys(text: str) -> list[tuple[int, str]]:
    """(line number, key) of each top-level mapping key; no YAML parser, so a heuristic."""
    found: list[tuple[int, str]] = []
    for number, line in enumerate(text.split("\n"), 1):
        match = _YAML_KEY.match(line)
        if match:
            found.append((number, match.group(1)))
    return found


def yaml_outline(text: str) -> str:
    """Top-level keys with their line numbers; the head of the text when there are none."""
    keys = _yaml_keys(text)
    return "\n".join(f"{key}  [L{number}]" for number, key in keys) if keys else text_summary(text)


def yaml_summary(text: str) -> str:
    """Line count and the top-level keys (each once, in order of appearance)."""
    keys = list(dict.fromkeys(key for _, key in _yaml_keys(text)))
    head = f"YAML, {_lines(text)}."
    if not keys:
        return head + "\n" + text_summary(text)
    return f"{head}\nTop-level keys: {_listed(keys)}"


def _toml_summary(text: str) -> str:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return f"TOML, {_lines(text)} (does not parse: {exc}).\n" + _toml_outline(text)
    out = [f"TOML, {_lines(text)}."]
    _describe_tree(data, out, depth=2, prefix="")
    return "\n".join(out)


def _json_summary(text: str, depth: int) -> str:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"JSON, {_lines(text)} (does not parse: {exc.msg} at line {exc.lineno}).\n" + (
            text_summary(text)
        )
    out = [f"JSON, {_lines(text)}; top level: {_type_name(data)}."]
    _describe_tree(data, out, depth=depth, prefix="")
    return "\n".join(out)


def _type_name(value: Any) -> str:
    if isinstance(value, dict):
        return f"table of {len(value)}"
    if isinstance(value, list):
        return f"list of {len(value)}"
    return type(value).__name__


def _describe_tree(data: Any, out: list[str], depth: int, prefix: str) -> None:
    if isinstance(data, list) and data and isinstance(data[0], dict):
        _describe_tree(data[0], out, depth, prefix + "[0].")
        return
    if not isinstance(data, dict) or depth == 0:
        return
    for listed, (key, value) in enumerate(data.items()):
        if listed >= MAX_LISTED:
            out.append(f"{prefix}… and {len(data) - listed} more keys")
            break
        out.append(f"{prefix}{key}: {_type_name(value)}")
        _describe_tree(value, out, depth - 1, f"{prefix}{key}.")


def text_summary(text: str) -> str:
    """The first lines of a text and its length."""
    lines = text.split("\n")
    head = lines[:HEAD_LINES]
    more = _count_lines(text) - len(head)
    tail = f"\n… ({_count_lines(text)} lines in all)" if more > 0 else ""
    return "\n".join(head).rstrip("\n") + tail


@dataclass(frozen=True, slots=True)
class _TextViews:
    outline: Callable[[str], str]
    summary: Callable[[str], str]


# the file kinds read from their text alone (Python needs its tree; others get text_summary)
_TEXT_VIEWS: dict[str, _TextViews] = {
    "markdown": _TextViews(markdown_outline, markdown_summary),
    "toml": _TextViews(_toml_outline, _toml_summary),
    "json": _TextViews(functools.partial(_json_summary, depth=3), functools.partial(_json_summary, depth=2)),
    "yaml": _TextViews(yaml_outline, yaml_summary),
}
