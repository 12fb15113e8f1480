"""Context refresh: after a tool round, the files of the context that changed, shown as the
model was shown them.

The AI client calls :meth:`ContextRefresher.check` after every tool round. Each file of
the compiled context is re-read when its ``(mtime, size)`` stamp changed, and rendered
again in the view aggregation gave it (``effective_mode``, the user's mask patterns and
slices), under the same relative name. What the model gets for a changed file:

- a text view (full, masked, custom) of at most :data:`FULL_VIEW_LINES` lines: the new
  view whole; a longer one: a unified diff of the old view against the new one (both
  rendered, so masked lines stay masked on both sides);
- a skeleton, outline or summary: the new view whole;
- a file listed by name only (``none``, an image, a binary or refused file): one line
  saying it changed, never its bytes;
- a change that the view does not show (a masked line, a line outside the slices): nothing.

Files aggregation omitted to fit the budget were never shown, so their changes are not
reported either.
"""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Sequence

from manual_slop.ai.transcript import REFRESH_MARKER
from manual_slop.context.file_cache import FileCache
from manual_slop.context.items import FileItem, FileKind, ViewMode
from manual_slop.context.views import code_span, fenced, render_block

__all__ = ["FULL_VIEW_LINES", "ContextRefresher"]

FULL_VIEW_LINES = 200
_WHOLE_VIEWS = frozenset({ViewMode.SKELETON, ViewMode.OUTLINE, ViewMode.SUMMARY})
_TAGS = ("updated",)


class ContextRefresher:
    """The changed files of one request's context, in the views the model was given."""

    def __init__(self, items: Sequence[FileItem], masks: Sequence[re.Pattern[str]], cache: FileCache) -> None:
        self._items = [item for item in items if item.effective_mode is not None or _is_listed(item)]
        self._masks = tuple(masks)
        self._cache = cache

    def paths(self) -> list[str]:
        """The files' names as the model knows them (relative to the base dir)."""
        return [item.name for item in self._items]

    def check(self) -> str:
        """The ``[SYSTEM: FILES UPDATED]`` block for files changed since the last check ('' if none)."""
        sections: list[str] = []
        for item in self._items:
            before = copy.copy(item)
            if not item.refresh():
                continue
            section = self._describe(before, item)
            if section:
                sections.append(section)
        if not sections:
            return ""
        return f"{REFRESH_MARKER}\n\n" + "\n".join(sections)

    def _describe(self, before: FileItem, item: FileItem) -> str:
        mode = item.effective_mode or ViewMode.NONE
        name = code_span(item.name)
        if item.kind is FileKind.MISSING:
            return f"### {name} (deleted or unreadable: {item.error})\n"
        if item.kind is not FileKind.TEXT or mode is ViewMode.NONE or before.kind is not FileKind.TEXT:
            if item.kind is FileKind.TEXT and before.kind is FileKind.TEXT and before.content == item.content:
                return ""
            return f"### {name} (changed on disk; listed by name only, its content is not shown)\n"
        old = self._render(before, mode)
        new = self._render(item, mode)
        if old == new:
            return ""  # the change is in lines this view does not show
        if mode in _WHOLE_VIEWS or new.count("\n") <= FULL_VIEW_LINES:
            return new
        diff = difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{item.name}", f"b/{item.name}"
        )
        return f"### {name} ({mode.value}, unified diff of the view)\n\n" + fenced("".join(diff), "diff")

    def _render(self, item: FileItem, mode: ViewMode) -> str:
        return render_block(item, mode, cache=self._cache, masks=self._masks, tags=_TAGS)


def _is_listed(item: FileItem) -> bool:
    """Screenshots and other items aggregation did not give a mode but did list."""
    return item.kind in (FileKind.IMAGE, FileKind.MISSING, FileKind.BINARY, FileKind.REFUSED)
