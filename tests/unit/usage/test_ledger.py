"""The usage ledger: each response entry lands in the right rows (provider, model, tier, track,
ticket, plan subtask), an unknown price stays unknown, concurrent recording loses nothing, and
the cost watch asks once per limit crossed (rules and budgets), naming calls at unknown price."""

from __future__ import annotations

import threading
from decimal import Decimal
from pathlib import Path
from typing import Any

from manual_slop.dialogs import CostDialog
from manual_slop.governance.cost import Budgets, CostWatch
from manual_slop.governance.rules import Rule, RuleEvent, RuleSet, Trigger
from manual_slop.governance.subject import event_of
from manual_slop.usage.ledger import DIMENSIONS, Tally, UsageLedger, format_usd
from manual_slop.usage.prices import PriceBook, PriceOverride
from tests.helpers import markdown_tables

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guide_usage.md"
# round numbers: $1 per million input tokens, $10 per million output tokens
BOOK = PriceBook({"m": PriceOverride(Decimal(1), Decimal(10))})


def response(
    model: str = "m", *, tier: str | None = None, conversation: str = "", ticket: str = "",
    provider: str = "gemini", tokens_in: int = 1000, tokens_out: int = 100,
) -> dict[str, Any]:  # fmt: skip
    entry: dict[str, Any] = {
        "kind": "response",
        "provider": provider,
        "model": model,
        "source_tier": tier,
        "conversation": conversation,
        "payload": {"usage": {"input_tokens": tokens_in, "output_tokens": tokens_out}},
    }
    if ticket:
        entry["ticket"] = ticket
    return entry


def test_each_call_lands_in_its_rows() -> None:
    ledger = UsageLedger(BOOK)
    assert ledger.record({"kind": "request", "provider": "gemini", "model": "m"}) is None  # not a call
    ledger.record(response())  # a chat message: $0.002
    ledger.record(response(tier="Tier 1", conversation="mma:Tier 1:abc"))  # epic planning: no track
    ledger.set_track("tr_1")
    ledger.record(response(tier="Tier 2", conversation="mma:Tier 2:abc"))
    ledger.record(response(tier="Tier 3", conversation="mma:Tier 3:a:abc", ticket="a", tokens_out=1000))
    ledger.record(response(tier="Subtask", conversation="plan:p1:s1:1", ticket="s1"))
    report = ledger.breakdown()
    assert report["total"] == {
        "calls": 5, "input_tokens": 5000, "output_tokens": 1400, "cache_read_tokens": 0,
        "cache_write_tokens": 0, "usd": 0.019, "unknown_calls": 0,
    }  # fmt: skip
    assert set(report) == {f"by_{d}" for d in DIMENSIONS} | {"total", "track", "price_overrides"}
    assert {k: v["calls"] for k, v in report["by_tier"].items()} == {
        "main": 1, "Tier 1": 1, "Tier 2": 1, "Tier 3": 1, "Subtask": 1,
    }  # fmt: skip
    assert {k: v["calls"] for k, v in report["by_track"].items()} == {"tr_1": 3}
    assert report["by_ticket"] == {"tr_1/a": Tally(1, 1000, 1000, usd=Decimal("0.011")).to_dict()}
    assert list(report["by_subtask"]) == ["p1/s1"]
    assert report["by_model"]["gemini / m"]["calls"] == 5 and report["track"] == "tr_1"
    assert ledger.spend("tr_1").usd == Decimal("0.015") and ledger.spend().usd == Decimal("0.019")
    assert ledger.tally("ticket", "tr_1/a").usd == Decimal("0.011")
    xs, ys = ledger.series()
    assert len(xs) == 5 and ys == [0.002, 0.004, 0.006, 0.017, 0.019]
    running = {"track": ""}  # the runtime hands in "the running conductor's track"
    ledger.set_track(lambda: running["track"])
    ledger.record(response(tier="Tier 2", conversation="mma:Tier 2:def"))  # planning between runs
    assert ledger.spend("tr_1").usd == Decimal("0.015") and ledger.breakdown()["track"] == ""
    ledger.reset()
    assert ledger.breakdown()["total"]["calls"] == 0 and ledger.series() == ([], [])


def test_an_unknown_price_is_unknown_never_zero() -> None:
    ledger = UsageLedger(BOOK)
    ledger.record(response("mystery-model", provider="openai_compatible"))
    report = ledger.breakdown()
    assert report["by_model"]["openai_compatible / mystery-model"]["usd"] is None
    assert report["total"]["unknown_calls"] == 1 and report["total"]["usd"] is None
    ledger.record(response())
    total = ledger.breakdown()["total"]
    assert total["usd"] == 0.002 and total["unknown_calls"] == 1  # the known part, and what it leaves out
    assert ledger.spend().unknown_calls == 1
    assert format_usd(None) == "unknown"
    assert format_usd(Decimal("0.002"), 1) == "$0.0020 + 1 unknown"
    assert format_usd(0.5) == "$0.5000"


def test_concurrent_recording_loses_nothing() -> None:
    ledger = UsageLedger(BOOK)
    ledger.set_track("t")

    def work(n: int) -> None:
        for _ in range(250):
            ledger.record(response(tier="Tier 3", conversation=f"mma:Tier 3:{n}:x", ticket=str(n)))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert not any(t.is_alive() for t in threads)
    report = ledger.breakdown()
    assert report["total"]["calls"] == 2000 and ledger.spend().usd == Decimal("4.000")
    assert all(row["calls"] == 250 for row in report["by_ticket"].values()) and len(report["by_ticket"]) == 8


def rule(name: str, threshold: float) -> Rule:
    return Rule.from_dict({"name": name, "trigger": "cost_over", "threshold_usd": threshold, "action": "ask"})


def test_the_cost_watch_asks_once_per_limit_and_names_unknown_calls() -> None:
    ledger = UsageLedger(BOOK)
    ledger.set_track("tr")
    watch = CostWatch(lambda: (rule("dime", 0.1),), ledger.spend, Budgets(session_usd=0.25, track_usd=0.05))
    assert watch.check("tr") is None and watch.unknown_notice("tr") == ""
    ledger.record(response("mystery", tier="Tier 3", conversation="mma:Tier 3:a:x", ticket="a"))
    assert "1 call at unknown price not counted" in watch.unknown_notice("tr")
    assert watch.unknown_notice("tr") == ""  # once per run
    for _ in range(6):  # $0.011 each: $0.066 for the track
        ledger.record(response(tier="Tier 3", conversation="mma:Tier 3:a:x", ticket="a", tokens_out=1000))
    first = watch.check("tr")
    assert isinstance(first, CostDialog) and first.payload["budget"] == "usage.track_budget_usd"
    assert first.payload["unknown_calls"] == 1 and first.payload["threshold_usd"] == 0.05
    assert "1 call at unknown price not counted" in first.payload["message"]
    assert "track tr has spent $0.0660" in first.payload["message"]
    assert watch.check("tr") is None  # asked once
    for _ in range(20):  # to $0.286: the rule's dime and the session budget at once
        ledger.record(response(tier="Tier 3", conversation="mma:Tier 3:b:x", ticket="b", tokens_out=1000))
    second = watch.check("tr")
    assert second is not None and second.payload["budget"] == "usage.budget_usd"
    assert second.payload["threshold_usd"] == 0.25 and second.payload["since_usd"] == 0.066
    assert "'dime'" in second.payload["message"] and "usage.budget_usd = 0.25" in second.payload["message"]


def test_a_budget_asks_unless_a_rule_decides() -> None:
    spent = CostDialog("tr", 0.3, 0.0, 0.25, "over", budget="usage.budget_usd")
    event = event_of(spent)
    assert event == RuleEvent(Trigger.COST_OVER, "cost_check", "over", None, 0.3, 0.0, True)
    assert RuleSet("manual").deciding(event).name == "budget"
    assert RuleSet("allow_list").decide(event).action == "ask"
    assert RuleSet("auto").decide(event).action == "allow"
    allow = Rule.from_dict({"name": "fine", "trigger": "cost_over", "threshold_usd": 0.2, "action": "allow"})
    assert RuleSet("allow_list", [allow]).deciding(event).name == "fine"
    rules_only = CostDialog("tr", 0.3, 0.0, 0.25, "over")  # no budget: the pass default, as before
    assert RuleSet("manual").decide(event_of(rules_only)).action == "allow"


def test_the_guide_tables_match_the_ledger() -> None:
    text = GUIDE.read_text()
    breakdowns, fields = markdown_tables(GUIDE, "## What is counted, and where it belongs")
    assert [row[0] for row in breakdowns] == list(DIMENSIONS)
    assert [row[0] for row in fields] == list(Tally().to_dict())
    (modules,) = markdown_tables(GUIDE, "# Usage and cost: tokens and dollars you can trust")[:1]
    package = Path(__file__).resolve().parents[3] / "src" / "manual_slop" / "usage"
    assert {row[0] for row in modules} == {p.name for p in package.glob("*.py")} - {"__init__.py"}
    assert "GET /api/usage" in text
