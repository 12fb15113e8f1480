"""Projects: the open project file, its folders and system prompt; open, create, switch."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from imgui_bundle import imgui

from manual_slop.gui.form import form, form_row
from manual_slop.gui.inputs import text_field
from manual_slop.gui.widgets import COLORS, elide, text_wrapped_colored

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["render_projects"]

LABELS = ["Name", "Base dir", "Output dir"]


def render_projects(ui: Ui) -> None:
    ctrl = ui.ctrl
    imgui.text_disabled("Project file")
    imgui.text_wrapped(str(ctrl.paths.project_file))
    with form("##project_form", LABELS) as shown:
        if shown:
            form_row("Name")
            text_field(ui, "##project_name", "project_name", commit_on_change=False)
            form_row("Base dir", "the folder file paths are relative to")
            text_field(ui, "##files_base_dir", "files_base_dir", commit_on_change=False)
            form_row("Output dir", "where MD Only writes the compiled context")
            text_field(ui, "##output_dir", "output_dir", commit_on_change=False)
    # Resolving touches the file system: only when the project or base dir changes.
    key = (str(ctrl.paths.project_file), ui.state.files_base_dir)
    if ui.gui.base_dir_cache[0] != key:
        ui.gui.base_dir_cache = (key, str(ctrl.base_dir()))
    text_wrapped_colored(COLORS["muted"], f"base dir = {ui.gui.base_dir_cache[1]}")
    imgui.text("System prompt")
    text_field(ui, "##system_prompt", "system_prompt", multiline=True, height_lines=6)
    if imgui.button("Save"):
        ui.act.click("btn_save")
    imgui.same_line()
    if imgui.button("Reload from disk"):
        ui.act.click("btn_reload_project")

    imgui.separator_text("Open or create")
    imgui.set_next_item_width(-110)
    _, ui.gui.project_path_input = imgui.input_text_with_hint(
        "##project_path", "path/to/project.toml", ui.gui.project_path_input
    )
    imgui.same_line()
    if imgui.button("Open") and ui.act.click("btn_open_project", ui.gui.project_path_input):
        ui.gui.project_path_input = ""
    imgui.same_line()
    if imgui.button("New") and ui.act.click("btn_new_project", ui.gui.project_path_input):
        ui.gui.project_path_input = ""
    recent = ctrl.recent_projects()
    if recent:
        imgui.text_disabled("Recent")
        for index, path in enumerate(recent):
            shown_path = elide(path, imgui.get_content_region_avail().x, keep_end=True)
            if imgui.selectable(f"{shown_path}##recent{index}", False)[0]:
                ui.act.click("btn_open_project", _resolve(ui, path))
            if shown_path != path and imgui.is_item_hovered():
                imgui.set_item_tooltip(path)


def _resolve(ui: Ui, shown: str) -> str:
    path = Path(shown)
    return str(path if path.is_absolute() else ui.ctrl.paths.config_file.parent / path)
