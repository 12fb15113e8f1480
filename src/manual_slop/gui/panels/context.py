"""Context: strategy and budget, the compiled Markdown, its token estimate, how the last send was
fitted to the model's window, presets, MD Only."""

from __future__ import annotations

from typing import TYPE_CHECKING

from imgui_bundle import ImVec2, imgui

from manual_slop.gui.inputs import combo_field
from manual_slop.gui.text_view import render_long_text
from manual_slop.gui.widgets import COLORS, spinner_text, text_entry

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["render_context"]


def render_context(ui: Ui) -> None:
    ctrl, gui = ui.ctrl, ui.gui
    imgui.push_item_width(imgui.get_content_region_avail().x * 0.45)
    combo_field(ui, "Strategy", "context_strategy", ["full", "summarize", "auto"])
    budget = int(ctrl.fields.get("context_token_budget"))
    changed, value = imgui.input_int("Token budget", budget, 1000, 10000)
    if changed:
        ui.act.set("context_token_budget", max(256, value))
    threshold = int(ctrl.fields.get("context_full_threshold"))
    changed, value = imgui.input_int("Full up to (tokens)", threshold, 500, 5000)
    if changed:
        ui.act.set("context_full_threshold", max(1, value))
    edge = int(ctrl.fields.get("image_max_edge"))
    changed, value = imgui.input_int("Image edge (px)", edge, 64, 256)
    if changed:
        ui.act.set("image_max_edge", min(8000, max(64, value)))
    imgui.pop_item_width()

    if imgui.button("Compile preview"):
        ui.act.click("btn_refresh_context")
    imgui.same_line()
    if imgui.button("MD Only"):
        ui.act.click("btn_md_only")
    imgui.same_line()
    status = str(ctrl.fields.get("context_status"))
    imgui.text_disabled(f"{spinner_text()} {status}" if status.endswith("...") else status)
    tokens = int(ctrl.fields.get("context_tokens") or 0)
    fraction = tokens / budget if budget else 0.0
    color = COLORS["error"] if fraction > 1.0 else COLORS["in_progress"]
    imgui.push_style_color(imgui.Col_.plot_histogram, color)
    imgui.progress_bar(min(fraction, 1.0), ImVec2(-1, 0), f"{tokens:,} / {budget:,} tokens")
    imgui.pop_style_color()
    last_md = str(ctrl.fields.get("last_md_path") or "")
    if last_md:
        imgui.text_disabled(f"last MD Only: {last_md}")

    _fit(ui)
    _presets(ui)
    imgui.separator_text("Compiled context")
    render_long_text("##context_preview", str(ctrl.fields.get("context_preview") or ""), gui.context_text)


def _fit(ui: Ui) -> None:
    """The last send: the model's window, and what had to be shortened or left out to fit it."""
    fit = ui.ctrl.fields.get("context_fit") or {}
    if not fit:
        return
    degraded, dropped = list(fit.get("degraded") or []), list(fit.get("dropped") or [])
    imgui.separator_text("Last send")
    counted = "counted by its tokenizer" if fit.get("exact") else "estimated"
    imgui.text_wrapped(
        f"{fit.get('provider')} / {fit.get('model')}: window {int(fit.get('window', 0)):,} tokens; "
        f"the context took {int(fit.get('tokens', 0)):,} of {int(fit.get('available', 0)):,} ({counted})"
    )
    if not degraded and not dropped:
        imgui.text_disabled("every file as you set it")
        return
    label = f"{len(degraded)} shortened, {len(dropped)} left out###fit_files"
    if imgui.tree_node(label):
        for entry in dropped:
            imgui.text_colored(COLORS["error"], "left out")
            imgui.same_line()
            imgui.text_wrapped(f"{entry.get('path')}: {entry.get('reason')}")
        for entry in degraded:
            imgui.text_colored(COLORS["in_progress"], f"{entry.get('mode')} -> {entry.get('effective_mode')}")
            imgui.same_line()
            imgui.text_wrapped(str(entry.get("path")))
        imgui.tree_pop()


def _presets(ui: Ui) -> None:
    presets = [str(p) for p in ui.ctrl.fields.get("context_presets")]
    imgui.separator_text(f"Presets ({len(presets)})")
    for name in presets:
        imgui.push_id(name)
        if imgui.small_button("Load"):
            ui.act.click("btn_load_preset", name)
        imgui.same_line()
        if imgui.small_button("Delete"):
            ui.act.click("btn_delete_preset", name)
        imgui.same_line()
        imgui.text_unformatted(name)
        imgui.pop_id()
    text_entry(
        ui.gui.edit_buffers, "preset_name", "preset name", "Save preset",
        lambda name: ui.act.click("btn_save_preset", name), width=-110,
    )  # fmt: skip
