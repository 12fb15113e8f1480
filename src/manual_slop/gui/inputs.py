"""Inputs bound to registered fields: what the user types goes through ``Actions.set``.

Free text is applied on every change. Values that are only valid once complete (a URL,
a number typed digit by digit) are kept in a buffer while the widget is active and
applied when the user leaves it, so a half-typed value never produces an error toast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from imgui_bundle import ImVec2, imgui

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["checkbox_field", "combo_field", "text_field"]


def text_field(
    ui: Ui,
    label: str,
    field: str,
    *,
    commit_on_change: bool = True,
    multiline: bool = False,
    height_lines: float = 4.0,
    hint: str = "",
) -> None:
    """A text box showing ``field``; edits are applied through the field registry."""
    buffers = ui.gui.edit_buffers
    current = ui.ctrl.fields.get(field)
    shown = buffers.get(field, "" if current is None else str(current))
    if multiline:
        size = ImVec2(-1, imgui.get_text_line_height_with_spacing() * height_lines)
        changed, value = imgui.input_text_multiline(label, shown, size)
    elif hint:
        changed, value = imgui.input_text_with_hint(label, hint, shown)
    else:
        changed, value = imgui.input_text(label, shown)
    if commit_on_change:
        if changed:
            ui.act.set(field, value)
        return
    if imgui.is_item_active():
        buffers[field] = value
    elif imgui.is_item_deactivated_after_edit() or changed:
        buffers.pop(field, None)
        if value != current:
            ui.act.set(field, value)
    else:
        buffers.pop(field, None)


def combo_field(
    ui: Ui, label: str, field: str, options: list[str], colors: dict[str, object] | None = None
) -> None:
    """A combo over ``options`` bound to ``field``."""
    current = str(ui.ctrl.fields.get(field))
    if imgui.begin_combo(label, current):
        for option in options:
            selected = option == current
            clicked, _ = imgui.selectable(option, selected)
            if clicked and not selected:
                ui.act.set(field, option)
            if selected:
                imgui.set_item_default_focus()
        imgui.end_combo()


def checkbox_field(ui: Ui, label: str, field: str) -> None:
    changed, value = imgui.checkbox(label, bool(ui.ctrl.fields.get(field)))
    if changed:
        ui.act.set(field, value)
