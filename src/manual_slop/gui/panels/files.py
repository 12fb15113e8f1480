"""Files & Media: tracked files and globs, excludes, per-file view modes and token
estimates, screenshots."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from imgui_bundle import imgui

from manual_slop.gui.widgets import COLORS, clipped_rows, text_elided, text_entry, text_wrapped_colored

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["VIEW_MODES", "render_files"]

VIEW_MODES = ["full", "summary", "skeleton", "outline", "masked", "custom", "none"]


def _string_list(ui: Ui, title: str, field: str, key: str, hint: str) -> None:
    """An editable list of strings bound to a list field (add / remove)."""
    items = list(ui.ctrl.fields.get(field))
    imgui.separator_text(f"{title} ({len(items)})")
    for index, item in enumerate(items):
        imgui.push_id(f"{field}{index}")
        if imgui.small_button("x"):
            ui.act.set(field, items[:index] + items[index + 1 :])
        imgui.same_line()
        text_elided(item, keep_end=True)
        imgui.pop_id()
    text_entry(ui.gui.edit_buffers, key, hint, f"Add##{key}", lambda text: ui.act.set(field, [*items, text]))


def render_files(ui: Ui) -> None:
    text_wrapped_colored(COLORS["muted"], f"base dir: {ui.gui.base_dir_cache[1] or ui.state.files_base_dir}")
    _string_list(ui, "Tracked files and globs", "project_files", "add_path", "src/**/*.py or a file")
    _string_list(ui, "Excluded", "files_exclude", "add_exclude", "**/generated/**")
    _resolved(ui)
    _string_list(ui, "Screenshots", "screenshots", "add_shot", "images/screen.png")


def _resolved(ui: Ui) -> None:
    files: list[dict[str, Any]] = ui.state.context_files  # read on the main thread: no copy per frame
    imgui.separator_text(f"Files sent ({len(files)})")
    if imgui.button("Refresh"):
        ui.act.click("btn_refresh_context")
    imgui.same_line()
    imgui.text_disabled(ui.state.context_status)
    if imgui.is_item_hovered():
        imgui.set_item_tooltip("press Refresh after changing the list")
    if not files:
        return
    flags = (
        imgui.TableFlags_.row_bg | imgui.TableFlags_.borders_inner_v | imgui.TableFlags_.sizing_stretch_prop
    )
    if not imgui.begin_table("##resolved", 4, flags):
        return
    imgui.table_setup_column("file")
    imgui.table_setup_column("view", imgui.TableColumnFlags_.width_fixed, 90)
    imgui.table_setup_column("sent as", imgui.TableColumnFlags_.width_fixed, 64)
    imgui.table_setup_column("tokens", imgui.TableColumnFlags_.width_fixed, 52)
    imgui.table_headers_row()

    def row(index: int) -> None:
        item = files[index]
        path = str(item.get("path", "?"))
        imgui.table_next_row()
        imgui.table_set_column_index(0)
        kind = item.get("kind")
        if kind == "missing":
            text_elided(f"{path} (missing)", color=COLORS["warn"], keep_end=True)
        elif kind == "refused":  # the path policy never lets it reach a model: say why
            text_elided(f"{path} (refused)", color=COLORS["error"], keep_end=True)
            if imgui.is_item_hovered():
                imgui.set_tooltip(f"{path}: {item.get('error', '')}")
        else:
            text_elided(path, keep_end=True)
        imgui.table_set_column_index(1)
        mode = str(item.get("mode", "full"))
        imgui.set_next_item_width(-1)
        if imgui.begin_combo(f"##mode{index}", mode):
            for option in VIEW_MODES:
                if imgui.selectable(option, option == mode)[0] and option != mode:
                    ui.act.click("btn_set_view_mode", {"path": path, "mode": option})
            imgui.end_combo()
        imgui.table_set_column_index(2)
        imgui.text_unformatted(str(item.get("effective_mode", mode)))
        imgui.table_set_column_index(3)
        imgui.text_unformatted(f"{int(item.get('tokens', 0)):,}")

    clipped_rows(len(files), row)
    imgui.end_table()
