"""Theme settings persist in config.toml and are refused with the choices when wrong; the tier
model dropdowns offer the provider's fetched list; a fetched list is kept per provider."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from manual_slop.ai.bindings import _apply_models
from manual_slop.automation import InvalidValue
from manual_slop.gui.panels.ai_settings import tier_model_options


def test_theme_accent_and_font_scale_persist_in_config(make_controller, app_dir: Path) -> None:
    ctrl = make_controller()
    assert (ctrl.fields.get("theme"), ctrl.fields.get("theme_accent"), ctrl.fields.get("font_scale")) == (
        "dark", "default", 1.0,
    )  # fmt: skip
    ctrl.fields.set("theme", "nerv")
    ctrl.fields.set("theme_accent", "cyan")
    ctrl.fields.set("font_scale", 1.5)
    with pytest.raises(InvalidValue, match=r"one of 'dark', 'light', 'nerv'"):
        ctrl.fields.set("theme", "solarized")
    with pytest.raises(InvalidValue, match=r"between 0.5 and 3"):
        ctrl.fields.set("font_scale", 4)
    ctrl.flush()
    saved = tomllib.loads((app_dir / "config.toml").read_text())["gui"]
    assert (saved["theme"], saved["accent"], saved["font_scale"]) == ("nerv", "cyan", 1.5)
    again = make_controller()
    assert (again.state.theme, again.state.accent, again.state.font_scale) == ("nerv", "cyan", 1.5)


def test_tier_dropdowns_offer_the_active_model_the_list_and_a_value_the_list_lacks() -> None:
    models = ["claude-opus-4-1", "claude-haiku-4-5"]
    assert tier_model_options("", models) == ["", *models]
    assert tier_model_options("claude-haiku-4-5", models) == ["", *models]
    assert tier_model_options("my-finetune", models) == ["", *models, "my-finetune"]
    assert tier_model_options("", ["", "x"]) == ["", "x"]


def test_a_fetched_model_list_is_kept_per_provider(make_controller) -> None:
    ctrl = make_controller()
    ctrl.fields.set("current_provider", "anthropic")
    _apply_models(ctrl, "gemini", ["gemini-2.5-pro"])  # arrived after the user switched away
    _apply_models(ctrl, "anthropic", ["claude-opus-4-1"])
    assert ctrl.fields.get("model_lists") == {"gemini": ["gemini-2.5-pro"], "anthropic": ["claude-opus-4-1"]}
    assert ctrl.fields.get("available_models") == ["claude-opus-4-1"]
