"""A cost_over rule pauses an MMA run: when the session's spend (the usage ledger) crosses its
threshold the conductor starts no further ticket and a cost_check dialog explains the spend;
rejecting leaves the track paused, approving resumes it; each threshold asks once per run."""

from __future__ import annotations

import time
from pathlib import Path

from manual_slop.dialogs import PendingDialog
from manual_slop.mma.bindings import mma_runtime
from manual_slop.mma.models import Ticket, Track
from tests.helpers import pump_until
from tests.integration.mma.test_mma_controller import click, wired
from tests.unit.mma.fake_client import Call, FakeTierClient, default_responder

PROJECT = """\
[project]
name = "demo"

[mma]
tier3_models = ["gemini-2.5-pro"]
max_workers = 1

[[approval.rules]]
name = "spawns"
trigger = "on_spawn"
action = "allow"

[[approval.rules]]
name = "first-dime"
trigger = "cost_over"
threshold_usd = 0.05
action = "ask"

[[approval.rules]]
name = "second-dime"
trigger = "cost_over"
threshold_usd = 0.15
action = "ask"
"""
# 40,000 characters: ~10,000 output tokens at gemini-2.5-pro's $10 per million, ~$0.10 a ticket
LONG_ANSWER = "x" * 40_000


def respond(call: Call) -> str:
    return LONG_ANSWER if call.tier == "Tier 3" else default_responder(call)


def cost_dialog(ctrl) -> PendingDialog | None:
    return next((d for d in ctrl.clutch.pending() if d.kind == "cost_check"), None)


def statuses(ctrl) -> dict[str, str]:
    return {t["id"]: t["status"] for t in ctrl.state.mma_tickets}


def test_a_cost_over_rule_pauses_the_run_until_the_spend_is_approved(app_dir: Path, make_controller) -> None:
    (app_dir / "demo.toml").write_text(PROJECT)
    (app_dir / "config.toml").write_text('[approval]\npolicy = "allow_list"\n')
    client = FakeTierClient(respond=respond)
    ctrl = wired(make_controller, client, project_file=app_dir / "demo.toml")
    tickets = [
        Ticket("a", "first"),
        Ticket("b", "second", depends_on=["a"]),
        Ticket("c", "third", depends_on=["b"]),
    ]
    track = Track("tr_cost", "Costly", tickets=tickets)
    mma_runtime(ctrl).store().save(track)
    mma_runtime(ctrl).add_track(track)

    click(ctrl, "btn_mma_start_track", "tr_cost")
    pump_until(ctrl, lambda: cost_dialog(ctrl) is not None and ctrl.state.mma_status == "paused", 10)
    first = cost_dialog(ctrl)
    assert first is not None and first.to_dict()["rule"] == "first-dime"
    assert first.payload["threshold_usd"] == 0.05 and 0.05 <= first.payload["spent_usd"] < 0.15
    assert "'first-dime'" in first.payload["message"] and "tr_cost is paused" in first.payload["message"]
    pump_until(ctrl, lambda: statuses(ctrl).get("a") == "completed")
    assert statuses(ctrl) == {"a": "completed", "b": "todo", "c": "todo"}  # nothing started past the limit

    ctrl.clutch.resolve(first.uid, False, decider="hook")  # rejected: the track stays paused
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        ctrl.run_frame()
        ctrl.wait_for_work(0.02)
    assert ctrl.state.mma_status == "paused" and statuses(ctrl)["b"] == "todo"
    assert [c.ticket_id for c in client.tier_calls("Tier 3")] == ["a"]

    click(ctrl, "btn_mma_resume")  # the user resumes by hand: b runs, and the next threshold asks
    pump_until(ctrl, lambda: cost_dialog(ctrl) is not None and statuses(ctrl).get("b") == "completed", 10)
    second = cost_dialog(ctrl)
    assert second is not None and second.to_dict()["rule"] == "second-dime"
    assert statuses(ctrl)["c"] == "todo"
    ctrl.clutch.resolve(second.uid, True, decider="hook")  # approved: the track resumes and ends
    pump_until(ctrl, lambda: ctrl.state.mma_status == "done", 10)
    assert statuses(ctrl) == {"a": "completed", "b": "completed", "c": "completed"}

    audit = ctrl.session_log.read("audit")
    assert [
        (e["kind"], e["approved"], e["decider"], e["rule"]) for e in audit if e["kind"] == "cost_check"
    ] == [
        ("cost_check", False, "hook", "first-dime"),
        ("cost_check", True, "hook", "second-dime"),
    ]
    assert {e["rule"] for e in audit if e["kind"] == "mma_spawn"} == {"spawns"}
