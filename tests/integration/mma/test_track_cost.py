"""Cost you can trust, end to end: scripted token usage through a 3-ticket track gives exact
dollars per ticket, tier, provider and model, computed from genai-prices' own numbers (and one
hand-checked literal); a model nobody prices shows "unknown"; ``GET /api/usage`` gives the same
breakdown; a track budget pauses the run and asks, saying how many calls it could not count."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import genai_prices
from jsonschema import Draft202012Validator

from manual_slop.hooks.api import HookApi
from manual_slop.hooks.routes import Call as RouteCall
from manual_slop.hooks.schemas import RESPONSE_SCHEMAS
from manual_slop.mma.bindings import mma_runtime
from manual_slop.mma.models import Ticket, Track
from manual_slop.usage.bindings import ledger_of
from tests.helpers import pump_until
from tests.integration.mma.test_mma_controller import click, wired
from tests.unit.mma.fake_client import Call, FakeTierClient

PROJECT = """\
[project]
name = "demo"

[mma]
tier3_models = ["gemini-2.5-flash"]
max_workers = 1

[[approval.rules]]
name = "spawns"
trigger = "on_spawn"
action = "allow"
"""
CONFIG = """\
[approval]
policy = "allow_list"

[usage]
track_budget_usd = 0.009
"""
# per ticket: (provider, model override, usage as the provider reports it)
SCRIPT = {
    "c": ("openai_compatible", "mystery-model-x", {"input_tokens": 1000, "output_tokens": 100}),
    "a": ("gemini", "", {"input_tokens": 12_000, "output_tokens": 3000, "cache_read_tokens": 4000}),
    # Anthropic's input_tokens leave the cache out: 2,000 fresh + 10,000 read + 1,000 written
    "b": ("anthropic", "claude-sonnet-4-5", {
        "input_tokens": 2000, "output_tokens": 500, "cache_read_tokens": 10_000, "cache_write_tokens": 1000,
    }),
}  # fmt: skip


def price(model: str, provider_id: str, **tokens: int) -> Decimal:
    return genai_prices.calc_price(genai_prices.Usage(**tokens), model, provider_id=provider_id).total_price


EXPECTED_A = price(
    "gemini-2.5-flash", "google", input_tokens=12_000, output_tokens=3000, cache_read_tokens=4000
)
EXPECTED_B = price(
    "claude-sonnet-4-5", "anthropic",
    input_tokens=13_000, output_tokens=500, cache_read_tokens=10_000, cache_write_tokens=1000,
)  # fmt: skip


def test_a_three_ticket_track_costs_exactly_what_genai_prices_says(app_dir: Path, make_controller) -> None:
    # hand-checked: 8,000 fresh at $0.30/M + 4,000 cached at $0.03/M + 3,000 out at $2.50/M
    assert Decimal("0.01002") == EXPECTED_A
    (app_dir / "demo.toml").write_text(PROJECT)
    (app_dir / "config.toml").write_text(CONFIG)
    client = FakeTierClient(
        usage_for=lambda call: dict(SCRIPT[call.ticket_id or "?"][2]),
        provider_for=lambda call: SCRIPT[call.ticket_id or "?"][0],
    )
    ctrl = wired(make_controller, client, project_file=app_dir / "demo.toml")
    tickets = [
        Ticket("c", "unpriced", model_override="mystery-model-x"),
        Ticket("a", "gemini", depends_on=["c"]),
        Ticket("b", "claude", depends_on=["a"], model_override="claude-sonnet-4-5"),
    ]
    track = Track("tr_cost", "Costly", tickets=tickets)
    mma_runtime(ctrl).store().save(track)
    mma_runtime(ctrl).add_track(track)

    click(ctrl, "btn_mma_start_track", "tr_cost")
    pump_until(ctrl, lambda: any(d.kind == "cost_check" for d in ctrl.clutch.pending()), 10)
    (dialog,) = [d for d in ctrl.clutch.pending() if d.kind == "cost_check"]
    payload = dialog.payload
    assert payload["budget"] == "usage.track_budget_usd" and payload["unknown_calls"] == 1
    assert dialog.to_dict()["rule"] == "budget"  # no cost_over rule decides it: the budget asks
    assert payload["spent_usd"] == float(EXPECTED_A)
    assert "1 call at unknown price not counted" in payload["message"]
    assert any("unknown price" in n.message for n in ctrl.state.notifications)
    ctrl.clutch.resolve(dialog.uid, True, decider="hook")
    pump_until(ctrl, lambda: ctrl.state.mma_status == "done", 10)

    report = ledger_of(ctrl).breakdown()
    tickets_usd = {key: row["usd"] for key, row in report["by_ticket"].items()}
    assert tickets_usd == {"tr_cost/a": float(EXPECTED_A), "tr_cost/b": float(EXPECTED_B), "tr_cost/c": None}
    assert ledger_of(ctrl).tally("ticket", "tr_cost/b").usd == EXPECTED_B  # exact, not rounded
    assert ledger_of(ctrl).tally("tier", "Tier 3").usd == EXPECTED_A + EXPECTED_B
    assert report["by_tier"]["Tier 3"]["unknown_calls"] == 1
    assert {key: row["usd"] for key, row in report["by_provider"].items()} == {
        "gemini": float(EXPECTED_A), "anthropic": float(EXPECTED_B), "openai_compatible": None,
    }  # fmt: skip
    assert report["by_model"]["openai_compatible / mystery-model-x"]["usd"] is None
    assert report["by_model"]["anthropic / claude-sonnet-4-5"]["cache_write_tokens"] == 1000
    assert report["by_track"]["tr_cost"]["calls"] == 3

    (route,) = [r for r in HookApi(ctrl).routes() if r.path == "/api/usage"]
    body = route.handler(RouteCall({}, {}))
    assert body["by_ticket"] == report["by_ticket"] and body["track_budget_usd"] == 0.009
    Draft202012Validator(RESPONSE_SCHEMAS["Usage"]).validate(body)

    from manual_slop.gui.panels.usage import usd_cell

    assert usd_cell(report["by_ticket"]["tr_cost/c"]) == "unknown"
    assert usd_cell(report["total"]) == f"${float(EXPECTED_A + EXPECTED_B):.4f} + 1 unknown"
    assert isinstance(client.calls[0], Call)
