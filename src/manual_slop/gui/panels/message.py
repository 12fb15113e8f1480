"""Message: the box the user types into, and the buttons that send it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from imgui_bundle import ImVec2, imgui

from manual_slop.gui.widgets import spinner_text, status_color

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["render_message"]


def render_message(ui: Ui) -> None:
    state = ui.state
    send_chord = imgui.Key.mod_ctrl | imgui.Key.enter
    if imgui.button("Gen + Send") or (
        imgui.is_window_focused(imgui.FocusedFlags_.child_windows) and imgui.is_key_chord_pressed(send_chord)
    ):
        ui.act.click("btn_gen_send")
    imgui.same_line()
    if imgui.button("MD Only"):
        ui.act.click("btn_md_only")
    imgui.same_line()
    if imgui.button("Reset"):
        ui.act.click("btn_reset_session")
    imgui.same_line()
    busy = state.ai_status.endswith("...")
    imgui.text_colored(
        status_color(state.ai_status), f"{spinner_text()} {state.ai_status}" if busy else state.ai_status
    )
    imgui.same_line()
    imgui.text_disabled("(Ctrl+Enter sends)")
    changed, value = imgui.input_text_multiline("##message", state.ai_input, ImVec2(-1, -1))
    if changed:
        ui.act.set("ai_input", value)
