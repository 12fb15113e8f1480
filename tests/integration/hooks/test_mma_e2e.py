"""MMA end to end over the Hook API: plan an epic → accept → start → approve spawns → done,
every reply checked against the served OpenAPI document. The AI side is the scripted
TierClient fake (the wire-level provider fakes take its place when the AI client lands)."""

from __future__ import annotations

import time

from manual_slop.mma.bindings import mma_runtime
from manual_slop.mma.client import MMAServices
from tests.integration.hooks.conftest import HookApp
from tests.unit.mma.fake_client import FakeTierClient


def test_plan_accept_start_approve_done(hook_app: HookApp) -> None:
    ai = FakeTierClient()
    ctrl = hook_app.ctrl
    ctrl.call_on_main(lambda: mma_runtime(ctrl).set_services(MMAServices(client=ai)), 5.0)
    api = hook_app.client()
    api.wait_for_task(api.set_value("mma_epic_input", "Build a login page"))
    api.wait_for_task(api.click("btn_mma_plan_epic"))
    proposal = api.wait_for_event("track_proposal")
    assert [t["title"] for t in proposal["payload"]["tracks"]] == ["Core"]
    assert api.mma_status()["proposed_tracks"][0]["priority"] == "high"

    api.wait_for_task(api.click("btn_mma_accept_tracks", [0]))
    tracks = api.wait_for_value("mma_tracks", lambda v: len(v) == 1 and v[0]["ticket_count"] == 2)
    api.wait_for_value("mma_status", lambda v: v == "idle")
    status = api.mma_status()
    assert status["proposed_tracks"] == [] and [t["id"] for t in status["tickets"]] == ["a", "b"]

    api.wait_for_task(api.click("btn_mma_start_track", tracks[0]["id"]))
    approved: list[str] = []
    deadline = time.monotonic() + 20
    while api.mma_status()["status"] != "done":
        assert time.monotonic() < deadline, api.mma_status()
        for dialog in api.pending():
            assert dialog["kind"] == "mma_spawn" and dialog["payload"]["role"] == "Tier 3"
            assert not [c for c in ai.tier_calls("Tier 3") if c.ticket_id == dialog["payload"]["ticket_id"]]
            api.approve(dialog["id"])
            approved.append(dialog["payload"]["ticket_id"])
        time.sleep(0.02)
    assert approved == ["a", "b"]  # b's dialog only once a was done: dependencies respected

    final = api.mma_status()
    assert [(t["id"], t["status"]) for t in final["tickets"]] == [("a", "completed"), ("b", "completed")]
    assert final["active_track"]["status"] == "done" and final["active_tier"] is None
    assert all(final["tier_usage"][tier]["input"] > 0 for tier in ("Tier 1", "Tier 2", "Tier 3"))
    completed = api.wait_for_event(
        "ticket_status", lambda p: p["ticket_id"] == "b" and p["status"] == "completed"
    )
    assert completed["payload"]["track_id"] == tracks[0]["id"]
