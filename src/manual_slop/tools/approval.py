"""The bridge between the tool registry and a running app: approvals and the execution context.

:func:`build_execution_context` snapshots what the tools need from the app (a
:class:`ToolHost`: the controller) — base dir, tracked files, shell settings, memory —
on the main thread and rebuilds the path allowlist from it (layer 1 of the security
model), so call it before each send. Its ``pre_tool_callback`` (:func:`make_pre_tool_callback`)
turns every mutating call into an Execution Clutch dialog —

- ``run_shell`` / ``run_powershell``: ``ConfirmDialog(script, base_dir)``; the edited script runs;
- file edits and ``py_update_definition``: ``ToolApprovalDialog(tool, args, diff)`` with the
  unified diff of the change; the edited args run —

and blocks the calling (worker) thread in ``ctrl.request_approval`` until the policy or a
human decides. ``allow_list`` rules and ``auto`` are applied by the clutch, which writes
every decision, with the rule that matched, to ``audit.log``. Executed calls reach
``toolcalls.log`` and the Tool Calls view through ``ctx.on_tool_call`` →
``ctrl.add_tool_call``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from manual_slop.cancel import CancelToken
from manual_slop.dialogs import ConfirmDialog, Decider, Decision, PendingDialog, ToolApprovalDialog
from manual_slop.tools.tool import ApprovalRequest, ApprovalResult, ExecutionContext, PreToolCallback

if TYPE_CHECKING:
    from manual_slop.redaction import Redactor
    from manual_slop.session_log import SessionLog
    from manual_slop.state import AppState
    from manual_slop.tools.security import PathPolicy

__all__ = [
    "SCRIPT_TOOLS",
    "Approver",
    "ProjectSnapshot",
    "ToolHost",
    "build_execution_context",
    "make_pre_tool_callback",
]

SCRIPT_TOOLS = frozenset({"run_shell", "run_powershell"})


class Approver(Protocol):
    """Who decides a mutating call: the app's Execution Clutch (the controller)."""

    def request_approval(self, dialog: PendingDialog) -> Decision: ...


class ToolHost(Approver, Protocol):
    """What a send's execution context is built from (the controller)."""

    state: AppState
    session_log: SessionLog  # saves the scripts that ran
    redactor: Redactor  # known secrets leave tool output
    memory: Any  # the memory feature's binding (``memory.bindings``) once registered, else None

    def base_dir(self) -> Path: ...

    def on_main_thread(self) -> bool: ...

    def call_on_main(self, fn: Callable[[], Any], timeout: float = 2.0) -> Any: ...

    def path_policy(
        self, base_dir: Path, tracked: Sequence[str] = (), exclude: Sequence[str] = ()
    ) -> PathPolicy: ...

    def add_tool_call(self, entry: Mapping[str, Any]) -> dict[str, Any]: ...


def make_pre_tool_callback(
    ctrl: Approver, base_dir: Path, tier: str | None = None, cancel: CancelToken | None = None
) -> PreToolCallback:
    """The approval callback for calls made on behalf of ``ctrl`` (``tier`` labels the dialogs).
    When the request's ``cancel`` token fires, a dialog still waiting is rejected (decider
    ``cancel``): a stopped request leaves nothing pending."""

    def callback(request: ApprovalRequest) -> ApprovalResult:
        call = request.call
        dialog: PendingDialog
        if call.name in SCRIPT_TOOLS:
            dialog = ConfirmDialog(str(call.args.get("script", "")), str(base_dir))
        else:
            dialog = ToolApprovalDialog(call.name, dict(call.args), request.preview)
        dialog.source_tier = tier
        unregister = (
            cancel.on_cancel(
                lambda: dialog.resolve(False, decider=Decider.CANCEL, reason="the request was stopped")
            )
            if cancel is not None
            else None
        )
        try:
            decision = ctrl.request_approval(dialog)
        finally:
            if unregister is not None:
                unregister()
        if not decision.approved:
            return ApprovalResult(False, dict(call.args), decision.reason, abort=decision.abort)
        if isinstance(dialog, ConfirmDialog):
            return ApprovalResult(True, {**call.args, "script": decision.payload["script"]})
        return ApprovalResult(True, dict(decision.payload["args"]))

    return callback


@dataclass(frozen=True, slots=True)
class ProjectSnapshot:
    """What the tools need from the app's state, read on the main thread."""

    base_dir: Path
    tracked: tuple[str, ...]
    exclude: tuple[str, ...]
    shell_program: str
    shell_timeout_s: float
    memory: Any = None  # the open project's memory service (the memory tools), or None

    @classmethod
    def of(cls, ctrl: ToolHost) -> ProjectSnapshot:
        state = ctrl.state
        return cls(
            ctrl.base_dir(),
            tuple(state.project_files),
            tuple(state.files_exclude),
            state.shell_program,
            state.shell_timeout_s,
            ctrl.memory.service if ctrl.memory is not None else None,
        )


def build_execution_context(
    ctrl: ToolHost,
    *,
    tier: str | None = None,
    abort: threading.Event | None = None,
    timeout: float = 5.0,
    cancel: CancelToken | None = None,
) -> ExecutionContext:
    """A fresh context for one send: the allowlist rebuilt from the project, approvals through the
    clutch, tool calls logged. From another thread the state is read through ``call_on_main``
    (``timeout`` s); the tracked-file globs are expanded on the calling thread."""
    snapshot = (
        ProjectSnapshot.of(ctrl)
        if ctrl.on_main_thread()
        else ctrl.call_on_main(lambda: ProjectSnapshot.of(ctrl), timeout)
    )
    policy = ctrl.path_policy(snapshot.base_dir, snapshot.tracked, snapshot.exclude)
    return ExecutionContext(
        base_dir=snapshot.base_dir,
        policy=policy,
        pre_tool_callback=make_pre_tool_callback(ctrl, snapshot.base_dir, tier, cancel),
        tier=tier,
        on_tool_call=ctrl.add_tool_call,
        abort=abort,
        shell_program=snapshot.shell_program,
        timeouts={"run_shell": snapshot.shell_timeout_s, "run_powershell": snapshot.shell_timeout_s},
        save_script=ctrl.session_log.save_script,
        redact=ctrl.redactor.redact,
        memory=snapshot.memory,
    )
