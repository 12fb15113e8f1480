"""The Usage panel in the real window: the cost table shows genai-prices' dollars and "unknown"
for a model nobody prices, the live plot draws, and Reset empties the ledger."""

from __future__ import annotations

from pathlib import Path

from imgui_bundle.immapp import testing

from manual_slop.gui.panels.usage import UsageView, usd_cell
from manual_slop.usage.bindings import ledger_of
from tests.gui.conftest import frames_until


def test_usage_panel_shows_dollars_unknown_and_resets(make_controller, run_gui, artifacts: Path) -> None:
    ctrl = make_controller()
    calls = (("gemini", "gemini-2.5-flash", 1_000_000), ("openai_compatible", "mystery", 10))
    for provider, model, tokens_in in calls:
        payload = {"usage": {"input_tokens": tokens_in, "output_tokens": 0}}
        ctrl.add_comms_entry({"kind": "response", "provider": provider, "model": model, "payload": payload})
    shown: dict[str, str] = {}

    def test(ctx, app) -> None:
        ctx.yield_(3)
        app.focus("Usage")
        frames_until(ctx, lambda: isinstance(app.gui.usage, UsageView) and app.gui.usage.version == 2)
        rows = app.gui.usage.report["by_model"]
        shown.update({name: usd_cell(row) for name, row in rows.items()})
        shown["total"] = usd_cell(app.gui.usage.report["total"])
        ctx.yield_(3)
        testing.capture(ctx, str(artifacts / "panel_usage.png"))
        ctx.item_click("**/Reset##usage")
        frames_until(ctx, lambda: ledger_of(ctrl).breakdown()["total"]["calls"] == 0)
        frames_until(ctx, lambda: app.gui.usage.report["total"]["calls"] == 0)

    run_gui(ctrl, test)
    assert shown == {
        "gemini / gemini-2.5-flash": "$0.3000",  # $0.30 per million input tokens
        "openai_compatible / mystery": "unknown",
        "total": "$0.3000 + 1 unknown",
    }
