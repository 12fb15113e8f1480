"""Rendering one file as a Markdown block in a given view mode.

A block is a heading that names the file and the mode used, the user's annotation
(if any) and the body in a fenced code block::

    ### `src/app.py` (skeleton, auto)

    ```python
    def main() -> None:
        ...
    ```

The heading's extra words say why the mode differs from the file's own setting:
``auto`` (the strategy chose it), ``budget`` (reduced to fit the token budget),
``provider`` (a summary written by the model). Blocks depend only on the file's
text and settings, so identical inputs give identical bytes.

C, C++, JavaScript, TypeScript, Rust and Go files get the views of the code tools
(tree-sitter): skeleton as ``get_skeleton``, outline as ``get_code_outline``, summary
as the top-level entries ``get_file_summary`` lists. Other files get those of
:mod:`manual_slop.summarize`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import PurePosixPath

from manual_slop.context.file_cache import FileCache
from manual_slop.context.items import FileItem, FileKind, ViewMode, language_for
from manual_slop.summarize import TreeGetter, outline_text, skeleton_text, summary_text
from manual_slop.tools.errors import ToolError
from manual_slop.tools.outline import LANGUAGE_BY_SUFFIX, code_outline
from manual_slop.tools.skeleton import code_skeleton
from manual_slop.tools.summary import source_summary

__all__ = ["Summarizer", "code_span", "fenced", "mask_lines", "render_block"]

# run_subagent_summarization(path, content, is_code, outline) -> summary
Summarizer = Callable[[str, str, bool, str], str]

MASK = "[masked]"
_BACKTICKS = re.compile(r"`{3,}")


def fenced(text: str, language: str = "") -> str:
    """``text`` in a code fence longer than any backtick run inside it."""
    # most texts hold no run of three backticks: the substring test is a C scan, while the
    # regex walked every character of every block of every worker context (~3 ms a context)
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=2) if "```" in text else 2
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{fence}{language}\n{body}{fence}\n"


def code_span(name: str) -> str:
    return f"`` {name} ``" if "`" in name else f"`{name}`"


def mask_lines(text: str, patterns: Sequence[re.Pattern[str]]) -> str:
    """Replace each line matching any pattern by ``[masked]`` (indentation kept)."""
    if not patterns:
        return text
    out = []
    for line in text.split("\n"):
        if any(p.search(line) for p in patterns):
            out.append(line[: len(line) - len(line.lstrip())] + MASK)
        else:
            out.append(line)
    return "\n".join(out)


def _custom_body(item: FileItem, language: str) -> str:
    lines = (item.content or "").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    parts: list[str] = []
    for piece in item.slices:
        if piece.start > len(lines):
            parts.append(f"lines {piece.start}-{piece.end}: past the end of the file ({len(lines)} lines)\n")
            continue
        end = min(piece.end, len(lines))
        clipped = f" (the file ends at line {len(lines)})" if end < piece.end else ""
        parts.append(
            f"lines {piece.start}-{end}{clipped}:\n"
            + fenced("\n".join(lines[piece.start - 1 : end]), language)
        )
    return "\n".join(parts)


def _source_language(name: str) -> str | None:
    """The tree-sitter language of a C, C++, JS/TS, Rust or Go file name; None for others."""
    return LANGUAGE_BY_SUFFIX.get(PurePosixPath(name).suffix.lower())


def _source_view(view: str, language: str, text: str) -> str:
    if view == "summary":
        return source_summary(language, text)
    try:
        if view == "skeleton":
            return code_skeleton(language, text.encode())
        return "\n".join(code_outline(language, text.encode())) or "(no functions, classes or types)"
    except ToolError as exc:  # the grammar is not installed
        return f"({exc})\n" + source_summary(language, text)


def _view_text(view: str, name: str, text: str, tree: TreeGetter) -> str:
    """The ``skeleton``, ``outline`` or ``summary`` text of a file, by its type."""
    language = _source_language(name)
    if language is not None:
        return _source_view(view, language, text)
    render = {"skeleton": skeleton_text, "outline": outline_text, "summary": summary_text}[view]
    return render(name, text, tree)


def _label(item: FileItem) -> str:
    if item.kind is FileKind.IMAGE:
        kind = item.path.suffix.lstrip(".").upper()
        return f"image, {kind}, {item.size:,} bytes"
    return f"{item.kind.value}: {item.error}"


def render_block(
    item: FileItem,
    mode: ViewMode,
    *,
    cache: FileCache,
    masks: Sequence[re.Pattern[str]] = (),
    tags: Sequence[str] = (),
    summarizer: Summarizer | None = None,
) -> str:
    """The Markdown block of ``item`` shown in ``mode`` (``tags`` go into the heading)."""
    heading = f"### {code_span(item.name)}"
    if item.kind is not FileKind.TEXT or item.content is None:
        return f"{heading} ({_label(item)})\n\n"
    text = item.content
    language = language_for(item.name)
    key, stamp = str(item.path), item.stamp

    def tree():  # parsed lazily, only by views that need it
        return cache.tree(key, stamp, text)

    words = [mode.value, *tags]
    body: str | None
    if mode is ViewMode.FULL:
        body = fenced(text, language)
    elif mode is ViewMode.MASKED:
        body = fenced(mask_lines(text, masks), language)
    elif mode is ViewMode.CUSTOM:
        body = _custom_body(item, language)
    elif mode is ViewMode.SKELETON:
        skeleton = cache.view(key, stamp, "skeleton", lambda: _view_text("skeleton", item.name, text, tree))
        code = item.is_python or _source_language(item.name) is not None
        body = fenced(skeleton, language if code else "text")
    elif mode is ViewMode.OUTLINE:
        body = fenced(
            cache.view(key, stamp, "outline", lambda: _view_text("outline", item.name, text, tree)), "text"
        )
    elif mode is ViewMode.SUMMARY:
        summary = None
        if summarizer is not None:
            summary = _provider_summary(item, text, cache, tree, summarizer)
            if summary is not None:
                words.append("provider")
        if summary is None:
            summary = cache.view(key, stamp, "summary", lambda: _view_text("summary", item.name, text, tree))
        body = fenced(summary, "text")
    else:  # ViewMode.NONE: listed by name
        body = None
    block = f"{heading} ({', '.join(words)})\n"
    if item.annotation.strip():
        block += "\n" + item.annotation.strip() + "\n"
    if body:
        block += "\n" + body
    return block + "\n"


def _provider_summary(
    item: FileItem, text: str, cache: FileCache, tree: Callable[[], object], summarizer: Summarizer
) -> str | None:
    key, stamp = str(item.path), item.stamp
    cached = cache.peek_view(key, stamp, "provider-summary")
    if cached is not None:
        return cached
    outline = cache.view(key, stamp, "outline", lambda: _view_text("outline", item.name, text, tree))  # type: ignore[arg-type]
    try:
        summary = summarizer(item.name, text, item.is_python, outline).strip()
    except Exception:  # the heuristic summary stands in; the summarizer reports its own failures
        return None
    if not summary:
        return None
    return cache.view(key, stamp, "provider-summary", lambda: summary)
