"""Plans across an app restart (a new controller on the same folder): a plan file left under way
by a killed app is shown as interrupted (``running`` → ``paused``, ``planning`` → ``failed``), and
a plan left waiting for approval by a closed app can be proposed again (``btn_plan_propose``)
and run."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from manual_slop.hooks.errors import HookTaskFailed
from manual_slop.plan.model import Plan, PlanStatus, Subtask, SubtaskStatus
from manual_slop.plan.store import PlanStore
from tests.fakes import OpenAIFake, Reply
from tests.integration.hooks.conftest import HookAppFactory, wait_until
from tests.integration.plan.conftest import plan_reply
from tests.integration.plan.test_plan_e2e import wait_plan
from tests.integration.plan.test_plan_flow import (
    ENDED,
    counts,
    plan_app,
    plan_file,
    respond,
    start_plan,
    two_step_plan,
    wait_dialog,
    wait_file,
)


def stored_plan(base: Path, plan_id: str, status: PlanStatus, *, subtasks: bool = True) -> None:
    members = []
    if subtasks:
        members = [
            Subtask("S1", "Design", "Design the API", "architect", "llm", 1, [],
                    status=SubtaskStatus.COMPLETED, attempts=1),
            Subtask("S2", "Code", "Code the routes", "coder", "llm", 2, ["S1"],
                    status=SubtaskStatus.RUNNING, attempts=1),
        ]  # fmt: skip
    plan = Plan(plan_id, f"goal of {plan_id}", members, "combine" if subtasks else "", status,
                {"created_at": "2026-01-01T10:00:00"})  # fmt: skip
    PlanStore(base).save(plan)


def test_plans_left_under_way_by_a_killed_app_are_shown_as_interrupted(
    hook_app_factory: HookAppFactory, app_dir: Path
) -> None:
    ids = {}
    for second, (name, status) in enumerate(
        [("running", PlanStatus.RUNNING), ("planning", PlanStatus.PLANNING), ("merging", PlanStatus.MERGING),
         ("done", PlanStatus.DONE), ("proposed", PlanStatus.PROPOSED)]
    ):  # fmt: skip
        ids[name] = f"20260101-10000{second}_was-{name}"
        stored_plan(app_dir, ids[name], status, subtasks=name != "planning")
    app = hook_app_factory()
    api = app.client()

    listed = {p["id"]: p["status"] for p in api.get("/api/plans")["plans"]}
    assert listed == {
        ids["running"]: "paused", ids["planning"]: "failed", ids["merging"]: "paused",
        ids["done"]: "done", ids["proposed"]: "proposed",
    }  # fmt: skip
    for name in ("running", "planning", "merging"):
        shown = api.get(f"/api/plans/{ids[name]}")["plan"]
        assert shown["status"] == listed[ids[name]]
        assert "the app ended while the plan was under way" in shown["metadata"]["interrupted"], name
        on_disk = plan_file(app, ids[name])  # the file says so too
        assert on_disk["status"] == listed[ids[name]] and on_disk["metadata"]["interrupted"]
    for name in ("done", "proposed"):
        assert "interrupted" not in plan_file(app, ids[name])["metadata"]


def test_a_subtask_left_running_by_a_killed_app_is_not_shown_running(
    hook_app_factory: HookAppFactory, app_dir: Path
) -> None:
    stored_plan(app_dir, "20260101-100000_was-running", PlanStatus.RUNNING)
    app = hook_app_factory()
    api = app.client()
    plan = api.get("/api/plans/20260101-100000_was-running")["plan"]
    assert plan["status"] == "paused"
    # like MMA's tickets after a restart (in_progress -> todo) and a clean shutdown (stop() requeues),
    # the subtask that was running is waiting again: nothing runs in a paused plan
    assert [(s["id"], s["status"]) for s in plan["subtasks"]] == [("S1", "completed"), ("S2", "pending")]
    summary = next(p for p in api.get("/api/plans")["plans"] if p["id"] == plan["id"])
    assert summary["counts"]["running"] == 0
    assert plan_file(app, plan["id"])["subtasks"][1]["status"] == "pending"


def test_a_proposal_left_open_by_a_closed_app_is_proposed_again_and_runs(
    hook_app_factory: HookAppFactory, fake: OpenAIFake
) -> None:
    first, first_api = plan_app(hook_app_factory, fake)
    fake.responder = respond({
        "planner": plan_reply(two_step_plan()),
        "subtask:S1": Reply("S1 done"), "subtask:S2": Reply("S2 done"), "merge": Reply("Merged."),
    })  # fmt: skip
    plan_id = start_plan(first, "Build a tiny REST API")
    wait_dialog(first_api, plan_id)
    # the user closes the app with the proposal still open
    assert first.server.stop() == []
    first.ctrl.request_stop()
    wait_until(lambda: not [t for t in threading.enumerate() if t.name == "test-ticker"], timeout=5.0)
    first.ctrl.bind_main_thread()
    assert first.ctrl.shutdown() == []
    assert plan_file(first, plan_id)["status"] == "proposed"

    app, api = plan_app(hook_app_factory, fake)  # the app again, on the same folder
    assert [(p["id"], p["status"]) for p in api.get("/api/plans")["plans"]] == [(plan_id, "proposed")]
    assert api.pending() == []  # nothing is asked before the user says so
    api.wait_for_task(api.click("btn_plan_propose", plan_id))
    dialog = wait_dialog(api, plan_id)
    with pytest.raises(HookTaskFailed, match="already waiting for approval"):
        api.wait_for_task(api.click("btn_plan_propose", plan_id))
    api.approve(dialog["id"])
    plan = wait_plan(api, plan_id, ENDED)
    assert plan["status"] == "done", plan["metadata"]
    assert counts(fake) == {"planner": 1, "execution": 2, "merge": 1}  # planned once, run once
    wait_file(app, plan_id, "done")
    with pytest.raises(HookTaskFailed, match="is done; only a proposed plan waits for approval"):
        api.wait_for_task(api.click("btn_plan_propose", plan_id))
    with pytest.raises(HookTaskFailed, match="no plan 'nope'"):
        api.wait_for_task(api.click("btn_plan_propose", "nope"))
