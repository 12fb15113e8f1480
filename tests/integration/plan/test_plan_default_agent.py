"""A project without agent profiles can still /plan: the planner is offered the built-in
``general`` agent, and its subtasks run with that agent's prompt and every tool."""

from __future__ import annotations

import json

from tests.fakes import OpenAIFake, Reply
from tests.integration.hooks.conftest import HookAppFactory, deepseek_app
from tests.integration.plan.conftest import last_user, phase_of, plan_reply, scripted
from tests.integration.plan.test_plan_e2e import approve_plan, wait_plan

PLAN = {
    "subtasks": [
        {"id": "S1", "title": "Say hello", "objective": "Write the greeting", "agent_key": "general",
         "engine": "llm", "parallel_group": 1, "depends_on": []},
    ],
    "merge": {"strategy": "Return the greeting"},
}  # fmt: skip


def test_without_profiles_the_general_agent_plans_and_runs(
    hook_app_factory: HookAppFactory, fake: OpenAIFake
) -> None:
    app, api = deepseek_app(hook_app_factory, fake.base_url)
    assert api.get("/api/agents")["agents"] == []
    fake.responder = scripted(
        {"planner": plan_reply(PLAN), "subtask:S1": Reply("hello"), "merge": Reply("Merged: hello")}
    )
    plan_id = app.call("POST", "/api/plan", {"goal": "Greet"}).body["plan_id"]
    approve_plan(api, plan_id)
    plan = wait_plan(api, plan_id, {"done", "failed", "aborted", "invalid"})
    assert plan["status"] == "done", plan["metadata"]
    calls = fake.model_calls()
    planner = next(c for c in calls if phase_of(c) == "planner")
    assert "- general: a general engineer" in last_user(planner)
    subtask = next(c for c in calls if phase_of(c) == "execution")
    assert "You are a careful software engineer" in json.dumps(subtask.body)
    assert len(subtask.body["tools"]) > 10  # every tool: the general agent limits none
    assert api.get("/api/agents")["agents"] == []  # nothing was written to agents/
