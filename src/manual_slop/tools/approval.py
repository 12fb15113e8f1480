"""The bridge between the tool registry and a running app: approvals and the execution context.

:func:`build_execution_context` snapshots what the tools need from the app (a
:class:`ToolHost`: the controller) — base dir, tracked files, shell settings, memory —
on the main thread and rebuilds the path allowlist from it (layer 1 of the security
model), so call it before each send. Its ``pre_tool_callback`` (:func:`make_pre_tool_callback`)
turns every mutating call into an Execution Clutch dialog —

- ``run_shell`` / ``run_powershell``: ``ConfirmDialog(script, base_dir)``; the edited script runs;
- file edits and ``py_update_definition``: ``ToolApprovalDialog(tool, args, diff)`` with the
  unified diff of the change; the edited args run —

and blocks the calling (worker) thread in ``ctrl.request_approval`` until a rule or a
human decides. Its ``post_tool_callback`` (:func:`make_post_tool_callback`) shows every result
to the ``after_tool`` / ``on_error`` rules before the model sees it: when one asks, a
``ToolResultDialog`` waits (the edited result is what the model sees; rejected, it gets "the
user withheld this result"); a rejected ``on_error`` dialog ends the request. The clutch
applies the rules (:mod:`manual_slop.governance`) and writes every decision, with the rule
that made it, to ``audit.log``. Executed calls reach ``toolcalls.log`` and the Tool Calls view
through ``ctx.on_tool_call`` → ``ctrl.add_tool_call``.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from manual_slop.cancel import CancelToken
from manual_slop.dialogs import (
    ConfirmDialog,
    Decider,
    Decision,
    PendingDialog,
    ToolApprovalDialog,
    ToolResultDialog,
)
from manual_slop.governance.subject import ERROR_STATUSES, event_of
from manual_slop.tools.tool import (
    ApprovalRequest,
    ApprovalResult,
    ExecutionContext,
    PostToolCallback,
    PreToolCallback,
    ResultReview,
    ToolCall,
    ToolResult,
    ToolStatus,
)
from manual_slop.tools.ui_performance import performance_snapshot

if TYPE_CHECKING:
    from manual_slop.clutch import ExecutionClutch
    from manual_slop.redaction import Redactor
    from manual_slop.session_log import SessionLog
    from manual_slop.state import AppState
    from manual_slop.tools.security import PathPolicy

__all__ = [
    "SCRIPT_TOOLS",
    "Approver",
    "ProjectSnapshot",
    "Reviewer",
    "ToolHost",
    "build_execution_context",
    "make_post_tool_callback",
    "make_pre_tool_callback",
]

SCRIPT_TOOLS = frozenset({"run_shell", "run_powershell"})


class Approver(Protocol):
    """Who decides a mutating call: the app's Execution Clutch (the controller)."""

    def request_approval(self, dialog: PendingDialog) -> Decision: ...


class Reviewer(Protocol):
    """Who shows results to the ``after_tool`` / ``on_error`` rules: the controller's clutch."""

    clutch: ExecutionClutch
    state: AppState

    def on_main_thread(self) -> bool: ...


class ToolHost(Approver, Reviewer, Protocol):
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
        decision = _cancellable(dialog, cancel, lambda: ctrl.request_approval(dialog))
        assert decision is not None
        if not decision.approved:
            return ApprovalResult(False, dict(call.args), decision.reason, abort=decision.abort)
        if isinstance(dialog, ConfirmDialog):
            return ApprovalResult(True, {**call.args, "script": decision.payload["script"]})
        return ApprovalResult(True, dict(decision.payload["args"]))

    return callback


def _cancellable(
    dialog: PendingDialog, cancel: CancelToken | None, ask: Callable[[], Decision | None]
) -> Decision | None:
    """``ask()``; while it waits, a cancel of the request rejects ``dialog`` (decider ``cancel``)."""
    def stop() -> None:
        dialog.resolve(False, decider=Decider.CANCEL, reason="the request was stopped")

    unregister = cancel.on_cancel(stop) if cancel is not None else None
    try:
        return ask()
    finally:
        if unregister is not None:
            unregister()


WITHHELD = "the user withheld this result of {tool} (approval rule {rule!r}){why}"
ENDED = "approval rule {rule!r} ended the request after {tool} failed{why}"


def make_post_tool_callback(
    ctrl: Reviewer, tier: str | None = None, cancel: CancelToken | None = None
) -> PostToolCallback:
    """Show each result to the ``after_tool`` / ``on_error`` rules (:meth:`ExecutionClutch.intercept`).
    A result no rule stops passes untouched. Approved, the (possibly edited) result goes on;
    rejected or denied, an ``after_tool`` result is withheld from the model, and an ``on_error``
    one ends the request (the request's ``cancel`` token fires; the round's other calls stop)."""

    def callback(call: ToolCall, result: ToolResult) -> ResultReview:
        dialog = ToolResultDialog(call.name, dict(call.args), str(result.status), result.content)
        dialog.source_tier = tier
        clutch = ctrl.clutch
        if ctrl.on_main_thread():  # nobody could answer while the main thread waits
            if not clutch.ruleset.intercepts(event_of(dialog)):
                return ResultReview(result)
            raise RuntimeError("a result rule would block the main thread")
        timeout = ctrl.state.approval_timeout_s
        decision = _cancellable(dialog, cancel, lambda: clutch.intercept(dialog, timeout))
        if decision is None:
            return ResultReview(result)
        if decision.approved:
            shown = str(decision.payload.get("result", result.content))
            return ResultReview(result if shown == result.content else _edited(result, shown))
        why = f": {decision.reason}" if decision.reason else ""
        rule = decision.rule or dialog.rule
        if str(result.status) in ERROR_STATUSES and decision.decider != Decider.CANCEL:
            ended = ENDED.format(rule=rule, tool=call.name, why=why)
            if cancel is not None:
                cancel.cancel(ended)
            note = f"{result.content}\n\n[{ended}]"
            shown = ToolResult(result.status, note, result.error_message, dict(result.metadata))
            return ResultReview(shown, end=True)
        text = WITHHELD.format(tool=call.name, rule=rule, why=why)
        return ResultReview(ToolResult(ToolStatus.REJECTED, text, text, dict(result.metadata)))

    return callback


def _edited(result: ToolResult, shown: str) -> ToolResult:
    note = "Note: the user edited this result before letting you see it.\n\n"
    return ToolResult(result.status, note + shown, result.error_message, {**result.metadata, "edited": True})


@dataclass(frozen=True, slots=True)
class ProjectSnapshot:
    """What the tools need from the app's state, read on the main thread."""

    base_dir: Path
    tracked: tuple[str, ...]
    exclude: tuple[str, ...]
    shell_program: str
    shell_timeout_s: float
    memory: Any = None  # the open project's memory service (the memory tools), or None
    skills: Any = None  # the enabled skills (get_skill), or None when the app has no skills binding

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
            _offered_skills(ctrl),
        )


def build_execution_context(
    ctrl: ToolHost,
    *,
    tier: str | None = None,
    abort: threading.Event | None = None,
    timeout: float = 5.0,
    cancel: CancelToken | None = None,
    base_dir: Path | None = None,
) -> ExecutionContext:
    """A fresh context for one send: the allowlist rebuilt from the project, approvals through the
    clutch, tool calls logged. From another thread the state is read through ``call_on_main``
    (``timeout`` s); the tracked-file globs are expanded on the calling thread. ``base_dir``: the
    project's policy (tracked globs, excludes, protected files) applied to another folder — an MMA
    ticket's scratch tree — which the tools and the shell then work in instead of the project."""
    snapshot = (
        ProjectSnapshot.of(ctrl)
        if ctrl.on_main_thread()
        else ctrl.call_on_main(lambda: ProjectSnapshot.of(ctrl), timeout)
    )
    if base_dir is not None:
        snapshot = dataclasses.replace(snapshot, base_dir=Path(base_dir))
    policy = ctrl.path_policy(snapshot.base_dir, snapshot.tracked, snapshot.exclude)
    return ExecutionContext(
        base_dir=snapshot.base_dir,
        policy=policy,
        pre_tool_callback=make_pre_tool_callback(ctrl, snapshot.base_dir, tier, cancel),
        post_tool_callback=make_post_tool_callback(ctrl, tier, cancel),
        tier=tier,
        on_tool_call=ctrl.add_tool_call,
        abort=abort,
        shell_program=snapshot.shell_program,
        timeouts={"run_shell": snapshot.shell_timeout_s, "run_powershell": snapshot.shell_timeout_s},
        save_script=ctrl.session_log.save_script,
        redact=ctrl.redactor.redact,
        memory=snapshot.memory,
        skills=snapshot.skills,
        ui_performance=_ui_performance(ctrl),
    )


def _ui_performance(ctrl: ToolHost) -> Callable[[], dict[str, Any]] | None:
    """The source of ``get_ui_performance``: the controller's frame metrics (read from any thread)."""
    if getattr(ctrl, "perf", None) is None or not hasattr(ctrl, "mode"):
        return None
    return lambda: performance_snapshot(ctrl)  # type: ignore[arg-type]


def _offered_skills(ctrl: ToolHost) -> Any:
    """The enabled skills of the open project (``skills.bindings``), or None without the binding."""
    binding = getattr(ctrl, "skills", None)
    return binding.offered() if binding is not None else None
