"""Source files cut into chunks that follow their structure, for the project index.

A chunk is what one search hit returns, so it should be one thing a reader would name:
a function, a class (or, when the class is large, its header and each method), a module's
preamble, a Markdown section. Python uses ``ast``; C, C++, Go, Rust, JavaScript and
TypeScript use the tree-sitter grammars and node tables of :mod:`manual_slop.tools.outline`;
Markdown splits at headings; anything else, and any file that does not parse, falls back
to windows of lines that overlap. Comments (and decorators/attributes) just above a
definition belong to it. Neighbouring small definitions share a chunk, since a three-line
helper alone is a poor search hit and costs one embedding like a big one. Nothing is
longer than :data:`MAX_LINES` lines or :data:`MAX_CHARS` characters: longer pieces are
cut into windows.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from manual_slop import pyparse
from manual_slop.tools.errors import ToolUnavailable
from manual_slop.tools.outline import LANGUAGE_BY_SUFFIX, NODE_TABLES, entry_name, tree_sitter_language
from manual_slop.tools.textio import decode, is_binary

__all__ = [
    "MAX_CHARS",
    "MAX_LINES",
    "SIZE_LIMIT",
    "Chunk",
    "chunk_bytes",
    "chunk_text",
    "skip_reason",
]

SIZE_LIMIT = 1_000_000
MAX_LINES = 60
MAX_CHARS = 2_000
WINDOW_LINES = 40
WINDOW_OVERLAP = 10
SUMMARY_CHARS = 120
PACK_LINES = 24  # neighbouring small pieces are packed into one chunk up to this many lines

_PYTHON_SUFFIXES = {".py", ".pyi", ".pyw"}
_MARKDOWN_SUFFIXES = {".md", ".markdown", ".mdx"}
_C_LIKE_LEADERS = ("//", "/*", "*", "*/")
# Lines just above a definition that belong to it (comments, decorators, attributes).
_LEADERS: dict[str, tuple[str, ...]] = {
    "python": ("#",),
    "c": _C_LIKE_LEADERS,
    "cpp": (*_C_LIKE_LEADERS, "template"),
    "javascript": (*_C_LIKE_LEADERS, "@"),
    "typescript": (*_C_LIKE_LEADERS, "@"),
    "tsx": (*_C_LIKE_LEADERS, "@"),
    "rust": (*_C_LIKE_LEADERS, "#["),
    "go": _C_LIKE_LEADERS,
}
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a file: ``start_line``-``end_line`` (1-based, inclusive) of ``path``."""

    path: str
    start_line: int
    end_line: int
    text: str
    symbol: str = ""  # enclosing definition or heading, e.g. "Config.save" or "Setup > Linux"
    summary: str = ""  # what the whole file is about: a module docstring's first line, a title

    def embedding_text(self) -> str:
        """The text to embed: file, summary and symbol first, so a chunk carries its context."""
        header = f"{self.path}: {self.summary}" if self.summary else self.path
        return f"{header}\n{self.symbol}\n{self.text}" if self.symbol else f"{header}\n{self.text}"


@dataclass(slots=True)
class _Span:
    start: int
    end: int
    symbol: str
    children: list[_Span] = field(default_factory=list)  # what a too-large span splits into
    packable: bool = True


def skip_reason(size: int, data: bytes = b"") -> str | None:
    """Why a file of ``size`` bytes starting with ``data`` is not indexed, or None."""
    if size > SIZE_LIMIT:
        return f"larger than {SIZE_LIMIT:,} bytes ({size:,})"
    if is_binary(data):
        return "binary file"
    return None


def chunk_bytes(path: str, data: bytes) -> list[Chunk]:
    """Chunks of a file's content (UTF-8, else Latin-1); ``path`` is the name shown."""
    return chunk_text(path, decode(data)[0])


def chunk_text(path: str, text: str) -> list[Chunk]:
    """Chunks of ``text``, cut by the structure its file suffix implies."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not any(line.strip() for line in lines):
        return []
    suffix = "." + path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    spans, summary = _structure(suffix, lines)
    leaders = _LEADERS.get("python" if suffix in _PYTHON_SUFFIXES else LANGUAGE_BY_SUFFIX.get(suffix, ""), ())
    pieces = (
        _windows(lines, 1, len(lines), "")
        if spans is None
        else _layout(lines, spans, 1, len(lines), "", leaders)
    )
    return [chunk for piece in pieces for chunk in _chunks(path, lines, piece, summary)]


def _chunks(path: str, lines: list[str], piece: _Span, summary: str) -> Iterator[Chunk]:
    text = "\n".join(lines[piece.start - 1 : piece.end])
    # Only a single line (minified code, data) can exceed MAX_CHARS here: cut it in slices.
    for offset in range(0, len(text), MAX_CHARS):
        yield Chunk(path, piece.start, piece.end, text[offset : offset + MAX_CHARS], piece.symbol, summary)


def _structure(suffix: str, lines: list[str]) -> tuple[list[_Span] | None, str]:
    """Definition spans of the file (None when we do not understand it) and its summary."""
    if suffix in _PYTHON_SUFFIXES:
        try:
            tree = pyparse.parse("\n".join(lines))
        except (SyntaxError, ValueError, RecursionError):  # RecursionError: absurdly deep nesting
            return None, ""
        return _python_spans(tree.body, ""), _first_line(ast.get_docstring(tree) or "")
    if suffix in _MARKDOWN_SUFFIXES:
        spans = _markdown_spans(lines)
        return spans, spans[0].symbol if spans else ""
    language = LANGUAGE_BY_SUFFIX.get(suffix)
    if language is None:
        return None, ""
    return _tree_sitter_spans(language, "\n".join(lines).encode("utf-8", "surrogatepass")), ""


def _first_line(text: str) -> str:
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return line if len(line) <= SUMMARY_CHARS else line[: SUMMARY_CHARS - 1] + "…"


def _python_spans(body: Sequence[ast.stmt], prefix: str) -> list[_Span]:
    spans = []
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = f"{prefix}.{node.name}" if prefix else node.name
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            children = _python_spans(node.body, name) if isinstance(node, ast.ClassDef) else []
            spans.append(_Span(start, node.end_lineno or node.lineno, name, children))
    return spans


def _markdown_spans(lines: list[str]) -> list[_Span]:
    spans: list[_Span] = []
    trail: list[tuple[int, str]] = []  # (level, title) of the enclosing headings
    fence = ""
    for number, line in enumerate(lines, 1):
        opener = _FENCE.match(line)
        if opener and (not fence or opener.group(1)[0] == fence[0]):
            fence = "" if fence else opener.group(1)
            continue
        heading = None if fence else _HEADING.match(line)
        if heading is None:
            continue
        level = len(heading.group(1))
        trail = [(lvl, title) for lvl, title in trail if lvl < level] + [(level, heading.group(2))]
        if spans:
            spans[-1].end = number - 1
        spans.append(_Span(number, len(lines), " > ".join(title for _, title in trail), packable=False))
    return spans


def _tree_sitter_spans(language: str, source: bytes) -> list[_Span] | None:
    try:
        import tree_sitter

        tree = tree_sitter.Parser(tree_sitter_language(language)).parse(source)
    except (ImportError, ToolUnavailable):
        return None
    if tree.root_node.has_error:
        return None
    table = NODE_TABLES[language]

    def visit(node: Any, prefix: str) -> list[_Span]:
        # The outline's walk: entries are recorded, other nodes searched through.
        spans: list[_Span] = []
        for child in node.named_children:
            spec = table.get(child.type)
            name = entry_name(language, child) if spec else None
            if spec is None or name is None:
                spans.extend(visit(child, prefix))
                continue
            qualified = f"{prefix}.{name}" if prefix else name
            children = visit(child, qualified) if spec[1] else []
            spans.append(_Span(child.start_point[0] + 1, child.end_point[0] + 1, qualified, children))
        return spans

    return visit(tree.root_node, "")


def _layout(
    lines: list[str], spans: list[_Span], lo: int, hi: int, prefix: str, leaders: tuple[str, ...]
) -> list[_Span]:
    """Pieces covering lines ``lo``-``hi``: each span, and the gaps between them, sized to fit."""
    segments: list[_Span] = []
    cursor = lo
    for span in sorted(spans, key=lambda s: s.start):
        if span.start < cursor or span.end > hi:
            continue  # nested in, or overlapping, what came before
        start = span.start
        while start > cursor and lines[start - 2].strip().startswith(leaders):
            start -= 1
        if start > cursor:
            segments.append(_Span(cursor, start - 1, prefix, packable=bool(prefix)))
        segments.append(_Span(start, span.end, span.symbol, span.children, span.packable))
        cursor = span.end + 1
    if cursor <= hi:
        # Top-level code between definitions (a module's preamble) stays a chunk of its own.
        segments.append(_Span(cursor, hi, prefix, packable=bool(prefix)))
    pieces: list[_Span] = []
    for segment in segments:
        trimmed = _trim(lines, segment)
        if trimmed is None:
            continue
        if _fits(lines, trimmed.start, trimmed.end):
            pieces.append(trimmed)
        elif trimmed.children:
            inner = _layout(lines, trimmed.children, trimmed.start, trimmed.end, trimmed.symbol, leaders)
            pieces.extend(inner)
        else:
            pieces.extend(_windows(lines, trimmed.start, trimmed.end, trimmed.symbol))
    return _pack(lines, pieces)


def _trim(lines: list[str], span: _Span) -> _Span | None:
    """``span`` without its leading and trailing blank lines; None when it is all blank."""
    start, end = span.start, span.end
    while start <= end and not lines[start - 1].strip():
        start += 1
    while end >= start and not lines[end - 1].strip():
        end -= 1
    if start > end:
        return None
    return _Span(start, end, span.symbol, span.children, span.packable)


def _fits(lines: list[str], start: int, end: int) -> bool:
    return end - start + 1 <= MAX_LINES and _chars(lines, start, end) <= MAX_CHARS


def _chars(lines: list[str], start: int, end: int) -> int:
    return sum(len(line) + 1 for line in lines[start - 1 : end])


def _pack(lines: list[str], pieces: list[_Span]) -> list[_Span]:
    """Neighbouring small pieces merged while the result stays within PACK_LINES lines."""
    packed: list[_Span] = []
    for piece in pieces:
        last = packed[-1] if packed else None
        if (
            last is not None
            and last.packable
            and piece.packable
            and piece.end - last.start + 1 <= PACK_LINES
            and _chars(lines, last.start, piece.end) <= MAX_CHARS
        ):
            names = (name for part in (last.symbol, piece.symbol) for name in part.split(", ") if name)
            packed[-1] = _Span(last.start, piece.end, ", ".join(dict.fromkeys(names)))
        else:
            packed.append(piece)
    return packed


def _windows(lines: list[str], start: int, end: int, symbol: str) -> list[_Span]:
    """Overlapping windows of at most WINDOW_LINES lines and MAX_CHARS characters."""
    windows: list[_Span] = []
    first = start
    while first <= end:
        last, size = first, len(lines[first - 1]) + 1
        while last < end and last - first + 1 < WINDOW_LINES and size + len(lines[last]) + 1 <= MAX_CHARS:
            size += len(lines[last]) + 1
            last += 1
        trimmed = _trim(lines, _Span(first, last, symbol, packable=False))
        if trimmed is not None:
            windows.append(trimmed)
        if last >= end:
            break
        overlap = min(WINDOW_OVERLAP, (last - first + 1) // 4)
        first = last + 1 - overlap
    return windows
