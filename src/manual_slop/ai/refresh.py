"""Context refresh: after each tool round, tell the model which tracked files changed.

The files the context was built from (``file_items``) are remembered with their
modification time and content when a send starts. After every tool round their mtimes
are checked again; each changed file is reported in full when it has at most
:data:`FULL_CONTENT_LINES` lines, otherwise as a unified diff against what the model saw.
The report is appended to the round's last tool output as a ``[SYSTEM: FILES UPDATED]``
block; older blocks are dropped from history by
:meth:`~manual_slop.ai.transcript.Conversation.compact`.

``file_items`` entries may be paths, mappings with ``path`` (and optionally ``content``,
``mtime``) or objects with those attributes.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from manual_slop.ai.transcript import REFRESH_MARKER

__all__ = ["FULL_CONTENT_LINES", "FileRefresher", "TrackedFile"]

FULL_CONTENT_LINES = 200


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
    return TrackedFile(resolved, str(raw), content if isinstance(content, str) else None, mtime)


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
