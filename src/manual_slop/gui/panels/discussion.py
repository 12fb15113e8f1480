"""Discussion: the active discussion's entries, the discussion list, adding entries."""

from __future__ import annotations

from typing import TYPE_CHECKING

from imgui_bundle import ImVec2, imgui

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["render_discussion"]


def render_discussion(ui: Ui) -> None:
    state, gui = ui.state, ui.gui
    imgui.set_next_item_width(200)
    if imgui.begin_combo("Discussion", state.active_discussion):
        for name in sorted(state.discussions):
            if imgui.selectable(name, name == state.active_discussion)[0]:
                ui.act.select("discussions", name)
        imgui.end_combo()
    imgui.same_line()
    imgui.set_next_item_width(150)
    _, gui.new_discussion_name = imgui.input_text_with_hint("##new_disc", "new name", gui.new_discussion_name)
    imgui.same_line()
    if imgui.button("New discussion") and ui.act.click("btn_new_discussion", gui.new_discussion_name or None):
        gui.new_discussion_name = ""

    entries = state.discussion_entries()
    footer = imgui.get_frame_height_with_spacing() * 4
    if imgui.begin_child("##entries", ImVec2(0, -footer)):
        # Entries wrap to different heights, so no clipper: discussions are short enough.
        for entry in entries:
            imgui.text_colored(imgui.ImVec4(0.55, 0.75, 1.0, 1.0), f"{entry.get('role', '?')}")
            imgui.same_line()
            imgui.text_disabled(str(entry.get("ts", "")))
            imgui.text_wrapped(str(entry.get("content", "")))
            imgui.separator()
    imgui.end_child()

    roles = state.discussion_roles or ["User"]
    if gui.new_entry_role not in roles:
        gui.new_entry_role = roles[0]
    imgui.set_next_item_width(120)
    if imgui.begin_combo("##role", gui.new_entry_role):
        for role in roles:
            if imgui.selectable(role, role == gui.new_entry_role)[0]:
                gui.new_entry_role = role
        imgui.end_combo()
    imgui.same_line()
    imgui.set_next_item_width(-70)
    _, gui.new_entry_text = imgui.input_text_with_hint("##entry_text", "add an entry", gui.new_entry_text)
    imgui.same_line()
    if imgui.button("Add") and gui.new_entry_text.strip():
        ui.ctrl.add_history_entry(gui.new_entry_role, gui.new_entry_text)
        gui.new_entry_text = ""
