"""File View: one project file read-only with line numbers, the requested line range marked
and scrolled into view when the file is opened (``btn_open_file``; see ``file_view``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from imgui_bundle import ImVec2, imgui

from manual_slop.gui.widgets import COLORS, clipped_rows, spinner_text, text_elided

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["render_file_view"]


def render_file_view(ui: Ui) -> None:
    view = ui.state.file_view
    if not view:
        imgui.text_disabled("no file open: a search result in the Memory panel opens one here")
        return
    line, end = int(view.get("line", 1)), int(view.get("end_line", 1))
    text_elided(f"{view.get('path', '')}  lines {line}-{end}", keep_end=True)
    status = view.get("status")
    if status == "loading":
        imgui.text_colored(COLORS["in_progress"], f"{spinner_text()} reading...")
        return
    if status == "error":
        imgui.text_colored(COLORS["error"], str(view.get("error")))
        return
    if view.get("truncated"):
        imgui.text_colored(COLORS["warn"], "the file is large: only its beginning is shown")
    cache = ui.gui.file_view_text
    fresh = id(view) != cache.source_id  # a newly opened file (each open or load is a new view)
    cache.update(str(view.get("text", "")), view)
    lines = cache.lines
    digits = len(str(len(lines)))
    if imgui.begin_child(
        "##file_text", ImVec2(0, 0), imgui.ChildFlags_.borders, imgui.WindowFlags_.horizontal_scrollbar
    ):
        if fresh:  # a newly opened file: its range a few lines below the top
            imgui.set_scroll_y(max(0, line - 4) * imgui.get_text_line_height_with_spacing())

        def row(index: int) -> None:
            number = index + 1
            marked = line <= number <= end
            imgui.text_colored(COLORS["info"] if marked else COLORS["muted"], f"{number:>{digits}}")
            imgui.same_line()
            if marked:
                imgui.text_colored(COLORS["ok"], lines[index])
            else:
                imgui.text_unformatted(lines[index])

        clipped_rows(len(lines), row)
    imgui.end_child()
