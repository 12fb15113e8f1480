"""The Theme panel switches the live style (NERV colours, HiDPI font scale) and the AI Settings'
tier dropdowns choose a model from the fetched list, in the real window."""

from __future__ import annotations

import time

import pytest
from imgui_bundle import imgui

from manual_slop.gui.theme import style_color
from manual_slop.themes import nerv_palette
from tests.gui.conftest import frames_until

THEME = "//Theme/##theme_form"
TIERS = "//AI Settings/##tier_form"


def _choose(ctx, combo: str, option: str) -> None:
    ctx.item_click(combo)
    ctx.yield_(2)
    ctx.item_click(f"//$FOCUSED/{option}")


@pytest.mark.heavy(6)  # seconds here, alone on two cores
def test_theme_switches_live_and_tier_dropdowns_choose(make_controller, run_gui) -> None:
    ctrl = make_controller()
    ctrl.state.model_lists["local"] = ["small-model", "big-model"]
    ctrl.add_comms_entry(
        {"kind": "cache_created", "provider": "gemini", "model": "gemini-2.5-flash", "ts": "10:00:00",
         "local_ts": time.time(), "payload": {"name": "cachedContents/x1", "tokens": 4096, "ttl_s": 3600}}
    )  # fmt: skip
    seen: dict[str, object] = {}

    def test(ctx, app) -> None:
        ctx.yield_(5)
        seen["dark_bg"] = style_color("window_bg")
        app.focus("Theme")
        ctx.yield_(3)
        _choose(ctx, f"{THEME}/##theme", "nerv")
        frames_until(ctx, lambda: app.gui.appearance[:1] == ("nerv",))
        ctx.yield_(2)
        seen["nerv_bg"], seen["nerv_text"] = style_color("window_bg"), style_color("text")
        ctx.item_click("//Theme/1.5x##font_scale")
        frames_until(ctx, lambda: imgui.get_style().font_scale_main == 1.5)
        app.focus("Cache")
        ctx.yield_(3)
        seen["cache_health"] = ctrl.health()  # a panel that raises is reported here
        app.focus("AI Settings")
        ctx.yield_(3)
        for tier in ("mma_tier1_model", "mma_tier2_model", "mma_tier3_models", "mma_tier4_model"):
            seen[tier] = ctx.item_exists(f"{TIERS}/##{tier}")
        _choose(ctx, f"{TIERS}/##mma_tier1_model", "big-model##mma_tier1_model")
        _choose(ctx, f"{TIERS}/##mma_tier3_models", "small-model##mma_tier3_models")
        frames_until(ctx, lambda: ctrl.state.mma_settings.get("tier3_models") == ["small-model"])

    run_gui(ctrl, test)
    nerv = nerv_palette()
    assert seen["dark_bg"] != seen["nerv_bg"]
    assert seen["nerv_bg"] == pytest.approx(nerv["window_bg"])
    assert seen["nerv_text"] == pytest.approx(nerv["text"])
    assert all(seen[t] for t in ("mma_tier1_model", "mma_tier2_model", "mma_tier3_models", "mma_tier4_model"))
    assert seen["cache_health"]["healthy"], seen["cache_health"]
    assert ctrl.fields.get("cache_state")["contents"][0]["name"] == "cachedContents/x1"
    assert ctrl.fields.get("mma_tier1_model") == "big-model"
    assert (ctrl.state.theme, ctrl.state.font_scale) == ("nerv", 1.5)
