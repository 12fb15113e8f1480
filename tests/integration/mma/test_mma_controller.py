"""MMA through the controller's automation surface: plan → accept → start → approve → done,
restart and resume, manual blocks, settings in the project file."""

from __future__ import annotations

import json
import threading
import tomllib
from pathlib import Path

import pytest

from manual_slop.automation import FeatureUnavailable, InvalidValue
from manual_slop.mma.bindings import mma_runtime
from manual_slop.mma.client import MMAServices
from manual_slop.mma.models import Ticket, TicketStatus, Track
from manual_slop.mma.persistence import TrackStore
from tests.helpers import pump_until
from tests.unit.mma.fake_client import Call, FakeTierClient, default_responder


def click(ctrl, name: str, user_data=None) -> None:
    task = ctrl.post_gui_task({"action": "click", "item": name, "user_data": user_data, "source": "hook"})
    ctrl.run_frame()
    outcome = ctrl.tasks.get(task)
    assert outcome.state == "done", outcome.error


def wired(make_controller, client: FakeTierClient | None = None, **kwargs):
    ctrl = make_controller(**kwargs)
    client = client or FakeTierClient()
    client.comms = ctrl.add_comms_entry  # its responses reach the comms log and the usage ledger
    mma_runtime(ctrl).set_services(MMAServices(client=client))
    return ctrl


def approve_pending_until(ctrl, predicate, timeout: float = 10.0) -> int:
    approved = 0

    def step() -> bool:
        nonlocal approved
        for dialog in ctrl.clutch.pending():
            ctrl.clutch.resolve(dialog.uid, True, decider="hook")
            approved += 1
        return predicate()

    pump_until(ctrl, step, timeout)
    return approved


def test_plan_accept_start_approve_done(make_controller) -> None:
    client = FakeTierClient()
    ctrl = wired(make_controller, client)
    ctrl.fields.set("mma_epic_input", "Build a login page")
    click(ctrl, "btn_mma_plan_epic")
    assert ctrl.state.mma_status == "planning" and ctrl.state.active_tier == "Tier 1"
    pump_until(ctrl, lambda: ctrl.state.proposed_tracks and ctrl.state.mma_status == "idle")
    (proposal,) = ctrl.state.proposed_tracks
    assert proposal | {"id": ""} == {"id": "", "title": "Core", "description": "do it", "priority": "high"}
    click(ctrl, "btn_mma_accept_tracks", [0])
    pump_until(ctrl, lambda: ctrl.fields.get("mma_tracks") and ctrl.state.mma_status == "idle")
    assert ctrl.state.proposed_tracks == []  # gone once its track was saved
    (track,) = ctrl.fields.get("mma_tracks")
    assert track["title"] == "Core" and track["ticket_count"] == 2
    assert (ctrl.base_dir() / "conductor" / "tracks" / track["id"] / "state.toml").exists()
    assert [t["id"] for t in ctrl.state.mma_tickets] == ["a", "b"]
    click(ctrl, "btn_mma_start_track")
    approved = approve_pending_until(ctrl, lambda: ctrl.state.mma_status == "done")
    assert approved == 2  # one spawn dialog per ticket under the manual policy
    assert [t["status"] for t in ctrl.fields.get("mma_tickets")] == ["completed", "completed"]
    ticket = ctrl.state.mma_tickets[0]
    assert set(ticket) >= {"id", "description", "status", "depends_on", "assigned_to", "retry_count",
                           "blocked_reason", "model_override"}  # fmt: skip
    usage = ctrl.fields.get("mma_tier_usage")
    assert all(usage[tier]["input"] > 0 for tier in ("Tier 1", "Tier 2", "Tier 3"))
    assert ctrl.fields.get("mma_active_track")["status"] == "done"
    assert [c.tier for c in client.calls] == ["Tier 1", "Tier 2", "Tier 3", "Tier 3"]
    events = [e.type for e in ctrl.journal.read(0, limit=10_000)[0]]
    assert {"track_proposal", "mma_state", "ticket_status"} <= set(events)


def test_actions_explain_what_is_missing(make_controller) -> None:
    ctrl = make_controller()
    ctrl.fields.set("mma_epic_input", "x")
    with pytest.raises(FeatureUnavailable, match="needs an AI client"):
        ctrl.actions.invoke("btn_mma_plan_epic")
    mma_runtime(ctrl).set_services(MMAServices(client=FakeTierClient()))
    ctrl.fields.set("mma_epic_input", "  ")
    with pytest.raises(InvalidValue, match="the epic is empty"):
        ctrl.actions.invoke("btn_mma_plan_epic")
    with pytest.raises(InvalidValue, match="no proposed tracks"):
        ctrl.actions.invoke("btn_mma_accept_tracks")
    with pytest.raises(InvalidValue, match="no planned tracks"):
        ctrl.actions.invoke("btn_mma_start_track")
    for name in ("btn_mma_pause", "btn_mma_abort"):
        with pytest.raises(InvalidValue, match="no track is running"):
            ctrl.actions.invoke(name)
    ctrl.state.proposed_tracks = [{"title": "x", "description": ""}]
    with pytest.raises(InvalidValue, match="no proposed track at index \\[3\\]"):
        ctrl.actions.invoke("btn_mma_accept_tracks", [0, 3])
    with pytest.raises(InvalidValue, match="user_data must be"):
        ctrl.actions.invoke("btn_mma_block_ticket", {"reason": "x"})


def test_a_planning_failure_is_reported_and_nothing_is_saved(make_controller) -> None:
    client = FakeTierClient(respond=lambda call: "not json")
    ctrl = wired(make_controller, client)
    ctrl.state.proposed_tracks = [{"title": "T", "description": "d", "priority": "low"}]
    click(ctrl, "btn_mma_accept_tracks")
    pump_until(ctrl, lambda: any("nothing saved" in n.message for n in ctrl.state.notifications))
    assert ctrl.fields.get("mma_tracks") == [] and not (ctrl.base_dir() / "conductor").exists()
    assert len(client.calls) == 2  # the error went back to the model once


def stored_track(base: Path) -> Track:
    track = Track(
        "resume_me", "Resume", "goal",
        tickets=[
            Ticket("a", "done already", status=TicketStatus.COMPLETED, result="a done"),
            Ticket("b", "was running", depends_on=["a"], status=TicketStatus.IN_PROGRESS, assigned_to="w1"),
            Ticket("c", "after b", depends_on=["b"]),
        ],
    )  # fmt: skip
    TrackStore(base).save(track)
    return track


def test_restart_shows_the_track_and_resumes_it(make_controller, app_dir: Path) -> None:
    stored_track(app_dir)
    client = FakeTierClient()
    ctrl = wired(make_controller, client)
    ctrl.clutch.set_policy("auto")
    assert ctrl.fields.get("mma_active_track")["id"] == "resume_me"
    assert [t["status"] for t in ctrl.fields.get("mma_tickets")] == ["completed", "todo", "todo"]
    click(ctrl, "btn_mma_start_track", "resume_me")
    pump_until(ctrl, lambda: ctrl.state.mma_status == "done")
    assert [c.ticket_id for c in client.calls] == ["b", "c"]
    assert "a: a done" in client.calls[0].message  # dependency results reach the worker


def test_shutdown_mid_run_puts_in_flight_tickets_back_to_todo(make_controller, app_dir: Path) -> None:
    stored_track(app_dir)
    hold = threading.Event()
    client = FakeTierClient(hold=hold, hold_timeout=5)
    ctrl = wired(make_controller, client)
    ctrl.clutch.set_policy("auto")
    click(ctrl, "btn_mma_start_track")
    pump_until(ctrl, lambda: client.calls)
    leftovers = ctrl.shutdown()
    hold.set()
    assert leftovers == []
    assert not [
        t for t in threading.enumerate() if t.name.startswith(("slop-mma-worker", "slop-mma-conductor"))
    ]
    state = tomllib.loads((app_dir / "conductor/tracks/resume_me/state.toml").read_text())
    assert [t["status"] for t in state["tickets"]] == ["completed", "todo", "todo"]
    meta = json.loads((app_dir / "conductor/tracks/resume_me/metadata.json").read_text())
    assert meta["status"] == "paused"


def test_pause_resume_abort_and_manual_blocks(make_controller, app_dir: Path) -> None:
    stored_track(app_dir)
    gate = threading.Event()

    def respond(call: Call) -> str:
        gate.wait(5)
        return default_responder(call)

    ctrl = wired(make_controller, FakeTierClient(respond=respond))
    ctrl.clutch.set_policy("auto")
    click(ctrl, "btn_mma_block_ticket", {"ticket_id": "c", "reason": "waiting for design"})
    assert ctrl.state.mma_tickets[2]["blocked_reason"] == "waiting for design"
    click(ctrl, "btn_mma_set_ticket_model", {"ticket_id": "b", "model": "big"})
    assert TrackStore(app_dir).load("resume_me").ticket("b").model_override == "big"
    click(ctrl, "btn_mma_unblock_ticket", "c")
    click(ctrl, "btn_mma_start_track")
    pump_until(ctrl, lambda: ctrl.state.mma_status == "running" and ctrl.state.active_tier == "Tier 3")
    click(ctrl, "btn_mma_pause")
    gate.set()
    pump_until(
        ctrl, lambda: ctrl.state.mma_status == "paused" and ctrl.state.mma_tickets[1]["status"] == "completed"
    )
    assert ctrl.state.mma_tickets[2]["status"] == "todo"  # paused: c does not start
    gate.clear()
    click(ctrl, "btn_mma_resume")
    pump_until(ctrl, lambda: ctrl.state.mma_tickets[2]["status"] == "in_progress")
    click(ctrl, "btn_mma_abort")
    gate.set()
    pump_until(ctrl, lambda: ctrl.state.mma_status == "aborted")
    assert ctrl.state.mma_tickets[2]["status"] == "killed"
    with pytest.raises(InvalidValue, match="completed"):
        ctrl.actions.invoke("btn_mma_block_ticket", {"ticket_id": "a", "reason": "x"})


def test_patches_obey_the_file_tools_path_policy(make_controller, app_dir: Path) -> None:
    stored_track(app_dir)
    hold = threading.Event()
    ctrl = wired(make_controller, FakeTierClient(hold=hold, hold_timeout=5))
    ctrl.clutch.set_policy("auto")
    click(ctrl, "btn_mma_start_track")
    check = mma_runtime(ctrl).conductor.config.path_check
    hold.set()
    pump_until(ctrl, lambda: ctrl.state.mma_status == "done")
    assert check(app_dir / "src" / "mod.py") is None
    assert "open project file" in check(app_dir / "manual_slop.toml")  # the tools' write protection
    assert "outside the project" in check(app_dir.parent / "elsewhere.py")
    assert check(app_dir / "credentials.toml") is not None and check(app_dir / ".git" / "config") is not None


def test_mma_settings_live_in_the_project_file(make_controller, app_dir: Path) -> None:
    (app_dir / "manual_slop.toml").write_text(
        '[mma]\ntier1_model = "planner"\ntier3_models = ["s", "m", "l"]\n'
    )
    ctrl = make_controller()
    assert ctrl.fields.get("mma_tier1_model") == "planner" and ctrl.fields.get("mma_tier3_models") == [
        "s",
        "m",
        "l",
    ]
    assert ctrl.fields.get("mma_max_workers") == 4
    with pytest.raises(InvalidValue, match="between 1 and 16"):
        ctrl.fields.validate_set("mma_max_workers", 0)
    ctrl.fields.set("mma_max_workers", 2)
    ctrl.flush()
    saved = tomllib.loads((app_dir / "manual_slop.toml").read_text())["mma"]
    assert saved["max_workers"] == 2 and saved["tier1_model"] == "planner"


def test_archiving_a_track_moves_its_folder_aside(make_controller, app_dir: Path) -> None:
    from manual_slop.mma.bindings import mma_runtime
    from manual_slop.mma.models import Track

    ctrl = make_controller()
    runtime = mma_runtime(ctrl)
    track = Track(id="old-track", title="Old work")
    runtime.store().save(track)
    runtime.load_tracks()
    assert [t["id"] for t in ctrl.fields.get("mma_tracks")] == ["old-track"]
    ctrl.actions.invoke("btn_mma_archive_track", "old-track")
    assert ctrl.fields.get("mma_tracks") == []
    archived = list((app_dir / "conductor" / "tracks" / "archived").iterdir())
    assert len(archived) == 1 and (archived[0] / "metadata.json").exists()  # nothing deleted
    runtime.load_tracks()
    assert ctrl.fields.get("mma_tracks") == []  # an archived track is not read back as a track
    with pytest.raises(InvalidValue, match="no track 'old-track'"):
        ctrl.actions.invoke("btn_mma_archive_track", "old-track")
