"""Planning off the main thread with visible progress, and track proposals that survive a
failed Tier 2: edited, rejected, accepted (a proposal leaves only once its track is saved)."""

from __future__ import annotations

import json
import threading
import time

import pytest

from manual_slop.automation import InvalidValue
from manual_slop.mma.bindings import mma_runtime
from manual_slop.mma.client import MMAServices
from tests.helpers import pump_until
from tests.unit.mma.fake_client import Call, FakeTierClient, default_responder


def click(ctrl, name: str, user_data=None) -> None:
    task = ctrl.post_gui_task({"action": "click", "item": name, "user_data": user_data, "source": "hook"})
    ctrl.run_frame()
    outcome = ctrl.tasks.get(task)
    assert outcome.state == "done", outcome.error


def progress_seen(ctrl) -> list[str]:
    events = ctrl.journal.read(0, limit=10_000)[0]
    return [e.payload["progress"] for e in events if e.type == "mma_state" and "progress" in e.payload]


def test_plan_epic_returns_at_once_and_shows_each_phase(make_controller) -> None:
    hold = threading.Event()
    client = FakeTierClient(hold=hold, hold_timeout=10.0)
    ctrl = make_controller()
    mma_runtime(ctrl).set_services(MMAServices(client=client))
    compiled_on: list[str] = []
    compile_real = ctrl.context.compile

    def compile_and_record(*args, **kwargs):
        compiled_on.append(threading.current_thread().name)
        return compile_real(*args, **kwargs)

    ctrl.context.compile = compile_and_record
    ctrl.fields.set("mma_epic_input", "Build a login page")
    started = time.monotonic()
    click(ctrl, "btn_mma_plan_epic")
    assert time.monotonic() - started < 1.0  # the frame did not wait for the context or Tier 1
    assert ctrl.state.mma_status == "planning" and ctrl.fields.get("mma_progress") == "building context"
    pump_until(ctrl, lambda: ctrl.fields.get("mma_progress") == "asking Tier 1" and client.calls)
    assert not hold.is_set() and ctrl.state.mma_status == "planning" and not ctrl.state.proposed_tracks
    assert compiled_on == ["slop-mma-plan"]  # the context was built on the planning thread
    hold.set()
    pump_until(ctrl, lambda: ctrl.state.proposed_tracks and ctrl.state.mma_status == "idle")
    assert ctrl.fields.get("mma_progress") == ""
    assert progress_seen(ctrl) == ["building context", "asking Tier 1", ""]
    (proposal,) = ctrl.fields.get("proposed_tracks")
    assert proposal["id"].startswith("p_") and proposal["title"] == "Core"


def test_a_failed_tier2_keeps_its_proposal_and_a_retry_plans_it(make_controller) -> None:
    broken = {"B": True}

    def respond(call: Call) -> str:
        if call.tier == "Tier 2" and "Track B" in call.message and broken["B"]:
            return "not json"
        return default_responder(call)

    ctrl = make_controller()
    mma_runtime(ctrl).set_services(MMAServices(client=FakeTierClient(respond=respond)))
    ctrl.state.proposed_tracks = [
        {"title": "Track A", "description": "a", "priority": "high"},
        {"title": "Track B", "description": "b", "priority": "low"},
    ]
    click(ctrl, "btn_mma_accept_tracks")
    assert len(ctrl.state.proposed_tracks) == 2  # nothing leaves before Tier 2 answered
    pump_until(ctrl, lambda: ctrl.state.mma_status == "idle" and len(ctrl.state.proposed_tracks) == 1)
    (kept,) = ctrl.state.proposed_tracks
    assert kept["title"] == "Track B" and "invalid plan twice" in kept["error"]
    assert [t["title"] for t in ctrl.fields.get("mma_tracks")] == ["Track A"]
    assert any("'Track B' failed" in n.message and n.level == "error" for n in ctrl.state.notifications)
    assert any(p.startswith("asking Tier 2 (2/2: Track B)") for p in progress_seen(ctrl))
    broken["B"] = False
    click(ctrl, "btn_mma_accept_tracks", [0])
    pump_until(ctrl, lambda: ctrl.state.mma_status == "idle" and not ctrl.state.proposed_tracks)
    assert sorted(t["title"] for t in ctrl.fields.get("mma_tracks")) == ["Track A", "Track B"]
    meta = json.loads((ctrl.session_log.root / "session.json").read_text())
    assert meta["markers"]["track_created"] == 2  # start-up pruning keeps this session


def test_proposals_are_edited_and_rejected_and_bad_edits_are_refused(make_controller) -> None:
    ctrl = make_controller()
    mma_runtime(ctrl).set_services(MMAServices(client=FakeTierClient()))
    ctrl.state.proposed_tracks = [
        {"title": "One", "description": "1", "priority": "low"},
        {"title": "Two", "description": "2", "priority": "low"},
    ]
    edit = {"index": 1, "title": " Second ", "description": "the 2nd", "priority": "high"}
    click(ctrl, "btn_mma_edit_track_proposal", edit)
    assert ctrl.state.proposed_tracks[1] | {"id": ""} == {
        "id": "", "title": "Second", "description": "the 2nd", "priority": "high"
    }  # fmt: skip
    refused = {
        "user_data must be": {"title": "x"},
        "nothing to edit": {"index": 0},
        "no proposed track at index \\[5\\]": {"index": 5, "title": "x"},
        "priority must be one of high, medium, low": {"index": 0, "priority": "urgent"},
        "title cannot be empty": {"index": 0, "title": "  "},
        "'s goal cannot be edited": {"index": 0, "goal": "x"},
        "description must be a string": {"index": 0, "description": 3},
    }
    for message, data in refused.items():
        with pytest.raises(InvalidValue, match=message):
            ctrl.actions.invoke("btn_mma_edit_track_proposal", data)
    click(ctrl, "btn_mma_reject_tracks", [0])
    assert [p["title"] for p in ctrl.state.proposed_tracks] == ["Second"]
    click(ctrl, "btn_mma_accept_tracks")
    pump_until(ctrl, lambda: ctrl.state.mma_status == "idle" and not ctrl.state.proposed_tracks)
    (track,) = ctrl.fields.get("mma_tracks")
    assert track["title"] == "Second" and track["priority"] == "high"
    with pytest.raises(InvalidValue, match="no proposed tracks to reject"):
        ctrl.actions.invoke("btn_mma_reject_tracks")
