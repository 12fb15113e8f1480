"""scripts/cli_tool_bridge.py against the real Hook API: it blocks in POST /api/ask until the
user (or the approval policy) decides, prints the CLI's decision, and denies whenever it
cannot get a decision."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from manual_slop.ai.providers.gemini_cli_home import bridge_script
from manual_slop.clutch import AllowRule
from tests.integration.gemini_cli.conftest import HookApp, HookAppFactory
from tests.integration.hooks.conftest import wait_until

TOKEN = "bridge-token-93ab"
SHELL_CALL = {
    "session_id": "s-1",
    "cwd": "/tmp",
    "hook_event_name": "BeforeTool",
    "tool_name": "run_shell_command",
    "tool_input": {"command": "echo hi > hi.txt", "description": "write hi"},
}


class Bridge:
    """One bridge process, as the CLI runs it."""

    running: list[subprocess.Popen[str]] = []  # killed after each test (a failed test leaves none)

    def __init__(self, call: Any, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-I", str(bridge_script())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={"PATH": os.environ.get("PATH", ""), **env},
            text=True,
        )
        Bridge.running.append(self.proc)
        assert self.proc.stdin is not None
        self.proc.stdin.write(call if isinstance(call, str) else json.dumps(call))
        self.proc.stdin.close()

    def decision(self, timeout: float = 20.0) -> dict[str, Any]:
        self.proc.wait(timeout)
        out, err = _read(self.proc)
        assert self.proc.returncode == 0, err  # exit 1 or silence would mean "allow" to the CLI
        lines = out.splitlines()
        assert len(lines) == 1, out
        return json.loads(lines[0])


def _read(proc: subprocess.Popen[str]) -> tuple[str, str]:
    assert proc.stdout is not None and proc.stderr is not None
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    return out, err


def bridge_env(app: HookApp, asks: Path | None = None, **extra: str) -> dict[str, str]:
    env = {"SLOP_HOOK_URL": app.url, "SLOP_HOOK_TOKEN": TOKEN, **extra}
    if asks is not None:
        env["SLOP_BRIDGE_ASKS"] = str(asks)
    return env


def one_pending(app: HookApp) -> dict[str, Any]:
    api = app.client()
    wait_until(lambda: len(api.pending()) == 1, timeout=10)
    return api.pending()[0]


@pytest.fixture(autouse=True)
def stop_bridges() -> Iterator[None]:
    yield
    for proc in Bridge.running:
        assert proc.stdout is not None
        if proc.poll() is None:
            proc.kill()
        proc.wait(5)
        if not proc.stdout.closed:
            _read(proc)
    Bridge.running.clear()


@pytest.fixture
def app(hook_app_factory: HookAppFactory) -> HookApp:
    return hook_app_factory(token=TOKEN, environ={"SLOP_HOOK_TOKEN": TOKEN})


def test_an_approved_call_is_allowed_as_asked(app: HookApp, tmp_path: Path) -> None:
    asks = tmp_path / "asks"
    asks.mkdir()
    bridge = Bridge(SHELL_CALL, bridge_env(app, asks))
    dialog = one_pending(app)
    assert dialog["kind"] == "ask"
    assert dialog["payload"]["tool"] == "run_shell_command"
    assert dialog["payload"]["args"] == SHELL_CALL["tool_input"]
    assert "run_shell_command" in dialog["payload"]["question"]
    assert bridge.proc.poll() is None  # it blocks until someone decides
    assert [m.name for m in asks.iterdir()] == [f"ask-{bridge.proc.pid}"]  # the provider's clock stops
    app.client().approve(dialog["id"])
    assert bridge.decision() == {"decision": "allow"}
    assert list(asks.iterdir()) == []


def test_edited_arguments_are_handed_to_the_cli(app: HookApp) -> None:
    bridge = Bridge(SHELL_CALL, bridge_env(app))
    edited = {"command": "echo edited > edited.txt"}
    app.client().approve(one_pending(app)["id"], {"args": edited})
    assert bridge.decision() == {"decision": "allow", "hookSpecificOutput": {"tool_input": edited}}


@pytest.mark.parametrize(
    ("reason", "expected"), [("not today", "REJECTED by user: not today"), ("", "REJECTED by user")]
)
def test_a_rejection_denies_with_the_users_reason(app: HookApp, reason: str, expected: str) -> None:
    bridge = Bridge(SHELL_CALL, bridge_env(app))
    app.client().reject(one_pending(app)["id"], reason)
    assert bridge.decision() == {"decision": "deny", "reason": expected}


def test_the_approval_policy_applies_to_cli_tools(app: HookApp) -> None:
    api = app.client()
    app.ctrl.clutch.set_rules([AllowRule("read_file", path_glob="docs/*")])
    api.wait_for_task(api.set_value("approval_policy", "allow_list"))
    read = {**SHELL_CALL, "tool_name": "read_file", "tool_input": {"file_path": "docs/a.md"}}
    assert Bridge(read, bridge_env(app)).decision() == {"decision": "allow"}  # the rule's glob matches
    elsewhere = Bridge({**read, "tool_input": {"file_path": "src/a.py"}}, bridge_env(app))
    api.reject(one_pending(app)["id"], "not there")  # outside the glob: the user decides
    assert elsewhere.decision()["decision"] == "deny"
    shell = Bridge(SHELL_CALL, bridge_env(app))  # no rule: the user decides
    api.reject(one_pending(app)["id"], "no")
    assert shell.decision()["decision"] == "deny"
    api.wait_for_task(api.set_value("approval_policy", "auto"))
    assert Bridge(SHELL_CALL, bridge_env(app)).decision() == {"decision": "allow"}
    audit = (app.ctrl.session_log.root / "audit.log").read_text()
    assert "tool=read_file path_glob=docs/*" in audit and "policy=auto" in audit


def test_nobody_deciding_in_time_is_a_denial(hook_app_factory: HookAppFactory, app_dir: Path) -> None:
    (app_dir / "config.toml").write_text("[approval]\ntimeout_s = 1.0\n")
    app = hook_app_factory()
    started = time.monotonic()
    decision = Bridge(SHELL_CALL, {"SLOP_HOOK_URL": app.url}).decision()
    assert decision["decision"] == "deny" and "approval timeout" in decision["reason"]
    assert time.monotonic() - started < 15


def test_the_bridge_fails_closed(app: HookApp, tmp_path: Path) -> None:
    cases = {
        "no url": {},
        "unreachable": {"SLOP_HOOK_URL": "http://127.0.0.1:9"},
        "bad url": {"SLOP_HOOK_URL": "ftp://example.invalid"},
        "wrong token": {"SLOP_HOOK_URL": app.url, "SLOP_HOOK_TOKEN": "wrong"},
        "tools off": {**bridge_env(app), "SLOP_BRIDGE_DENY": "tools are off for this request"},
    }
    reasons = {name: Bridge(SHELL_CALL, env).decision() for name, env in cases.items()}
    assert all(d["decision"] == "deny" for d in reasons.values()), reasons
    assert "Hook API is not running" in reasons["no url"]["reason"]
    assert "unreachable" in reasons["unreachable"]["reason"]
    assert "http://" in reasons["bad url"]["reason"]
    assert "SLOP_HOOK_TOKEN" in reasons["wrong token"]["reason"]
    assert reasons["tools off"]["reason"] == "tools are off for this request"
    for call in ("not json {", json.dumps({"tool_input": {}}), json.dumps(["a list"])):
        decision = Bridge(call, bridge_env(app)).decision()
        assert decision["decision"] == "deny" and "the tool was not run" in decision["reason"]
    assert app.client().pending() == []  # none of these reached the user


def test_a_stopping_app_denies_waiting_calls(app: HookApp) -> None:
    bridge = Bridge(SHELL_CALL, bridge_env(app))
    one_pending(app)
    app.server.stop()
    decision = bridge.decision()
    assert decision["decision"] == "deny" and "shutting down" in decision["reason"]
