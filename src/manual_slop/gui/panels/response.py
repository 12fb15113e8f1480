"""Response: the last answer, rendered as markdown."""

from __future__ import annotations

from typing import TYPE_CHECKING

from imgui_bundle import imgui, imgui_md

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["render_response"]


def render_response(ui: Ui) -> None:
    text = ui.state.ai_response
    if imgui.button("Copy"):
        imgui.set_clipboard_text(text)
    imgui.same_line()
    imgui.text_disabled(f"{len(text):,} chars")
    imgui.separator()
    if imgui.begin_child("##response_body"):
        if text:
            imgui_md.render(text)
        else:
            imgui.text_disabled("No response yet.")
    imgui.end_child()
