"""A /plan from the MMA Dashboard in the real window: the goal typed in the Plan box, the
proposal approved in the Approve MMA Step modal, the plan run by the real AI client against the
wire-level fake provider (as DeepSeek; agents ``architect`` and ``coder``), and the dashboard's
plan view showing goal, status, groups, each subtask's agent, engine, status and tokens, and the
judge's score and verdict."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from imgui_bundle.immapp import testing

from manual_slop.ai import AIClient, RetryPolicy
from tests.fakes import OpenAIFake, Reply
from tests.gui.conftest import frames_until
from tests.integration.plan.conftest import ARCHITECT, CODER, plan_reply, scripted

JUDGE = '{"score": 8, "verdict": "good", "reasons": ["covers the endpoints", "has tests"]}'
GOAL = "Build a tiny REST API"
MERGED = "//MMA Dashboard/Merged answer##plan_merged"
PLAN_FRAMES = 6000  # the plan runs on the fake provider: give it time, not frames


@pytest.fixture
def fake() -> Iterator[OpenAIFake]:
    with OpenAIFake() as server:
        yield server


def test_a_plan_started_from_the_dashboard_runs_and_shows_agents_groups_and_judge(
    make_controller, run_gui, artifacts: Path, fake: OpenAIFake
) -> None:
    ctrl = make_controller(
        backend=AIClient(retry=RetryPolicy(base_delay_s=0.01)), environ={"DEEPSEEK_API_KEY": "sk-gui"}
    )
    ctrl.bind_main_thread()
    ctrl.fields.set("current_provider", "deepseek")
    ctrl.fields.set("provider_base_url", fake.base_url)
    ctrl.fields.set("plan_judge", "deepseek")
    for key, body in (("architect", ARCHITECT), ("coder", CODER)):
        ctrl.actions.invoke("btn_agent_save", {"key": key, **body})
    fake.responder = scripted({
        "planner": plan_reply(),
        "subtask:S1": Reply("S1 result: the schema has /items."),
        "subtask:S2": Reply("S2 result: routes GET /items and POST /items."),
        "subtask:S3": Reply("S3 result: tests for /items."),
        "merge": Reply("Merged: a tiny REST API with tests."),
        "judge": Reply(JUDGE),
    })  # fmt: skip
    seen: dict[str, object] = {}

    def plan_status() -> str:
        return str(ctrl.state.plans[-1]["status"]) if ctrl.state.plans else ""

    def judged() -> bool:
        cache = app_ref[0].gui.plan_cache
        return cache is not None and cache.data is not None and "judge" in cache.data["metadata"]

    app_ref: list = []

    def test(ctx, app) -> None:
        app_ref.append(app)
        ctx.yield_(5)
        app.focus("MMA Dashboard")
        ctx.yield_(3)
        ctx.item_click("**/##plan_goal")
        ctx.key_chars(GOAL)
        ctx.item_click("**/Plan…##plan_start")
        frames_until(ctx, lambda: bool(ctrl.state.pending_dialogs), PLAN_FRAMES)
        seen["proposed"] = plan_status()
        ctx.item_click("//Approve MMA Step/Approve")
        frames_until(ctx, lambda: plan_status() == "done", PLAN_FRAMES)
        frames_until(ctx, judged, PLAN_FRAMES)
        seen["track"] = dict(ctrl.state.active_track or {})
        seen["response"] = ctrl.state.ai_response
        app.focus("MMA Dashboard")  # the merged answer brought the Response tab forward
        ctx.yield_(3)
        ctx.item_open(MERGED)  # a full path: wildcards miss it
        ctx.scroll_to_item_y(MERGED)
        ctx.yield_(4)
        testing.capture(ctx, str(artifacts / "plan_dashboard.png"), window="MMA Dashboard")
        ctx.scroll_to_top("//MMA Dashboard")
        ctx.yield_(3)
        testing.capture(ctx, str(artifacts / "plan_dashboard_plans.png"), window="MMA Dashboard")
        app.focus("Task DAG")
        ctx.yield_(10)
        testing.capture(ctx, str(artifacts / "plan_task_dag.png"), window="Task DAG")

    run_gui(ctrl, test)
    assert seen["proposed"] == "proposed"
    assert seen["track"]["kind"] == "plan" and seen["track"]["title"] == GOAL, seen["track"]
    summary = ctrl.state.plans[-1]
    assert summary["goal"] == GOAL and summary["groups"] == [["S1"], ["S2", "S3"]] and summary["score"] == 8
    data = app_ref[0].gui.plan_cache.data  # what the plan view drew from
    assert data["id"] == summary["id"] and data["status"] == "done"
    shown = {s["id"]: (s["agent_key"], s["engine"], s["status"]) for s in data["subtasks"]}
    assert shown == {
        "S1": ("architect", "llm", "completed"),
        "S2": ("coder", "llm", "completed"),
        "S3": ("coder", "llm", "completed"),
    }
    assert all(s["usage"]["output_tokens"] > 0 for s in data["subtasks"])
    assert data["metadata"]["judge"]["verdict"] == "good"
    assert data["merge_result"].startswith("Merged: a tiny REST API")
    assert str(seen["response"]).startswith("Merged: a tiny REST API")
