"""A plan subtask on the ``gemini_cli`` engine: one run of the real Gemini CLI (``.tools/gemini-cli``)
against the wire-level Gemini fake, its shell command asking through the BeforeTool bridge in
``/api/pending`` like every tool call of the CLI. The planner and the merge are DeepSeek calls to
the OpenAI-compatible fake."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.fakes import Call, GeminiFake, OpenAIFake, Reply
from tests.integration.gemini_cli.conftest import (  # noqa: F401  (fixtures)
    KEY,
    MODEL,
    gemini_fake,
    no_cli_left_behind,
    real_cli,
)
from tests.integration.hooks.conftest import HookAppFactory
from tests.integration.plan.conftest import plan_reply, scripted
from tests.integration.plan.test_plan_e2e import approve_plan, wait_plan

TOKEN = "plan-cli-token-77aa"
PLAN = {
    "subtasks": [
        {"id": "S1", "title": "Write the note", "objective": "Write note.txt with the word hello",
         "agent_key": "coder", "engine": "gemini_cli", "parallel_group": 1, "depends_on": []},
    ],
    "merge": {"strategy": "Say what was written"},
}  # fmt: skip


def test_a_gemini_cli_subtask_asks_through_the_bridge(
    real_cli: Path,  # noqa: F811
    gemini_fake: GeminiFake,  # noqa: F811
    fake: OpenAIFake,
    hook_app_factory: HookAppFactory,
    app_dir: Path,
) -> None:
    (app_dir / "config.toml").write_text(
        f"[ai]\nprovider = 'deepseek'\n\n[providers.deepseek]\nbase_url = '{fake.base_url}'\n\n"
        f"[providers.gemini_cli]\nmodel = '{MODEL}'\nbase_url = '{gemini_fake.base_url}'\n"
        f"binary = '{real_cli}'\n"
    )
    from manual_slop.ai import AIClient, RetryPolicy

    app = hook_app_factory(
        token=TOKEN,
        backend=AIClient(retry=RetryPolicy(base_delay_s=0.01)),
        environ={"GEMINI_API_KEY": KEY, "DEEPSEEK_API_KEY": "sk-test", "SLOP_HOOK_TOKEN": TOKEN},
    )
    api = app.client()
    assert app.call("PUT", "/api/agents/coder", {"system_prompt": "You are the coder agent."}).status == 200
    assert api.get_value("plan_engines")["gemini_cli"] is None
    fake.responder = scripted({"planner": plan_reply(PLAN), "merge": Reply("Merged: note.txt says hello.")})
    gemini_fake.push(
        Reply("", [Call("run_shell_command", {"command": "echo hello > note.txt"})]),
        Reply("Wrote note.txt."),
    )

    plan_id = app.call("POST", "/api/plan", {"goal": "Write a note"}).body["plan_id"]
    approve_plan(api, plan_id)
    deadline = time.monotonic() + 90
    while not any(d["kind"] == "ask" for d in api.pending()):
        assert time.monotonic() < deadline, "the CLI's shell command never asked"
        assert api.get(f"/api/plans/{plan_id}")["plan"]["status"] in ("proposed", "running")
        time.sleep(0.05)
    ask = next(d for d in api.pending() if d["kind"] == "ask")
    assert ask["payload"]["tool"] == "run_shell_command"
    assert ask["payload"]["args"]["command"] == "echo hello > note.txt"
    assert not (app_dir / "note.txt").exists()  # nothing ran before the decision
    api.approve(ask["id"])

    plan = wait_plan(api, plan_id, {"done", "failed", "aborted"}, timeout=90)
    assert plan["status"] == "done", plan["metadata"]
    assert (app_dir / "note.txt").read_text() == "hello\n"
    result = (Path(app.ctrl.base_dir()) / plan["subtasks"][0]["result_path"]).read_text()
    assert result.strip() == "Wrote note.txt."
    sent = json.dumps(gemini_fake.model_calls()[0].body)
    assert "You are the coder agent." in sent and "Subtask S1: Write the note" in sent
    assert plan["merge_result"].startswith("Merged: note.txt says hello.")
