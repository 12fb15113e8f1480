"""/plan end to end over the Hook API: the real AI client against the wire-level fake
OpenAI-compatible server (as DeepSeek) answering by content; fixture agents ``architect`` and
``coder``. Every reply is checked against /openapi.json."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.fakes import OpenAIFake, Reply
from tests.integration.hooks.conftest import HookAppFactory, deepseek_app
from tests.integration.plan.conftest import ARCHITECT, CODER, PLAN, phase_of, plan_reply, scripted

LONG = "S2 result: routes GET /items and POST /items. " + "x" * 3000 + " TAIL-BEYOND-2000"
JUDGE = '{"score": 8, "verdict": "good", "reasons": ["covers the endpoints", "has tests"]}'
LIMITS = {"planner": 768, "execution": 512, "merge": 2048, "judge": 1024}


def wait_plan(api, plan_id: str, statuses: set[str], timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        plan = api.get(f"/api/plans/{plan_id}")["plan"]
        if plan["status"] in statuses:
            return plan
        assert time.monotonic() < deadline, f"plan stayed {plan['status']}: {json.dumps(plan)[:2000]}"
        time.sleep(0.05)


def approve_plan(api, plan_id: str, timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        for dialog in api.pending():
            if dialog["kind"] == "mma_step" and dialog["payload"]["ticket_id"] == plan_id:
                api.approve(dialog["id"])
                return dialog
        assert time.monotonic() < deadline, "the plan was never proposed"
        time.sleep(0.02)


def test_plan_runs_groups_in_parallel_merges_and_is_judged(
    hook_app_factory: HookAppFactory, fake: OpenAIFake
) -> None:
    app, api = deepseek_app(hook_app_factory, fake.base_url)
    for key, body in (("architect", ARCHITECT), ("coder", CODER)):
        assert app.call("PUT", f"/api/agents/{key}", body).status == 200
    api.wait_for_task(api.set_value("plan_judge", "deepseek"))
    fake.responder = scripted({
        "planner": plan_reply(),
        "subtask:S1": Reply("S1 result: the schema has /items."),
        "subtask:S2": Reply(LONG, delay=0.6),
        "subtask:S3": Reply("S3 result: tests for /items.", delay=0.6),
        "merge": Reply("Merged: a tiny REST API with tests."),
        "judge": Reply(JUDGE),
    })  # fmt: skip

    request_id = api.send("/plan Build a tiny REST API")
    answer = api.get(f"/api/requests/{request_id}")
    assert answer["state"] == "done" and "Plan " in answer["response"]
    plans = api.get("/api/plans")["plans"]
    assert len(plans) == 1 and plans[0]["goal"] == "Build a tiny REST API"
    plan_id = plans[0]["id"]
    assert plan_id in answer["response"]

    dialog = approve_plan(api, plan_id)
    shown = json.loads(dialog["payload"]["payload"])
    assert [s["id"] for s in shown["subtasks"]] == ["S1", "S2", "S3"] and shown["merge"] == PLAN["merge"]
    calls_when_approved = [phase_of(c) for c in fake.model_calls()]
    assert calls_when_approved == ["planner"]  # nothing ran before the approval

    plan = wait_plan(api, plan_id, {"done", "failed", "aborted"})
    assert plan["status"] == "done", plan["metadata"]
    subtasks = {s["id"]: s for s in plan["subtasks"]}
    assert all(s["status"] == "completed" for s in subtasks.values())
    # S2 and S3 (group 2) overlapped in time; S1 (group 1) finished before either started
    s1, s2, s3 = subtasks["S1"], subtasks["S2"], subtasks["S3"]
    assert max(s2["started_at"], s3["started_at"]) < min(s2["finished_at"], s3["finished_at"])
    assert s1["finished_at"] <= min(s2["started_at"], s3["started_at"])

    calls = fake.model_calls()
    by_phase: dict[str, list] = {}
    for call in calls:
        by_phase.setdefault(phase_of(call), []).append(call)
    assert {k: len(v) for k, v in by_phase.items()} == {"planner": 1, "execution": 3, "merge": 1, "judge": 1}
    for phase, recorded in by_phase.items():  # every request's max_tokens is its phase's limit
        assert {c.body["max_tokens"] for c in recorded} == {LIMITS[phase]}, phase

    merge = by_phase["merge"][0].body["messages"][-1]["content"]
    assert "S1 (Design the API):\nS1 result" in merge and "S3 (Write tests):\nS3 result" in merge
    assert LONG[:2000] in merge and LONG[:2001] not in merge and "TAIL-BEYOND-2000" not in merge
    assert "MERGE STRATEGY: Combine schema, code and tests into one answer" in merge

    # each subtask ran as its agent: the architect's prompt for S1, the coder's tools for S2
    s1_call = next(c for c in by_phase["execution"] if "Subtask S1" in c.body["messages"][-1]["content"])
    s2_call = next(c for c in by_phase["execution"] if "Subtask S2" in c.body["messages"][-1]["content"])
    assert "You are the architect agent" in json.dumps(s1_call.body)
    assert sorted(t["function"]["name"] for t in s2_call.body["tools"]) == ["list_directory", "read_file"]
    assert "S1 result: the schema has /items." in s2_call.body["messages"][-1]["content"]  # its dependency

    # the plan file on disk: results, merge, judge
    base = Path(app.ctrl.base_dir())
    on_disk = json.loads((base / "conductor" / "plans" / f"{plan_id}.json").read_text())
    assert on_disk["status"] == "done"
    assert on_disk["metadata"]["judge"]["score"] == 8 and on_disk["metadata"]["judge"]["verdict"] == "good"
    assert (base / on_disk["metadata"]["merge_result_path"]).read_text().startswith("Merged: a tiny REST API")
    for subtask in on_disk["subtasks"]:
        assert (base / subtask["result_path"]).is_file()
        assert subtask["usage"]["output_tokens"] > 0
    assert plan["merge_result"].startswith("Merged: a tiny REST API")
    # every call is tagged with the tier it counts as: planner 1, subtasks 3, merge 2, judge 4
    requests = [e for e in api.comms(limit=1000)["entries"] if e["kind"] == "request"]
    assert sorted(e["source_tier"] for e in requests) == [
        "Tier 1",
        "Tier 2",
        "Tier 3",
        "Tier 3",
        "Tier 3",
        "Tier 4",
    ]
    # the plan ran as a track of the MMA runtime: the dashboard shows it, groups as dependencies
    status = api.mma_status()
    assert status["active_track"]["id"] == plan_id and status["active_track"]["kind"] == "plan"
    deps = {t["id"]: t["depends_on"] for t in status["tickets"]}
    assert deps == {"S1": [], "S2": ["S1"], "S3": ["S1"]}
