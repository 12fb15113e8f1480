"""MMA end to end over the Hook API against a wire-level fake provider: plan an epic →
accept → start → approve spawns → done. The real AI client talks HTTP to the fake
OpenAI-compatible server (as DeepSeek); every reply is checked against /openapi.json."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from tests.fakes import OpenAIFake, Reply
from tests.integration.hooks.conftest import HookAppFactory, deepseek_app

PLAN = {"tracks": [{"title": "Core", "description": "The login page core", "priority": "high"}]}
TICKETS = {
    "tickets": [
        {"id": "a", "description": "Write the form", "depends_on": []},
        {"id": "b", "description": "Validate the form", "depends_on": ["a"]},
    ]
}


@pytest.fixture
def fake() -> Iterator[OpenAIFake]:
    with OpenAIFake() as server:
        yield server


def test_plan_accept_start_approve_done(hook_app_factory: HookAppFactory, fake: OpenAIFake) -> None:
    app, api = deepseek_app(hook_app_factory, fake.base_url)
    fake.push(
        Reply("Here is the plan:\n```json\n" + json.dumps(PLAN) + "\n```"),  # Tier 1
        Reply(json.dumps(TICKETS)),  # Tier 2
        Reply("Done: the form is written."),  # Tier 3, ticket a
        Reply("Done: validation added."),  # Tier 3, ticket b
    )

    api.wait_for_task(api.set_value("mma_epic_input", "Build a login page"))
    api.wait_for_task(api.click("btn_mma_plan_epic"))
    proposal = api.wait_for_event("track_proposal", timeout=30)
    assert [t["title"] for t in proposal["payload"]["tracks"]] == ["Core"]
    assert api.mma_status()["proposed_tracks"][0]["priority"] == "high"

    api.wait_for_task(api.click("btn_mma_accept_tracks", [0]))
    tracks = api.wait_for_value("mma_tracks", lambda v: len(v) == 1 and v[0]["ticket_count"] == 2, timeout=30)
    api.wait_for_value("mma_status", lambda v: v == "idle", timeout=30)

    api.wait_for_task(api.click("btn_mma_start_track", tracks[0]["id"]))
    approved: list[str] = []
    deadline = time.monotonic() + 60
    while api.mma_status()["status"] != "done":
        assert time.monotonic() < deadline, api.mma_status()
        for dialog in api.pending():
            assert dialog["kind"] == "mma_spawn" and dialog["payload"]["role"] == "Tier 3"
            calls_before = len(fake.model_calls())
            api.approve(dialog["id"])
            approved.append(dialog["payload"]["ticket_id"])
            assert calls_before >= 2  # no worker called the model before its spawn was approved
        time.sleep(0.02)
    assert approved == ["a", "b"]  # b's dialog only once a was done: dependencies respected

    final = api.mma_status()
    assert [(t["id"], t["status"]) for t in final["tickets"]] == [("a", "completed"), ("b", "completed")]
    assert final["active_track"]["status"] == "done"
    assert len(fake.model_calls()) == 4
    bodies = [json.dumps(c.body) for c in fake.model_calls()]
    assert "Build a login page" in bodies[0] and "Write the form" in bodies[2]
    comms = api.comms(limit=1000)["entries"]
    assert {e.get("source_tier") for e in comms} >= {"Tier 1", "Tier 2", "Tier 3"}
    track_dir = app.ctrl.base_dir() / "conductor" / "tracks" / tracks[0]["id"]
    assert {p.name for p in track_dir.iterdir()} >= {"spec.md", "plan.md", "metadata.json", "state.toml"}
    assert "[x]" in (track_dir / "plan.md").read_text()
