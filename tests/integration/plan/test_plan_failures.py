"""A plan that goes wrong, over the Hook API: a subtask whose model call keeps failing is retried,
then blocked; the planner is asked to replan behind an ``mma_step`` approval (approved: the new
subtasks run; rejected: the plan fails, and MMA's per-ticket retry runs it again); pause, resume
and abort of a running plan. The fake answers by content (see ``test_plan_flow.respond``)."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from tests.fakes import Fail, OpenAIFake, Reply
from tests.integration.hooks.conftest import HookAppFactory, wait_until
from tests.integration.plan.conftest import last_user, plan_reply
from tests.integration.plan.test_plan_e2e import wait_plan
from tests.integration.plan.test_plan_flow import (
    ENDED,
    calls_by_phase,
    counts,
    plan_app,
    plan_file,
    respond,
    start_plan,
    two_step_plan,
    wait_dialog,
    wait_file,
)

REPLAN = {
    "subtasks": [
        {"id": "S4", "title": "Implement routes simply", "objective": "Code the routes without a framework",
         "agent_key": "architect", "engine": "llm", "parallel_group": 1, "depends_on": ["S1"]},
    ],
    "merge": {"strategy": "Combine the schema and the simple routes"},
}  # fmt: skip
REFUSED = Fail(400, body={"error": {"message": "model refuses subtask S2", "type": "invalid_request_error"}})


def executed(fake: OpenAIFake, subtask: str) -> int:
    return sum(f"Subtask {subtask}:" in last_user(c) for c in calls_by_phase(fake).get("execution", []))


def plan_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(("slop-mma", "slop-plan"))]


def test_a_failing_subtask_is_retried_then_replanned_and_the_replan_runs(
    hook_app_factory: HookAppFactory, fake: OpenAIFake
) -> None:
    app, api = plan_app(hook_app_factory, fake)
    fake.responder = respond({
        "planner": plan_reply(two_step_plan()), "replan": plan_reply(REPLAN),
        "subtask:S1": Reply("S1 result: the schema."), "subtask:S2": REFUSED,
        "subtask:S4": Reply("S4 result: simple routes."), "merge": Reply("Merged after a replan."),
    })  # fmt: skip
    plan_id = start_plan(app, "Build a tiny REST API")
    api.approve(wait_dialog(api, plan_id)["id"])

    dialog = wait_dialog(api, plan_id)  # the replan's approval
    assert executed(fake, "S2") == 3  # the first attempt and max_retries (2) retries; a 400 is not retried
    on_disk = plan_file(app, plan_id)
    s2 = next(s for s in on_disk["subtasks"] if s["id"] == "S2")
    assert s2["status"] == "failed" and s2["attempts"] == 3
    assert "attempt 3" in s2["error"] and "model refuses subtask S2" in s2["error"]

    (replan_call,) = calls_by_phase(fake)["replan"]
    asked = last_user(replan_call)
    assert "Failed: S2 (Implement routes) on engine llm, agent coder." in asked
    assert "model refuses subtask S2" in asked
    assert "- S1 (Design the API): completed" in asked

    payload = json.loads(dialog["payload"]["payload"])
    assert set(payload) == {"replan", "replaces", "subtasks", "merge"}
    assert payload["replan"] == 1 and payload["replaces"] == ["S2"]
    assert [s["id"] for s in payload["subtasks"]] == ["S4"]
    api.approve(dialog["id"])

    plan = wait_plan(api, plan_id, ENDED)
    assert plan["status"] == "done", plan["metadata"]
    assert [(s["id"], s["status"]) for s in plan["subtasks"]] == [("S1", "completed"), ("S4", "completed")]
    s4_call = next(c for c in calls_by_phase(fake)["execution"] if "Subtask S4:" in last_user(c))
    assert "S1 result: the schema." in last_user(s4_call)  # it builds on the kept subtask
    merge = last_user(calls_by_phase(fake)["merge"][0])
    assert "S4 (Implement routes simply)" in merge and "Combine the schema and the simple routes" in merge
    on_disk = wait_file(app, plan_id, "done")
    assert on_disk["metadata"]["replan_count"] == 1
    assert [s["id"] for s in on_disk["subtasks"]] == ["S1", "S4"]
    assert on_disk["merge"]["strategy"] == "Combine the schema and the simple routes"
    assert executed(fake, "S2") == 3 and executed(fake, "S4") == 1


def test_a_rejected_replan_fails_the_plan_and_unblock_then_resume_finishes_it(
    hook_app_factory: HookAppFactory, fake: OpenAIFake
) -> None:
    app, api = plan_app(hook_app_factory, fake)
    fake.responder = respond({
        "planner": plan_reply(two_step_plan()), "replan": plan_reply(REPLAN),
        "subtask:S1": Reply("S1 result: the schema."),
        "subtask:S2": [REFUSED, REFUSED, REFUSED, Reply("S2 result: routes, at last.")],
        "merge": Reply("Merged after a retry."),
    })  # fmt: skip
    plan_id = start_plan(app, "Build a tiny REST API")
    api.approve(wait_dialog(api, plan_id)["id"])
    replan = wait_dialog(api, plan_id)
    assert set(json.loads(replan["payload"]["payload"])) == {"replan", "replaces", "subtasks", "merge"}
    api.reject(replan["id"], reason="retry it as it is")

    plan = wait_plan(api, plan_id, ENDED)
    assert plan["status"] == "failed"
    on_disk = wait_file(app, plan_id, "failed")
    assert on_disk["metadata"].get("replan_count", 0) == 0
    assert [(s["id"], s["status"], s["attempts"]) for s in on_disk["subtasks"]] == [
        ("S1", "completed", 1), ("S2", "failed", 3),
    ]  # fmt: skip
    assert counts(fake) == {"planner": 1, "execution": 4, "replan": 1}  # S1 once, S2 three times
    wait_until(lambda: not plan_threads(), timeout=3.0)

    # per-ticket retry, as in MMA: unblock the subtask, resume the track
    api.wait_for_task(api.click("btn_mma_unblock_ticket", "S2"))
    api.wait_for_task(api.click("btn_mma_resume"))
    plan = wait_plan(api, plan_id, {"done", "failed", "aborted"})
    assert plan["status"] == "done", plan["metadata"]
    assert [s["status"] for s in plan["subtasks"]] == ["completed", "completed"]
    assert executed(fake, "S2") == 4 and executed(fake, "S1") == 1  # only the unblocked subtask ran
    merge = last_user(calls_by_phase(fake)["merge"][0])
    assert "S2 result: routes, at last." in merge and "S1 result: the schema." in merge
    assert wait_file(app, plan_id, "done")["metadata"]["merge_result_path"]


def test_pause_starts_nothing_new_and_resume_continues(
    hook_app_factory: HookAppFactory, fake: OpenAIFake
) -> None:
    app, api = plan_app(hook_app_factory, fake)
    fake.responder = respond({
        "planner": plan_reply(),
        "subtask:S1": Reply("S1 done", delay=1.5), "subtask:S2": Reply("S2 done"),
        "subtask:S3": Reply("S3 done"), "merge": Reply("Merged."),
    })  # fmt: skip
    plan_id = start_plan(app, "Build a tiny REST API")
    api.approve(wait_dialog(api, plan_id)["id"])
    wait_until(lambda: executed(fake, "S1") == 1, timeout=10.0)
    api.wait_for_task(api.click("btn_mma_pause"))

    plan = wait_plan(api, plan_id, {"paused"}, timeout=10.0)
    wait_until(lambda: api.get(f"/api/plans/{plan_id}")["plan"]["subtasks"][0]["status"] == "completed")
    time.sleep(0.5)  # S2 and S3 are ready now; a paused plan must not start them
    assert executed(fake, "S2") == executed(fake, "S3") == 0
    plan = api.get(f"/api/plans/{plan_id}")["plan"]
    assert plan["status"] == "paused" and [s["status"] for s in plan["subtasks"]] == [
        "completed", "pending", "pending",
    ]  # fmt: skip
    assert wait_file(app, plan_id, "paused")["subtasks"][1]["status"] == "pending"

    api.wait_for_task(api.click("btn_mma_resume"))
    plan = wait_plan(api, plan_id, ENDED)
    assert plan["status"] == "done", plan["metadata"]
    assert counts(fake) == {"planner": 1, "execution": 3, "merge": 1}


def test_abort_during_a_long_subtask_ends_the_plan_aborted_at_once(
    hook_app_factory: HookAppFactory, fake: OpenAIFake
) -> None:
    app, api = plan_app(hook_app_factory, fake)
    fake.responder = respond({
        "planner": plan_reply(), "subtask:S1": Reply("S1 done, far too late", delay=30.0),
        "merge": Reply("never"),
    })  # fmt: skip
    plan_id = start_plan(app, "Build a tiny REST API")
    api.approve(wait_dialog(api, plan_id)["id"])
    wait_until(lambda: executed(fake, "S1") == 1, timeout=10.0)
    time.sleep(0.2)  # the request is in flight
    started = time.monotonic()
    api.wait_for_task(api.click("btn_mma_abort"))
    plan = wait_plan(api, plan_id, ENDED, timeout=5.0)
    elapsed = time.monotonic() - started
    assert plan["status"] == "aborted" and elapsed < 2.0, (plan["status"], elapsed)
    wait_until(lambda: not plan_threads(), timeout=2.0)
    assert plan["subtasks"][0]["status"] == "killed"
    on_disk: dict[str, Any] = wait_file(app, plan_id, "aborted")
    assert [s["status"] for s in on_disk["subtasks"]] == ["killed", "pending", "pending"]
    assert counts(fake) == {"planner": 1, "execution": 1}  # nothing after the abort, no merge
