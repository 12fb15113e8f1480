"""A key planted in a model's answers never reaches a plan's files, its API replies or its events."""

from __future__ import annotations

import json
from pathlib import Path

from manual_slop.ai import AIClient, RetryPolicy
from tests.fakes import OpenAIFake, Reply
from tests.integration.hooks.conftest import HookAppFactory
from tests.integration.plan.conftest import ARCHITECT, CODER, plan_reply, scripted
from tests.integration.plan.test_plan_e2e import approve_plan, wait_plan

KEY = "sk-deepseek-planted-7f3a9c21e0b4"


def test_a_key_in_the_answers_is_redacted_everywhere_the_plan_writes(
    hook_app_factory: HookAppFactory, fake: OpenAIFake
) -> None:
    app = hook_app_factory(
        backend=AIClient(retry=RetryPolicy(base_delay_s=0.01)), environ={"DEEPSEEK_API_KEY": KEY}
    )
    api = app.client()
    for name, value in (("current_provider", "deepseek"), ("provider_base_url", fake.base_url)):
        api.wait_for_task(api.set_value(name, value))
    for key, body in (("architect", ARCHITECT), ("coder", CODER)):
        assert app.call("PUT", f"/api/agents/{key}", body).status == 200
    leak = f"the key is {KEY}"
    fake.responder = scripted({
        "planner": plan_reply(),
        "subtask:S1": Reply(f"S1: {leak}"), "subtask:S2": Reply(f"S2: {leak}"), "subtask:S3": Reply("S3"),
        "merge": Reply(f"Merged, and {leak}"),
    })  # fmt: skip

    plan_id = app.call("POST", "/api/plan", {"goal": f"Build it ({leak})"}).body["plan_id"]
    approve_plan(api, plan_id)
    plan = wait_plan(api, plan_id, {"done", "failed", "aborted"})
    assert plan["status"] == "done", plan["metadata"]

    plans = Path(app.ctrl.base_dir()) / "conductor"
    written = [p for p in plans.rglob("*") if p.is_file()]
    assert len(written) >= 8  # the plan file, 3 results, the merge, the track's files
    for path in written:
        assert KEY not in path.read_text(encoding="utf-8"), path
    assert "S1: the key is" in (plans / "plans" / plan_id / "S1.md").read_text()  # the rest is kept
    assert KEY not in json.dumps(api.get(f"/api/plans/{plan_id}"))
    assert KEY not in json.dumps(api.get("/api/plans")) and KEY not in json.dumps(api.events())
    assert KEY not in json.dumps([c.body for c in fake.model_calls()])  # nor sent to the model again
