"""A read-only view of long text: split into lines once per text, only visible lines drawn."""

from __future__ import annotations

from dataclasses import dataclass, field

from imgui_bundle import ImVec2, imgui

from manual_slop.gui.widgets import clipped_rows

__all__ = ["LongText", "render_long_text"]


@dataclass(slots=True)
class LongText:
    """The lines of the text last shown (recomputed only when the text object changes)."""

    source_id: int = 0
    source_len: int = -1
    lines: list[str] = field(default_factory=list)

    def update(self, text: str, source: object | None = None) -> bool:
        """Split ``text`` into lines unless it is the one split last (same ``source`` object —
        the text itself by default — and length); True when it was split now."""
        key = id(text if source is None else source)
        if key == self.source_id and len(text) == self.source_len:
            return False
        self.source_id, self.source_len = key, len(text)
        self.lines = text.splitlines() or [""]
        return True


def render_long_text(view_id: str, text: str, cache: LongText, size: ImVec2 | None = None) -> None:
    """Draw ``text`` in a scrolling child window; copying a megabyte per frame is avoided."""
    cache.update(text)
    if imgui.begin_child(view_id, size or ImVec2(0, 0), imgui.ChildFlags_.borders):
        lines = cache.lines
        clipped_rows(len(lines), lambda i: imgui.text_unformatted(lines[i]))
    imgui.end_child()
