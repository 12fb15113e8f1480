"""Command palette (Ctrl+Shift+P): fuzzy search over every action and panel toggle."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from imgui_bundle import ImVec2, imgui

from manual_slop.gui.widgets import rank

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["PALETTE_TITLE", "Command", "render_palette"]

PALETTE_TITLE = "Command Palette"
MAX_SHOWN = 12


@dataclass(frozen=True, slots=True)
class Command:
    label: str
    detail: str
    run: Callable[[], object]


def render_palette(ui: Ui, list_commands: Callable[[], list[Command]]) -> None:
    """Open on Ctrl+Shift+P; Enter runs the highlighted command, arrows move, Escape closes.

    ``list_commands`` is only called while the palette is open, not on every frame."""
    gui = ui.gui
    if imgui.is_key_chord_pressed(imgui.Key.mod_ctrl | imgui.Key.mod_shift | imgui.Key.p):
        gui.palette_open = True
        gui.palette_query = ""
        gui.palette_selected = 0
    if gui.palette_open and not imgui.is_popup_open(PALETTE_TITLE):
        imgui.open_popup(PALETTE_TITLE)
    viewport = imgui.get_main_viewport()
    imgui.set_next_window_pos(
        ImVec2(viewport.get_center().x, viewport.pos.y + viewport.size.y * 0.15),
        imgui.Cond_.always,
        ImVec2(0.5, 0),
    )
    imgui.set_next_window_size(ImVec2(min(640.0, viewport.size.x * 0.8), 0))
    opened, _ = imgui.begin_popup_modal(PALETTE_TITLE, None, imgui.WindowFlags_.always_auto_resize)
    if not opened:
        return
    commands = list_commands()
    if imgui.is_window_appearing():
        imgui.set_keyboard_focus_here()
    imgui.set_next_item_width(-1)
    changed, gui.palette_query = imgui.input_text_with_hint(
        "##palette_query", "type a command", gui.palette_query
    )
    if changed:
        gui.palette_selected = 0
    order = rank(gui.palette_query, [f"{c.label} {c.detail}" for c in commands])[:MAX_SHOWN]
    if imgui.is_key_pressed(imgui.Key.down_arrow):
        gui.palette_selected = min(gui.palette_selected + 1, max(0, len(order) - 1))
    if imgui.is_key_pressed(imgui.Key.up_arrow):
        gui.palette_selected = max(gui.palette_selected - 1, 0)
    chosen: Command | None = None
    for row, index in enumerate(order):
        command = commands[index]
        clicked, _ = imgui.selectable(f"{command.label}##cmd{index}", row == gui.palette_selected)
        if command.detail:
            imgui.same_line()
            imgui.text_disabled(command.detail)
        if clicked:
            chosen = command
    if not order:
        imgui.text_disabled("no matching command")
    if imgui.is_key_pressed(imgui.Key.enter, False) and order:
        chosen = commands[order[min(gui.palette_selected, len(order) - 1)]]
    if chosen is not None or imgui.is_key_pressed(imgui.Key.escape, False):
        gui.palette_open = False
        imgui.close_current_popup()
    imgui.end_popup()
    if chosen is not None:
        chosen.run()
