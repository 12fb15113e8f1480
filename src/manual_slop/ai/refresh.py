"""Context refresh: after each tool round, tell the model which tracked files changed.

A :class:`Refresher` is asked after every tool round; its report is appended to the
round's last tool output as a ``[SYSTEM: FILES UPDATED]`` block, and older blocks are
dropped from history by :meth:`~manual_slop.ai.transcript.Conversation.compact`.

The app's sends use the context's own refresher
(:class:`manual_slop.context.refresh.ContextRefresher`), which shows a changed file in
the view the model was given (mode, masks, slices). :class:`FileRefresher` is the plain
one for callers that pass bare ``file_items``: paths, mappings with ``path`` (and
optionally ``content``, ``mtime``) or objects with those attributes. It reports each
changed text file in full when it has at most :data:`FULL_CONTENT_LINES` lines, otherwise
as a unified diff against what the model saw, under its name relative to the base dir;
images and binary files are reported by name only, never as text.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from manual_slop.ai.transcript import REFRESH_MARKER

__all__ = ["FULL_CONTENT_LINES", "FileRefresher", "Refresher", "TrackedFile"]

FULL_CONTENT_LINES = 200
_BINARY_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".ico", ".pdf", ".zip"})


class Refresher(Protocol):
    """What the tool loop asks after each round."""

    def paths(self) -> list[str]:
        """The files, as the model knows their names."""
        ...

    def check(self) -> str:
        """The ``[SYSTEM: FILES UPDATED]`` block for what changed since the last check, or ``''``."""
        ...


@dataclass(slots=True)
class TrackedFile:
    path: Path
    shown: str  # the path as the model knows it
    content: str | None
    mtime: float | None


class FileRefresher:
    """Remembers tracked files and reports the ones that changed since they were last seen."""

    def __init__(self, file_items: Iterable[Any] | None, base_dir: str | Path = ".") -> None:
        self.files: list[TrackedFile] = []
        if not file_items:
            return
        base = Path(base_dir)
        for item in file_items:
            tracked = _tracked(item, base)
            if tracked is not None:
                self.files.append(tracked)

    def paths(self) -> list[str]:
        return [f.shown for f in self.files]

    def check(self) -> str:
        """The ``[SYSTEM: FILES UPDATED]`` block for files changed since the last check ('' if none)."""
        sections: list[str] = []
        for tracked in self.files:
            mtime = _mtime(tracked.path)
            if mtime == tracked.mtime:
                continue
            old = tracked.content
            new = _read(tracked.path)
            tracked.mtime, tracked.content = mtime, new
            if new is None:
                sections.append(f"### {tracked.shown}\n(deleted or unreadable)")
            elif new == old:
                continue
            elif _is_binary(tracked.path, new):
                sections.append(f"### {tracked.shown}\n(a binary file changed; its content is not shown)")
            else:
                sections.append(_describe_change(tracked.shown, old, new))
        if not sections:
            return ""
        return f"{REFRESH_MARKER}\n\n" + "\n\n".join(sections)


def _describe_change(shown: str, old: str | None, new: str) -> str:
    lines = new.splitlines(keepends=True)
    if len(lines) <= FULL_CONTENT_LINES or old is None:
        return f"### {shown} (full content)\n```\n{new}{'' if new.endswith(chr(10)) else chr(10)}```"
    diff = difflib.unified_diff(old.splitlines(keepends=True), lines, f"a/{shown}", f"b/{shown}")
    return f"### {shown} (unified diff)\n```diff\n{''.join(diff)}```"


def _tracked(item: Any, base: Path) -> TrackedFile | None:
    if isinstance(item, str | Path):
        raw, content, mtime = item, None, None
    elif isinstance(item, Mapping):
        raw, content, mtime = item.get("path"), item.get("content"), item.get("mtime")
    else:
        raw, content, mtime = (
            getattr(item, "path", None),
            getattr(item, "content", None),
            getattr(item, "mtime", None),
        )
    if not raw:
        return None
    path = Path(raw)
    resolved = path if path.is_absolute() else base / path
    if mtime is None:
        mtime = _mtime(resolved)
    if content is None:
        content = _read(resolved)
    try:
        shown = resolved.resolve().relative_to(base.resolve()).as_posix()
    except (ValueError, OSError):
        shown = str(raw)
    return TrackedFile(resolved, shown, content if isinstance(content, str) else None, mtime)


def _is_binary(path: Path, text: str) -> bool:
    return path.suffix.lower() in _BINARY_SUFFIXES or "\x00" in text[:8192]


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
