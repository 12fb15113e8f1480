"""A modal that asks before a destructive click (delete a profile, delete a rule).

The panel keeps what waits for confirmation in its own state and calls :func:`confirm_modal`
every frame: the modal opens while something is pending and answers once.
"""

from __future__ import annotations

from imgui_bundle import imgui

__all__ = ["confirm_modal"]


def confirm_modal(title: str, pending: bool, question: str, note: str, ok: str = "Delete") -> bool | None:
    """True when confirmed (``<ok>##confirm``), False when cancelled (``Cancel##confirm`` or
    Escape), None while nothing is pending or no answer was given this frame."""
    if pending and not imgui.is_popup_open(title):
        imgui.open_popup(title)
    opened, _ = imgui.begin_popup_modal(title, None, imgui.WindowFlags_.always_auto_resize)
    if not opened:
        return None
    answer: bool | None = None
    if pending:
        imgui.text(question)
        imgui.text_disabled(note)
        if imgui.button(f"{ok}##confirm"):
            answer = True
        imgui.same_line()
        if imgui.button("Cancel##confirm") or imgui.is_key_pressed(imgui.Key.escape, False):
            answer = False
    if answer is not None or not pending:
        imgui.close_current_popup()
    imgui.end_popup()
    return answer
