"""Tools in a running app: approvals through the Execution Clutch, the per-send context, the logs."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from manual_slop.controller import AppController
from manual_slop.dialogs import PendingDialog
from manual_slop.tools import (
    ExecutionContext,
    ToolCall,
    ToolRegistry,
    ToolResult,
    ToolStatus,
    build_execution_context,
    default_registry,
)
from tests.helpers import pump_until

PROJECT = """\
[project]
name = "demo"

[files]
base_dir = "."
paths = ["src/*.py", "../shared/notes.md"]

{rules}
"""


@pytest.fixture
def app(app_dir: Path, make_controller) -> Callable[..., AppController]:
    (app_dir / "src").mkdir()
    (app_dir / "src" / "main.py").write_text("print('hi')\n")
    (app_dir.parent / "shared").mkdir()
    (app_dir.parent / "shared" / "notes.md").write_text("# shared notes\n")
    (app_dir / "credentials.toml").write_text('[anthropic]\napi_key = "sk-ant-test-key-123"\n')

    def build(rules: str = "", policy: str = "manual") -> AppController:
        (app_dir / "demo.toml").write_text(PROJECT.format(rules=rules))
        (app_dir / "config.toml").write_text(f'[approval]\npolicy = "{policy}"\n')
        return make_controller(project_file=app_dir / "demo.toml")

    return build


@pytest.fixture
def registry() -> ToolRegistry:
    return default_registry(with_powershell=False)


class Worker:
    """Runs one tool call on its own thread (approvals must not block the main thread)."""

    def __init__(self, registry: ToolRegistry, ctx: ExecutionContext, tool: str, **args: Any) -> None:
        self.result: ToolResult | None = None
        self.thread = threading.Thread(target=self._run, args=(registry, ctx, ToolCall.new(tool, args)))
        self.thread.start()

    def _run(self, registry: ToolRegistry, ctx: ExecutionContext, call: ToolCall) -> None:
        self.result = registry.execute(call, ctx)

    def join(self) -> ToolResult:
        self.thread.join(10)
        assert self.result is not None, "the call did not finish"
        return self.result


def next_pending(ctrl: AppController) -> PendingDialog:
    deadline = time.monotonic() + 5
    while not ctrl.clutch.pending():
        assert time.monotonic() < deadline, "no dialog appeared"
        time.sleep(0.005)
    return ctrl.clutch.pending()[0]


def test_file_edits_wait_for_a_tool_approval_dialog_and_run_the_edited_args(
    app, registry, app_dir: Path
) -> None:
    ctrl = app()
    ctx = build_execution_context(ctrl, tier="Tier 3")
    worker = Worker(registry, ctx, "edit_file", path="src/main.py", old_string="'hi'", new_string="'hello'")
    dialog = next_pending(ctrl)
    payload = dialog.payload
    assert (str(dialog.kind), dialog.source_tier) == ("tool_approval", "Tier 3")
    assert payload["tool"] == "edit_file" and payload["args"]["path"] == "src/main.py"
    assert "-print('hi')\n+print('hello')" in payload["diff"]
    assert (app_dir / "src" / "main.py").read_text() == "print('hi')\n"  # nothing ran yet
    edited = {**payload["args"], "new_string": "'edited'"}
    ctrl.clutch.resolve(dialog.uid, True, {"args": edited}, decider="hook")
    assert worker.join().ok
    assert (app_dir / "src" / "main.py").read_text() == "print('edited')\n"
    (decision,) = ctrl.session_log.read("audit")
    assert decision["edited"] is True and decision["decider"] == "hook"
    (entry,) = ctrl.session_log.read("toolcalls")
    assert entry["tool"] == "edit_file" and entry["source_tier"] == "Tier 3" and entry["status"] == "success"
    assert entry["args"]["new_string"] == "'edited'" and entry["edited"] is True  # what ran
    assert entry["original_args"]["new_string"] == "'hello'"  # what the model asked for, beside it
    assert entry["output_bytes"] > 0 and entry["duration_ms"] >= entry["execution_ms"] > 0
    assert entry["seq"] == 1
    pump_until(ctrl, lambda: len(ctrl.state.tool_calls) == 1)


def test_scripts_go_through_a_confirm_dialog_and_are_saved_as_approved(app, registry, app_dir: Path) -> None:
    ctrl = app()
    ctx = build_execution_context(ctrl)
    worker = Worker(registry, ctx, "run_shell", script="echo original")
    dialog = next_pending(ctrl)
    assert str(dialog.kind) == "confirm_script"
    assert dialog.payload == {"script": "echo original", "base_dir": str(app_dir.resolve())}
    ctrl.clutch.resolve(dialog.uid, True, {"script": "echo approved-version"})
    result = worker.join()
    assert "--- stdout ---\napproved-version" in result.content
    (saved,) = ctrl.session_log.scripts_dir.iterdir()
    assert saved.read_text() == "echo approved-version" and saved.suffix == ".sh"


def test_rejection_reaches_the_model_with_the_reason(app, registry, app_dir: Path) -> None:
    ctrl = app()
    ctx = build_execution_context(ctrl)
    worker = Worker(registry, ctx, "write_file", path="src/new.py", content="x = 1\n")
    dialog = next_pending(ctrl)
    ctrl.clutch.resolve(dialog.uid, False, {"reason": "put it in lib/"})
    result = worker.join()
    assert (result.status, result.content) == (ToolStatus.REJECTED, "REJECTED by user: put it in lib/")
    assert not (app_dir / "src" / "new.py").exists()
    assert ctrl.session_log.read("toolcalls")[0]["status"] == "rejected"


def test_abort_rejects_the_rest_of_the_round(app, registry) -> None:
    ctrl = app()
    abort = threading.Event()
    ctx = build_execution_context(ctrl, abort=abort)
    worker = Worker(registry, ctx, "run_shell", script="echo 1")
    ctrl.clutch.resolve(next_pending(ctrl).uid, False, abort=True)
    assert worker.join().status is ToolStatus.REJECTED and abort.is_set()
    later = registry.execute(ToolCall.new("read_file", {"path": "src/main.py"}), ctx)
    assert later.status is ToolStatus.REJECTED


def test_allow_list_rules_approve_matching_calls_and_ask_for_the_rest(app, registry, app_dir: Path) -> None:
    rules = (
        '[[approval.rules]]\ntool = "run_shell"\npattern = "^echo( |$)"\n\n'
        '[[approval.rules]]\ntool = "write_file"\npath_glob = "docs/*.md"\n'
    )
    ctrl = app(rules=rules, policy="allow_list")
    ctx = build_execution_context(ctrl)
    assert "auto-ok" in Worker(registry, ctx, "run_shell", script="echo auto-ok").join().content
    assert Worker(registry, ctx, "write_file", path="./docs/../docs/a.md", content="# A\n").join().ok
    assert (app_dir / "docs" / "a.md").read_text() == "# A\n"
    audit = ctrl.session_log.read("audit")
    assert [e["rule"] for e in audit] == [
        "tool=run_shell pattern=^echo( |$)",
        "tool=write_file path_glob=docs/*.md",
    ]
    assert all(e["decider"] == "policy" for e in audit)
    asking = Worker(registry, ctx, "run_shell", script="rm -rf build")
    dialog = next_pending(ctrl)
    assert dialog.payload["script"] == "rm -rf build"
    ctrl.clutch.resolve(dialog.uid, False)
    assert asking.join().status is ToolStatus.REJECTED


def test_auto_runs_everything_and_logs_every_call(app, registry, app_dir: Path) -> None:
    ctrl = app(policy="auto")
    ctx = build_execution_context(ctrl)
    results = registry.execute_many(
        [
            ToolCall.new("write_file", {"path": "out.txt", "content": "auto\n"}),
            ToolCall.new("run_shell", {"script": "echo ran"}),
            ToolCall.new("read_file", {"path": "src/main.py"}),
        ],
        ctx,
    )
    assert [r.status for r in results] == [ToolStatus.SUCCESS] * 3
    assert (app_dir / "out.txt").read_text() == "auto\n"
    assert sorted(e["tool"] for e in ctrl.session_log.read("toolcalls")) == [
        "read_file",
        "run_shell",
        "write_file",
    ]
    assert [e["rule"] for e in ctrl.session_log.read("audit")] == ["policy=auto", "policy=auto"]


def test_read_only_tools_never_prompt(app, registry) -> None:
    ctrl = app()
    ctx = build_execution_context(ctrl)  # manual policy; this test thread is the main thread
    for name, args in [
        ("read_file", {"path": "src/main.py"}),
        ("list_directory", {"path": "."}),
        ("grep", {"path": ".", "regex": "hi"}),
        ("py_get_code_outline", {"path": "src/main.py"}),
        ("get_file_summary", {"path": "src/main.py"}),
        ("read_file", {"path": "../shared/notes.md"}),  # tracked outside the base dir
    ]:
        assert registry.execute(ToolCall.new(name, args), ctx).ok, name
    assert ctrl.clutch.pending() == [] and ctrl.session_log.read("audit") == []


def test_the_apps_own_files_are_protected(app, registry, app_dir: Path) -> None:
    ctrl = app(policy="auto")
    ctx = build_execution_context(ctrl)
    for name, args in [
        ("read_file", {"path": "credentials.toml"}),
        ("read_file", {"path": "config.toml"}),
        ("read_file", {"path": "demo_history.toml"}),
        ("read_file", {"path": f"logs/sessions/{ctrl.session_log.session_id}/audit.log"}),
        ("write_file", {"path": "demo.toml", "content": '[[approval.rules]]\ntool = "run_shell"\n'}),
        ("grep", {"path": "credentials.toml", "regex": "sk-"}),
    ]:
        result = registry.execute(ToolCall.new(name, args), ctx)
        assert result.status is ToolStatus.DENIED, (name, args)
    assert registry.execute(
        ToolCall.new("read_file", {"path": "demo.toml"}), ctx
    ).ok  # readable, not writable
    everything = registry.execute(ToolCall.new("grep", {"path": ".", "regex": "sk-ant"}), ctx)
    assert everything.content.startswith("no matches")


def test_secrets_are_redacted_from_tool_output(app, registry, app_dir: Path) -> None:
    ctrl = app(policy="auto")
    (app_dir / "leak.txt").write_text("key: sk-ant-test-key-123\nhalf: xx-test-key-123-yy\n")
    ctx = build_execution_context(ctrl)
    result = registry.execute(ToolCall.new("read_file", {"path": "leak.txt"}), ctx)
    mark = "[REDACTED:credentials.anthropic.api_key]"
    assert result.content == f"key: {mark}\nhalf: xx{mark}-yy\n"  # a piece of 12+ characters counts too


def test_the_context_can_be_built_from_a_worker_thread(app, registry) -> None:
    ctrl = app()
    ctrl.state.project_files = ["src/*.py"]
    built: list[ExecutionContext] = []
    thread = threading.Thread(target=lambda: built.append(build_execution_context(ctrl, tier="Tier 2")))
    thread.start()
    pump_until(ctrl, lambda: bool(built))
    thread.join(5)
    (ctx,) = built
    assert ctx.tier == "Tier 2" and ctx.base_dir == ctrl.base_dir()
    assert ctx.timeouts["run_shell"] == 120.0 and ctx.shell_program == "auto"
    assert any(path.endswith("main.py") for path in ctx.policy.allowed_files)


def test_python_declaration_edits_show_their_diff_in_the_tool_approval_dialog(
    app, registry, app_dir: Path
) -> None:
    ctrl = app()
    (app_dir / "src" / "main.py").write_text("LIMIT = 1\n\n\ndef greet(name):\n    return name\n")
    ctx = build_execution_context(ctrl, tier="Tier 3")
    signature = Worker(
        registry, ctx, "py_set_signature", path="src/main.py", name="greet", new_signature="def greet(n):"
    )
    dialog = next_pending(ctrl)
    assert (
        dialog.payload["tool"] == "py_set_signature"
        and "-def greet(name):\n+def greet(n):" in dialog.payload["diff"]
    )
    ctrl.clutch.resolve(dialog.uid, False, {}, decider="hook")
    assert signature.join().status is ToolStatus.REJECTED
    declaration = Worker(
        registry, ctx, "py_set_var_declaration", path="src/main.py", name="LIMIT", new_declaration="LIMIT = 2"
    )
    dialog = next_pending(ctrl)
    assert (
        dialog.payload["tool"] == "py_set_var_declaration"
        and "-LIMIT = 1\n+LIMIT = 2" in dialog.payload["diff"]
    )
    ctrl.clutch.resolve(dialog.uid, True, {"args": dialog.payload["args"]}, decider="hook")
    assert declaration.join().ok
    assert (app_dir / "src" / "main.py").read_text() == "LIMIT = 2\n\n\ndef greet(name):\n    return name\n"


def test_ui_performance_in_the_headless_app_says_the_gui_is_not_running(app, registry) -> None:
    ctrl = app()
    ctrl.run_frame()
    ctrl.run_frame()
    ctx = build_execution_context(ctrl)
    result = registry.execute(ToolCall.new("get_ui_performance", {}), ctx)
    assert result.ok and result.content.startswith("The GUI is not running (headless mode)")
    assert "- frame loop: healthy; 2 frames" in result.content and "  process_pending: " in result.content
    assert ctrl.clutch.pending() == []  # read-only: no dialog
