"""Run metrics end to end: the real AI client, as DeepSeek, talks HTTP to the fake
OpenAI-compatible server; its answers, a failure, tool calls and a guard trip are counted and
come back from GET /api/diagnostics under "metrics" (checked against /openapi.json);
btn_reset_metrics forgets them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes import Call, Fail, OpenAIFake, Reply
from tests.integration.hooks.conftest import HookAppFactory, deepseek_app


def test_provider_and_tool_metrics_and_guard_trips_reach_the_diagnostics_endpoint(
    hook_app_factory: HookAppFactory, app_dir: Path
) -> None:
    (app_dir / "notes.txt").write_text("remember the milk\n", encoding="utf-8")
    with OpenAIFake() as fake:
        app, api = deepseek_app(hook_app_factory, fake.base_url)
        fake.push(
            Reply("Looking.", [Call("read_file", {"path": "notes.txt"}), Call("no_such_tool", {})]),
            Reply("It says: remember the milk.", delay=0.05),
            Fail(401),  # auth: not retried, the request fails
        )
        first = api.wait_for_request(api.send("what do my notes say?"), timeout=30)
        assert first["state"] == "done", first
        second = api.wait_for_request(api.send("and now?"), timeout=30)
        assert second["state"] == "error", second
        # the loop guard (another part of the tool loop) announces its trips on the same emitter
        app.ctrl.backend.events.emit("guard_trip", kind="repeat_refused", tool="read_file")

        metrics = api.diagnostics()["metrics"]
        [provider] = metrics["providers"]
        assert provider["provider"] == "deepseek" and provider["model"]
        assert (provider["requests"], provider["ok"], provider["failures"]) == (3, 2, 1)
        assert provider["failures_by_kind"] == {"auth": 1}
        assert provider["failure_rate"] == pytest.approx(1 / 3, abs=1e-4)
        assert provider["samples"] == 2 and provider["p95_ms"] >= provider["p50_ms"] > 0
        assert provider["p95_ms"] >= 50.0 * 0.9  # the delayed answer is the slow one
        tools = {t["tool"]: t for t in metrics["tools"]}
        assert set(tools) == {"read_file", "no_such_tool"}
        read = tools["read_file"]
        assert (read["calls"], read["errors"], read["by_status"]) == (1, 0, {"success": 1})
        assert read["samples"] == 1 and read["p50_ms"] is not None and read["guard_trips"] == 1
        unknown = tools["no_such_tool"]
        assert (unknown["calls"], unknown["errors"], unknown["failure_rate"]) == (1, 1, 1.0)
        # the loop itself counted the unknown tool; the test emitted the refusal
        assert metrics["guard_trips"] == {"total": 2, "by_kind": {"repeat_refused": 1, "unknown_tool": 1}}

        api.wait_for_task(api.click("btn_reset_metrics"))
        cleared = api.diagnostics()["metrics"]
        assert cleared["providers"] == [] and cleared["tools"] == [] and cleared["guard_trips"]["total"] == 0
        assert cleared["since"] > metrics["since"]
