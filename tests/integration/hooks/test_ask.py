"""POST /api/ask blocks on the Execution Clutch until another client (or the GUI) decides."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from manual_slop.hooks import RequestTimedOut
from tests.integration.hooks.conftest import HookApp


def ask_in_thread(app: HookApp, **kwargs: Any) -> tuple[threading.Thread, list[Any]]:
    result: list[Any] = []

    def run() -> None:
        try:
            result.append(app.client().request_confirmation(**kwargs))
        except Exception as exc:
            result.append(exc)

    thread = threading.Thread(target=run, name="test-asker")
    thread.start()
    return thread, result


def first_pending(app: HookApp, timeout: float = 5.0) -> dict[str, Any]:
    client = app.client()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pending = client.pending()
        if pending:
            return pending[0]
        time.sleep(0.01)
    raise AssertionError("no pending dialog appeared")


def test_an_ask_is_answered_from_another_client(hook_app: HookApp) -> None:
    thread, result = ask_in_thread(hook_app, tool="run_shell_command", args={"command": "rm -rf /tmp/x"})
    dialog = first_pending(hook_app)
    assert dialog["kind"] == "ask"
    assert dialog["payload"] == {
        "question": "Allow run_shell_command?",
        "tool": "run_shell_command",
        "args": {"command": "rm -rf /tmp/x"},
    }
    other = hook_app.client()
    other.approve(dialog["id"], {"args": {"command": "rm -rf /tmp/x/cache"}, "answer": "only the cache"})
    thread.join(5)
    assert result[0] == {
        "approved": True,
        "answer": "only the cache",
        "args": {"command": "rm -rf /tmp/x/cache"},
        "id": dialog["id"],
        "reason": None,
    }
    audit = hook_app.ctrl.session_log.read("audit")[-1]
    assert audit["decider"] == "hook" and audit["edited"] is True


def test_a_rejected_ask_carries_the_reason(hook_app: HookApp) -> None:
    thread, result = ask_in_thread(hook_app, tool="write_file", args={"path": "a.py"})
    hook_app.client().reject(first_pending(hook_app)["id"], reason="write tests first")
    thread.join(5)
    assert result[0]["approved"] is False and result[0]["reason"] == "write tests first"
    assert result[0]["args"] == {"path": "a.py"}


def test_an_unanswered_ask_times_out_with_408(hook_app: HookApp) -> None:
    with pytest.raises(RequestTimedOut, match=r"no decision within 0\.5 s"):
        hook_app.client().ask("anyone?", timeout_s=0.5)
    assert hook_app.client().pending() == []
    assert hook_app.ctrl.session_log.read("audit")[-1]["decider"] == "timeout"


def test_the_gui_button_answers_an_ask(hook_app: HookApp) -> None:
    thread, result = ask_in_thread(hook_app, tool="shell", args={})
    first_pending(hook_app)
    client = hook_app.client()
    client.wait_for_value("pending_dialogs", lambda dialogs: len(dialogs) == 1)  # the GUI's mirror
    client.wait_for_task(client.click("btn_approve"))
    thread.join(5)
    assert result[0]["approved"] is True
    client.wait_for_value("pending_dialogs", lambda dialogs: dialogs == [])


def test_the_auto_policy_approves_at_once(hook_app: HookApp) -> None:
    client = hook_app.client()
    client.wait_for_task(client.set_value("approval_policy", "auto"))
    answer = client.request_confirmation("run_shell_command", {"command": "ls"}, timeout_s=30)
    assert answer["approved"] is True and answer["args"] == {"command": "ls"}


def test_an_external_tool_naming_a_secret_file_is_refused_by_policy(hook_app_factory, app_dir) -> None:
    (app_dir / ".env").write_text("TOKEN=abc\n")
    app = hook_app_factory()
    client = app.client()
    client.wait_for_task(client.set_value("approval_policy", "auto"))  # refused even when all is allowed
    reply = client.request_confirmation("read_file", {"file_path": ".env"})
    assert reply["approved"] is False and reply["reason"].startswith("ACCESS DENIED: '.env'")
    assert "(rule: env file)" in reply["reason"] and client.pending() == []
    audit = app.ctrl.session_log.read("audit")[-1]
    assert audit["decider"] == "policy" and audit["rule"] == "path policy" and audit["approved"] is False
