"""A plan whose subtask runs on the ``aider`` engine, over the Hook API: the real Aider CLI (from
``.tools/aider``) edits a scratch copy, and its diff waits in ``/api/pending`` as an
``apply_patch`` tool approval. Rejecting leaves the project untouched; approving applies exactly
that diff. The planner (as DeepSeek) and Aider's endpoint (the OpenAI-compatible provider) are
the same wire-level fake, answering by content."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.fakes import OpenAIFake, Recorded, Reply
from tests.integration.hooks.conftest import HookAppFactory, deepseek_app
from tests.integration.plan.conftest import plan_reply, scripted
from tests.integration.plan.test_aider_engine import aider_installed  # noqa: F401  (the fixture)
from tests.integration.plan.test_plan_e2e import approve_plan, wait_plan

HELLO = 'def greet():\n    return "hello"\n'
WORLD = 'def greet():\n    return "hello, world"\n'
PLAN = {
    "subtasks": [
        {"id": "S1", "title": "Greet the world", "objective": "Make greet() in hello.py say hello, world",
         "agent_key": "coder", "engine": "aider", "parallel_group": 1, "depends_on": [],
         "files": ["hello.py"]},
    ],
    "merge": {"strategy": "Report the change"},
}  # fmt: skip


def is_aider(request: Recorded) -> bool:
    """Aider's own request: its system prompt, our subtask's prompt as the message."""
    return "Act as an expert software developer" in json.dumps(request.body)


def wait_patch_dialog(api, plan_id: str, timeout: float = 90.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        for dialog in api.pending():
            if dialog["kind"] == "tool_approval" and dialog["payload"]["tool"] == "apply_patch":
                return dialog
        plan = api.get(f"/api/plans/{plan_id}")["plan"]
        errors = [s["error"] for s in plan["subtasks"] if s["error"]]
        assert not errors and plan["status"] in ("proposed", "running"), f"{plan['status']}: {errors}"
        assert time.monotonic() < deadline, "aider's diff never reached /api/pending"
        time.sleep(0.05)


def test_aider_diff_waits_for_approval_reject_then_approve(
    hook_app_factory: HookAppFactory, fake: OpenAIFake, aider_installed: None  # noqa: F811
) -> None:
    app, api = deepseek_app(hook_app_factory, fake.base_url)
    base = Path(app.ctrl.base_dir())
    target = base / "hello.py"
    target.write_text(HELLO)
    for name, value in (
        ("current_provider", "openai_compatible"),
        ("provider_base_url", fake.base_url + "/v1"),
        ("current_model", "fake-coder"),
        ("current_provider", "deepseek"),
    ):
        api.wait_for_task(api.set_value(name, value))
    assert app.call("PUT", "/api/agents/coder", {"system_prompt": "You are the coder agent."}).status == 200
    assert api.get_value("plan_engines")["aider"] is None  # installed, and an endpoint is set
    merged = Reply("Merged: greet() says hello, world.")
    fake.responder = scripted({"planner": plan_reply(PLAN), "merge": merged})

    def aider_answers(request: Recorded):
        return Reply(f"hello.py\n```\n{WORLD}```\n") if is_aider(request) else None

    chained = fake.responder
    fake.responder = lambda request: aider_answers(request) or chained(request)

    # 1. rejected: the project stays as it was; the subtask fails without a retry
    first = app.call("POST", "/api/plan", {"goal": "Greet the world"}).body["plan_id"]
    approve_plan(api, first)
    dialog = wait_patch_dialog(api, first)
    diff = dialog["payload"]["diff"]
    assert '-    return "hello"' in diff and '+    return "hello, world"' in diff
    assert target.read_text() == HELLO  # nothing touched the project before the decision
    api.reject(dialog["id"], reason="not like this")
    plan = wait_plan(api, first, {"failed", "done", "aborted"}, timeout=60)
    assert plan["status"] == "failed" and "not like this" in plan["subtasks"][0]["error"]
    assert target.read_text() == HELLO
    assert sum(is_aider(c) for c in fake.model_calls()) == 1  # a rejection is not retried

    # 2. approved: exactly that diff is applied, and the plan is merged
    second = app.call("POST", "/api/plan", {"goal": "Greet the world again"}).body["plan_id"]
    approve_plan(api, second)
    dialog = wait_patch_dialog(api, second)
    api.approve(dialog["id"])
    plan = wait_plan(api, second, {"failed", "done", "aborted"}, timeout=60)
    assert plan["status"] == "done", plan["metadata"]
    assert target.read_text() == WORLD
    result = (base / plan["subtasks"][0]["result_path"]).read_text()
    assert "hello.py" in result
    assert plan["merge_result"].startswith("Merged: greet() says hello, world.")
    # Aider's exchange is a stored conversation like every subtask's
    store = app.ctrl.memory.service.store
    attempt = plan["subtasks"][0]["attempts"]
    events = store.events(f"plan:{second}:S1:{attempt}")
    assert [e.kind for e in events] == ["user", "respond"] and "hello.py" in events[1].content
