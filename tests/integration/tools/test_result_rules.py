"""after_tool and on_error rules in a running app: a tool's result held for a human (edited,
withheld), withheld at once by a deny, an error that ends the request; and no rule, no cost."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from manual_slop.cancel import CancelToken
from manual_slop.controller import AppController
from manual_slop.tools import ToolCall, ToolRegistry, ToolStatus, build_execution_context, default_registry
from tests.integration.tools.test_approval import Worker, next_pending

PROJECT = """\
[project]
name = "demo"

[files]
base_dir = "."
paths = ["src/*.py"]

[[approval.rules]]
name = "results-ask"
trigger = "after_tool"
tool = "read_file"
path_glob = "src/*.py"
action = "ask"

[[approval.rules]]
name = "keys"
trigger = "pattern"
pattern = "BEGIN [A-Z ]*PRIVATE KEY"
action = "deny"
priority = 10

[[approval.rules]]
name = "errors"
trigger = "on_error"
tool = "read_file"
action = "{on_error}"
"""


@pytest.fixture
def registry() -> ToolRegistry:
    return default_registry(with_powershell=False)


def app(app_dir: Path, make_controller, on_error: str = "deny") -> AppController:
    (app_dir / "src").mkdir(exist_ok=True)
    (app_dir / "src" / "main.py").write_text("print('hi')\n")
    (app_dir / "src" / "key.txt").write_text("-----BEGIN RSA PRIVATE KEY-----\nabc\n")
    (app_dir / "notes.md").write_text("# notes\n")
    (app_dir / "demo.toml").write_text(PROJECT.format(on_error=on_error))
    return make_controller(project_file=app_dir / "demo.toml")


def test_an_asked_result_reaches_the_model_as_the_human_edited_it(app_dir, make_controller, registry) -> None:
    ctrl = app(app_dir, make_controller)
    ctx = build_execution_context(ctrl)
    worker = Worker(registry, ctx, "read_file", path="src/main.py")
    dialog = next_pending(ctrl)
    assert dialog.kind == "tool_result" and dialog.to_dict()["rule"] == "results-ask"
    assert dialog.payload["status"] == "success" and "print('hi')" in dialog.payload["result"]
    ctrl.clutch.resolve(dialog.uid, True, {"result": "print('[redacted]')"}, decider="hook")
    result = worker.join()
    assert result.status is ToolStatus.SUCCESS
    assert result.content.endswith("print('[redacted]')") and "edited this result" in result.content
    [entry] = ctrl.session_log.read("audit")
    assert (entry["kind"], entry["decider"], entry["rule"], entry["edited"]) == (
        "tool_result",
        "hook",
        "results-ask",
        True,
    )


def test_a_rejected_result_is_withheld_from_the_model(app_dir, make_controller, registry) -> None:
    ctrl = app(app_dir, make_controller)
    ctx = build_execution_context(ctrl)
    worker = Worker(registry, ctx, "read_file", path="src/main.py")
    ctrl.clutch.resolve(next_pending(ctrl).uid, False, {"reason": "not now"})
    result = worker.join()
    assert result.status is ToolStatus.REJECTED and "print" not in result.content
    assert (
        result.content == "the user withheld this result of read_file (approval rule 'results-ask'): not now"
    )
    logged = ctrl.session_log.read("toolcalls")[-1]
    assert logged["status"] == "rejected" and logged["approval_ms"] > 0


def test_a_deny_rule_withholds_at_once_and_no_rule_costs_nothing(app_dir, make_controller, registry) -> None:
    ctrl = app(app_dir, make_controller)
    ctx = build_execution_context(ctrl)
    denied = Worker(registry, ctx, "read_file", path="src/key.txt").join()
    assert denied.status is ToolStatus.REJECTED and "abc" not in denied.content
    assert "approval rule 'keys'" in denied.content and ctrl.clutch.pending() == []
    plain = Worker(registry, ctx, "read_file", path="notes.md").join()  # no rule matches its result
    assert plain.status is ToolStatus.SUCCESS and "# notes" in plain.content
    assert [(e["kind"], e["decider"], e["rule"]) for e in ctrl.session_log.read("audit")] == [
        ("tool_result", "policy", "keys")
    ]


def test_an_error_a_rule_denies_ends_the_request(app_dir, make_controller, registry) -> None:
    ctrl = app(app_dir, make_controller)
    token = CancelToken()
    abort = threading.Event()
    ctx = build_execution_context(ctrl, cancel=token, abort=abort)
    failed = Worker(registry, ctx, "read_file", path="src/missing.py").join()
    assert failed.status is ToolStatus.ERROR
    assert "[approval rule 'errors' ended the request after read_file failed" in failed.content
    assert token.cancelled and token.reason.startswith("approval rule 'errors' ended the request")
    assert abort.is_set()
    later = registry.execute(ToolCall.new("read_file", {"path": "notes.md"}), ctx)
    assert later.status is ToolStatus.REJECTED  # nothing more runs for this request
    assert [(e["kind"], e["rule"]) for e in ctrl.session_log.read("audit")] == [("tool_result", "errors")]


def test_an_error_a_human_lets_through_goes_on(app_dir, make_controller, registry) -> None:
    ctrl = app(app_dir, make_controller, on_error="ask")
    token = CancelToken()
    ctx = build_execution_context(ctrl, cancel=token)
    worker = Worker(registry, ctx, "read_file", path="src/missing.py")
    dialog = next_pending(ctrl)
    assert dialog.payload["status"] == "error" and dialog.to_dict()["rule"] == "errors"
    ctrl.clutch.resolve(dialog.uid, True)
    result = worker.join()
    assert result.status is ToolStatus.ERROR and "ended the request" not in result.content
    assert not token.cancelled


def test_stopping_the_request_rejects_a_held_result(app_dir, make_controller, registry) -> None:
    ctrl = app(app_dir, make_controller)
    token = CancelToken()
    ctx = build_execution_context(ctrl, cancel=token)
    worker = Worker(registry, ctx, "read_file", path="src/main.py")
    next_pending(ctrl)
    token.cancel("stopped by the user")
    result = worker.join()
    assert result.status is ToolStatus.REJECTED and ctrl.clutch.pending() == []
    assert ctrl.session_log.read("audit")[-1]["decider"] == "cancel"
