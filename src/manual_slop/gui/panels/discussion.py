"""Discussion: discussions and their takes (tabs), entries with role, edit/read, insert,
delete, move, collapse and branch, undo/redo, Update Commit and Compress.

Every change is a context action (``btn_*_entry``, ``btn_branch_take`` …) so it is
undoable and reachable over the Hook API; the panel only keeps what is being typed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from imgui_bundle import ImVec2, imgui, imgui_md

from manual_slop.gui.widgets import COLORS, spinner_text

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["render_discussion"]

ROLE_COLORS = {"User": COLORS["info"], "AI": COLORS["ok"], "System": COLORS["warn"]}


def render_discussion(ui: Ui) -> None:
    _header(ui)
    _takes(ui)
    _toolbar(ui)
    footer = imgui.get_frame_height_with_spacing() * 1.6
    if imgui.begin_child("##entries", ImVec2(0, -footer)):
        # Entries wrap to different heights, so no clipper: discussions are short enough.
        entries = ui.state.discussion_entries()
        for index, entry in enumerate(entries):
            imgui.push_id(index)
            _entry(ui, index, entry, len(entries))
            imgui.pop_id()
    imgui.end_child()
    _new_entry(ui)


def _header(ui: Ui) -> None:
    state, gui = ui.state, ui.gui
    active = state.active_discussion
    imgui.set_next_item_width(180)
    if imgui.begin_combo("##discussion", active):
        for name in sorted(n for n in state.discussions if "_take_" not in n):
            if imgui.selectable(name, name == active)[0]:
                ui.act.select("discussions", name)
        imgui.end_combo()
    imgui.same_line()
    imgui.set_next_item_width(140)
    _, gui.new_discussion_name = imgui.input_text_with_hint("##new_disc", "name", gui.new_discussion_name)
    imgui.same_line()
    if imgui.button("New") and ui.act.click("btn_new_discussion", gui.new_discussion_name or None):
        gui.new_discussion_name = ""
    imgui.same_line()
    if (
        imgui.button("Rename")
        and gui.new_discussion_name.strip()
        and ui.act.click("btn_rename_discussion", {"new_name": gui.new_discussion_name.strip()})
    ):
        gui.new_discussion_name = ""
    imgui.same_line()
    if imgui.button("Delete"):
        ui.act.click("btn_delete_discussion", active)


def _takes(ui: Ui) -> None:
    tabs = ui.ctrl.tab_bars.spec("discussion_takes").items()
    if len(tabs) < 2:
        return
    active = ui.state.active_discussion
    if imgui.begin_tab_bar("##takes"):
        for name in tabs:
            flags = imgui.TabItemFlags_.set_selected if name == active and ui.gui.takes_shown != active else 0
            opened, _ = imgui.begin_tab_item(f"{name}###take_{name}", None, flags)
            if opened:
                if name != active and ui.gui.takes_shown == active:
                    ui.ctrl.tab_bars.select("discussion_takes", name)
                imgui.end_tab_item()
        imgui.end_tab_bar()
    ui.gui.takes_shown = ui.state.active_discussion


def _toolbar(ui: Ui) -> None:
    ctrl = ui.ctrl
    history: dict[str, Any] = ctrl.fields.get("undo_history") or {}
    undo = (history.get("undo") or [None])[0]
    redo = (history.get("redo") or [None])[0]
    if imgui.button("Undo"):
        ui.act.click("btn_undo")
    if undo and imgui.is_item_hovered():
        imgui.set_tooltip(f"undo: {undo}")
    imgui.same_line()
    if imgui.button("Redo"):
        ui.act.click("btn_redo")
    if redo and imgui.is_item_hovered():
        imgui.set_tooltip(f"redo: {redo}")
    imgui.same_line()
    if imgui.button("Update Commit"):
        ui.act.click("btn_update_commit")
    imgui.same_line()
    if imgui.button("Compress"):
        ui.act.click("btn_compress_discussion")
    imgui.same_line()
    if imgui.button("Branch take"):
        ui.act.click("btn_branch_take", {})
    if "_take_" in ui.state.active_discussion:
        imgui.same_line()
        if imgui.button("Promote take"):
            ui.act.click("btn_promote_take", ui.state.active_discussion)
    imgui.same_line()
    if imgui.button("Collapse all"):
        ui.act.click("btn_collapse_all", True)
    imgui.same_line()
    if imgui.button("Expand all"):
        ui.act.click("btn_collapse_all", False)
    commit = str(ctrl.fields.get("discussion_commit") or "")
    status = str(ctrl.fields.get("discussion_status") or "idle")
    imgui.text_disabled(f"commit {commit[:12] or '(none)'}")
    if status != "idle":
        imgui.same_line()
        imgui.text_colored(COLORS["in_progress"], f"{spinner_text()} {status}")


def _entry(ui: Ui, index: int, entry: dict[str, Any], count: int) -> None:
    roles = ui.state.discussion_roles or ["User"]
    role = str(entry.get("role", "?"))
    collapsed = bool(entry.get("collapsed"))
    imgui.set_next_item_width(110)
    imgui.push_style_color(imgui.Col_.text, ROLE_COLORS.get(role, COLORS["muted"]))
    if imgui.begin_combo("##role", role):
        imgui.pop_style_color()
        for option in roles:
            if imgui.selectable(option, option == role)[0] and option != role:
                ui.act.click("btn_set_entry_role", {"index": index, "role": option})
        imgui.end_combo()
    else:
        imgui.pop_style_color()
    imgui.same_line()
    imgui.text_disabled(str(entry.get("ts", "")))
    editing = ui.gui.discussion_edit.get(index, False)
    for label, action, data, enabled in (
        ("Read" if editing else "Edit", None, None, True),
        ("+" if collapsed else "-", "btn_collapse_entry", {"index": index, "collapsed": not collapsed}, True),
        ("Insert", "btn_insert_entry", {"index": index, "content": ""}, True),
        ("Up", "btn_move_entry", {"index": index, "to": index - 1}, index > 0),
        ("Down", "btn_move_entry", {"index": index, "to": index + 1}, index < count - 1),
        ("Branch", "btn_branch_take", {"index": index}, True),
        ("Delete", "btn_delete_entry", {"index": index}, True),
    ):
        imgui.same_line()
        imgui.begin_disabled(not enabled)
        if imgui.small_button(label):
            if action is None:
                ui.gui.discussion_edit[index] = not editing
                ui.gui.entry_buffers.pop(index, None)
            else:
                ui.act.click(action, data)
        imgui.end_disabled()
    content = str(entry.get("content", ""))
    if editing:
        buffer = ui.gui.entry_buffers.setdefault(index, content)
        height = imgui.get_text_line_height_with_spacing() * min(12, 2 + buffer.count("\n"))
        _, ui.gui.entry_buffers[index] = imgui.input_text_multiline("##edit", buffer, ImVec2(-1, height))
        if imgui.button("Save") and ui.act.click(
            "btn_edit_entry", {"index": index, "content": ui.gui.entry_buffers[index]}
        ):
            ui.gui.discussion_edit[index] = False
            ui.gui.entry_buffers.pop(index, None)
    elif collapsed:
        first = content.splitlines()[0] if content else ""
        imgui.text_disabled(first[:120] + (" …" if len(content) > len(first) or len(first) > 120 else ""))
    elif content:
        imgui_md.render(content)
    images = entry.get("images")
    if images and not editing and not collapsed:  # the screenshots its send read
        ui.gui.thumbnails.draw([str(n) for n in images], ui.state.image_thumbnails, height=48.0)
    imgui.separator()


def _new_entry(ui: Ui) -> None:
    gui = ui.gui
    roles = ui.state.discussion_roles or ["User"]
    if gui.new_entry_role not in roles:
        gui.new_entry_role = roles[0]
    imgui.set_next_item_width(110)
    if imgui.begin_combo("##new_role", gui.new_entry_role):
        for role in roles:
            if imgui.selectable(role, role == gui.new_entry_role)[0]:
                gui.new_entry_role = role
        imgui.end_combo()
    imgui.same_line()
    imgui.set_next_item_width(-60)
    _, gui.new_entry_text = imgui.input_text_with_hint("##entry_text", "add an entry", gui.new_entry_text)
    imgui.same_line()
    if (
        imgui.button("Add")
        and gui.new_entry_text.strip()
        and ui.act.click("btn_add_entry", {"content": gui.new_entry_text, "role": gui.new_entry_role})
    ):
        gui.new_entry_text = ""
