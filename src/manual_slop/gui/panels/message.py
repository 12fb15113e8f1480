"""Message: the box the user types into, and the buttons that send it or stop it.

Gen + Send (Ctrl+Enter) is disabled while a request runs; Stop beside it is enabled
only then, and cancels the running request (``btn_cancel_request``). The screenshots the
send attaches show as thumbnails above the box (as the last compile found them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from imgui_bundle import ImVec2, imgui

from manual_slop.gui.widgets import COLORS, button, spinner_text, status_color

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["render_message"]


def _takes_images(provider: str) -> bool:
    from manual_slop.ai.providers import provider_class

    try:
        return provider_class(provider).image_support is not None
    except Exception:  # an unknown provider: its own error shows where it is chosen
        return False


def render_message(ui: Ui) -> None:
    state = ui.state
    request_id = state.active_request_id
    running = request_id is not None
    send_chord = imgui.Key.mod_ctrl | imgui.Key.enter
    sent = button("Gen + Send", not running, "a request is running; Stop it first")
    if sent or (
        not running
        and imgui.is_window_focused(imgui.FocusedFlags_.child_windows)
        and imgui.is_key_chord_pressed(send_chord)
    ):
        ui.act.click("btn_gen_send")
    imgui.same_line()
    stopping = running and ui.ctrl.requests.state(request_id) == "cancelling"
    if running and not stopping:
        imgui.push_style_color(imgui.Col_.button, COLORS["killed"] * 0.7)
    why_not = "stopping…" if stopping else "no request is running"
    stop = button("Stop", running and not stopping, why_not)
    if running and not stopping:
        imgui.pop_style_color()
    if stop:
        ui.act.click("btn_cancel_request")
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
    if state.image_thumbnails:  # the screenshots the next send attaches (as last compiled)
        imgui.text_disabled("screenshots:")
        imgui.same_line()
        ui.gui.thumbnails.draw(list(state.image_thumbnails), state.image_thumbnails, height=40.0)
        if not _takes_images(state.current_provider):
            imgui.same_line()
            imgui.text_colored(COLORS["in_progress"], f"{state.current_provider} takes no images")
    changed, value = imgui.input_text_multiline(
        "##message", state.ai_input, ImVec2(-1, -1), imgui.InputTextFlags_.word_wrap
    )
    if changed:
        ui.act.set("ai_input", value)
