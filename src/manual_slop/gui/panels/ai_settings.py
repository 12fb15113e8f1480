"""AI Settings: provider, model, endpoint, sampling parameters and the approval policy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from imgui_bundle import imgui

from manual_slop.config import PROVIDER_NAMES
from manual_slop.gui.inputs import combo_field, text_field
from manual_slop.gui.widgets import COLORS, text_colored

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["render_ai_settings"]

POLICIES = ["manual", "allow_list", "auto"]


def render_ai_settings(ui: Ui) -> None:
    state = ui.state
    imgui.push_item_width(imgui.get_content_region_avail().x * 0.6)
    try:
        _render(ui, state)
    finally:
        imgui.pop_item_width()


def _render(ui: Ui, state) -> None:
    combo_field(ui, "Provider", "current_provider", list(PROVIDER_NAMES))
    source = ui.ctrl.credentials.source(state.current_provider)
    if state.current_provider in ("local", "gemini_cli", "openai_compatible"):
        imgui.text_disabled("no API key needed" if source is None else f"API key from {source}")
    elif source is None:
        text_colored("warn", f"no API key for {state.current_provider} (credentials.toml or environment)")
    else:
        imgui.text_disabled(f"API key from {source}")

    models = ui.state.available_models
    if models:
        combo_field(ui, "Model", "current_model", models)
    text_field(ui, "Model name", "current_model", commit_on_change=False)
    imgui.same_line()
    if imgui.button("Refresh models"):
        ui.act.click("btn_fetch_models")
    text_field(ui, "Base URL", "provider_base_url", commit_on_change=False, hint="provider default")

    imgui.separator_text("Sampling")
    changed, value = imgui.slider_float("Temperature", state.temperature, 0.0, 2.0, "%.2f")
    if changed:
        ui.act.set("temperature", value)
    changed, value = imgui.slider_float("Top P", state.top_p, 0.0, 1.0, "%.2f")
    if changed:
        ui.act.set("top_p", value)
    changed, value = imgui.input_int("Max tokens", state.max_tokens, 256, 4096)
    if changed:
        ui.act.set("max_tokens", max(1, value))
    changed, value = imgui.input_int("History trunc limit", state.history_trunc_limit, 1000, 10000)
    if changed:
        ui.act.set("history_trunc_limit", max(0, value))

    imgui.separator_text("Execution Clutch")
    auto = state.approval_policy == "auto"
    if auto:
        imgui.push_style_color(imgui.Col_.text, COLORS["warn"])
    combo_field(ui, "Approval policy", "approval_policy", POLICIES)
    if auto:
        imgui.pop_style_color()
        text_colored("warn", "AUTO: scripts, edits and MMA steps run without asking")
    elif state.approval_policy == "allow_list":
        imgui.text_disabled(f"{len(ui.ctrl.clutch.rules)} allow-list rule(s) from the project file")
