"""Projects: the open project file, its folders and system prompt; open, create, switch."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from imgui_bundle import imgui

from manual_slop.gui.inputs import text_field

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["render_projects"]


def render_projects(ui: Ui) -> None:
    imgui.push_item_width(imgui.get_content_region_avail().x * 0.65)
    try:
        _render(ui)
    finally:
        imgui.pop_item_width()


def _render(ui: Ui) -> None:
    ctrl = ui.ctrl
    imgui.text_disabled("Project file")
    imgui.text_wrapped(str(ctrl.paths.project_file))
    text_field(ui, "Name", "project_name", commit_on_change=False)
    text_field(ui, "Base dir", "files_base_dir", commit_on_change=False)
    # Resolving touches the file system: only when the project or base dir changes.
    key = (str(ctrl.paths.project_file), ui.state.files_base_dir)
    if ui.gui.base_dir_cache[0] != key:
        ui.gui.base_dir_cache = (key, str(ctrl.base_dir()))
    imgui.text_disabled(f"= {ui.gui.base_dir_cache[1]}")
    text_field(ui, "Output dir", "output_dir", commit_on_change=False)
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
            if imgui.selectable(f"{path}##recent{index}", False)[0]:
                ui.act.click("btn_open_project", _resolve(ui, path))


def _resolve(ui: Ui, shown: str) -> str:
    path = Path(shown)
    return str(path if path.is_absolute() else ui.ctrl.paths.config_file.parent / path)
