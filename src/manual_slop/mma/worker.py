"""The Tier 3 worker lifecycle: one ticket, one stateless model session, one thread.

:meth:`TicketWorker.run` reads top to bottom: abort check → build prompt and
context → spawn approval (``mma_spawn``: approve, edit, reject or abort the track)
→ attempts. Each attempt (:func:`~manual_slop.mma.attempt.run_ticket`) sends in a fresh
session (context amnesia) tagged ``Tier 3``, its tools confined to a fresh scratch tree of the
project; every tool call the model proposes passes the step gate (``mma_step`` dialog,
editable; under ``worktree_approvals = "patch_only"`` file tools in the tree run without one).
A plain answer whose tree changed is a patch: it is shown in an editable ``apply_patch``
dialog and, approved, merged three-way into the project (:mod:`manual_slop.mma.merge`); a
conflict or a rejected patch writes nothing and goes to the recovery ladder (a human
decides). An answer starting ``BLOCKED:`` blocks the ticket; one starting ``FAILED:`` or an
exception counts as a failed attempt: Tier 4 summarizes it (and for ``FAILED:`` proposes a
patch behind a ``tool_approval`` dialog), the model is escalated, and the ticket is retried
up to ``max_retries`` times before it is blocked. The worker's word is not enough to complete
a ticket: an attempt whose every change failed (or was rejected), or whose tree did not change
while the ticket names files to change, is a failed attempt too, with the failed tool results
as its reason (:func:`unfinished_work`). The last attempt's tree is removed when the worker
ends, or kept for inspection when the ticket ended blocked. The abort event is checked
before work, in the step gate before each tool runs, and after each send returns.

What follows a failed attempt is the recovery orchestrator's call (``host.recover``: the
failure's class, its severity and its ladder in :mod:`manual_slop.governance.severity`):
another attempt (after a backoff, with Tier 4's summary, or on the next model), a replan,
or — when the ladder is spent — a ``recovery`` dialog where a human picks retry, skip, edit
or abort. A recovery dialog decided by a policy, not a human, leaves the ticket blocked.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from pathlib import Path
from typing import Any, Protocol

from manual_slop.dialogs import (
    Decider,
    Decision,
    MMAApprovalDialog,
    MMASpawnApprovalDialog,
    PendingDialog,
    RecoveryDialog,
    ToolApprovalDialog,
)
from manual_slop.governance.recovery import RecoveryStep
from manual_slop.governance.severity import FailureClass, Strategy, classify_error
from manual_slop.mma.attempt import AttemptSettings, TicketOutcome, WorktreeApprovals, run_ticket
from manual_slop.mma.client import ContextBuilder, ContextRequest, StepRequest, StepVerdict, TierCaller
from manual_slop.mma.errors import Aborted, PatchError
from manual_slop.mma.merge import MergeConflict, merge_into
from manual_slop.mma.models import Ticket
from manual_slop.mma.prompts import BLOCKED_MARKER, FAILED_MARKER, tier3_worker_prompt
from manual_slop.mma.tier4 import PathCheck, apply_patch, run_tier4_patch_generation, run_tier4_qa
from manual_slop.mma.worktree import ScratchTreeError, Workspace

__all__ = [
    "RecoveryHost",
    "TicketWorker",
    "WorkerHost",
    "ask_recovery",
    "default_tier3_context",
    "unfinished_work",
]

log = logging.getLogger(__name__)

ROLE = "Tier 3"
FOCUS_FILE_LIMIT = 200_000  # bytes of one focus file shown in full


class RecoveryHost(Protocol):
    """What :func:`ask_recovery` needs of a conductor (MMA's and the plan's)."""

    track_id: str

    def ask(self, dialog: PendingDialog, abort: threading.Event) -> Decision | None: ...

    def abort_track(self, source: str) -> None: ...

    def block(
        self, ticket_id: str, abort: threading.Event, reason: str, *, failed: bool, replan: bool = False
    ) -> None: ...

    def skip(self, ticket_id: str, abort: threading.Event, reason: str) -> None: ...

    def edit_description(self, ticket_id: str, abort: threading.Event, description: str) -> None: ...

    def grant_retry(self, ticket_id: str) -> None: ...

    def note_retry(self, ticket_id: str) -> None: ...


def ask_recovery(
    host: RecoveryHost,
    ticket_id: str,
    description: str,
    step: RecoveryStep,
    failure: str,
    abort: threading.Event,
) -> str | None:
    """The ``recovery`` dialog for a ticket whose ladder is spent, and its answer carried out:
    the edited description when a human asked for another attempt (the old one when not
    edited), None when the worker is done (skipped, blocked, aborted)."""
    dialog = RecoveryDialog(
        ticket_id,
        host.track_id,
        str(step.failure),
        str(step.severity),
        failure,
        list(step.tried),
        description,
    )
    decision = host.ask(dialog, abort)
    if decision is None or abort.is_set():
        return None
    choice = decision.payload.get("choice", "")
    if decision.abort or (decision.approved and choice == "abort"):
        host.abort_track(decision.decider)
        return None
    if not decision.approved or decision.decider == Decider.POLICY:
        why = decision.reason or (
            "a policy cannot choose a recovery" if decision.approved else "the user left it blocked"
        )
        host.block(ticket_id, abort, f"{failure} ({why})", failed=False)
        return None
    if choice == "skip":
        host.skip(ticket_id, abort, decision.reason or "chosen in the recovery dialog")
        return None
    if choice == "edit":
        description = decision.payload["description"]
        host.edit_description(ticket_id, abort, description)
    host.grant_retry(ticket_id)
    host.note_retry(ticket_id)
    return description


class WorkerHost(Protocol):
    """What a worker asks of its conductor (every call is thread-safe)."""

    base_dir: Path
    path_check: PathCheck | None
    tier4_model: str
    tier4_patches: bool
    track_id: str
    worktree_approvals: str  # "ask" | "patch_only" (mma.attempt.WorktreeApprovals)
    remote_attempts: Any  # None: attempts run here; else where they run (mma.backends.ray_attempts)
    merge_lock: threading.Lock  # one merge into the project at a time

    def workspace_for(self, ticket_id: str) -> Workspace: ...

    def finish_workspace(
        self, ticket_id: str, abort: threading.Event, workspace: Workspace, *, final: bool
    ) -> None: ...

    def ask(self, dialog: PendingDialog, abort: threading.Event) -> Decision | None: ...

    def model_for(self, ticket_id: str) -> str: ...

    def retry_count(self, ticket_id: str) -> int: ...

    def give_up(self, ticket_id: str) -> bool: ...

    def note_retry(self, ticket_id: str) -> None: ...

    def complete(self, ticket_id: str, abort: threading.Event, result: str) -> None: ...

    def block(
        self, ticket_id: str, abort: threading.Event, reason: str, *, failed: bool, replan: bool = False
    ) -> None: ...

    def recover(self, ticket_id: str, failure: FailureClass) -> RecoveryStep: ...

    def grant_retry(self, ticket_id: str) -> None: ...

    def skip(self, ticket_id: str, abort: threading.Event, reason: str) -> None: ...

    def edit_description(self, ticket_id: str, abort: threading.Event, description: str) -> None: ...

    def spawn_rejected(self, ticket_id: str, abort: threading.Event, reason: str) -> None: ...

    def abort_track(self, source: str) -> None: ...

    def notify(self, level: str, message: str) -> None: ...

    def in_tier(self, tier: str) -> contextlib.AbstractContextManager[None]: ...


def default_tier3_context(request: ContextRequest) -> str:
    """A stand-in for ``build_tier3_context``: focus files in full, other tracked patterns by name."""
    parts = ["# Worker context", ""]
    root = request.base_dir.resolve()
    for name in request.focus_files:
        path = (request.base_dir / name).resolve()
        try:
            path.relative_to(root)
        except ValueError:
            parts.append(f"## {name}\n\n(outside the project folder; not shown)\n")
            continue
        try:
            data = path.read_bytes()[:FOCUS_FILE_LIMIT].decode("utf-8", errors="replace")
        except OSError as exc:
            parts.append(f"## {name}\n\n(not readable: {exc.strerror or exc})\n")
            continue
        parts.append(f"## {name}\n\n```\n{data}\n```\n")
    if request.project_files:
        parts.append("## Other tracked files\n\n" + "\n".join(f"- {p}" for p in request.project_files) + "\n")
    return "\n".join(parts)


class TicketWorker:
    """Runs one ticket on the calling (pool) thread."""

    def __init__(
        self,
        host: WorkerHost,
        caller: TierCaller,
        ticket: Ticket,
        abort: threading.Event,
        *,
        context_request: ContextRequest,
        context_builder: ContextBuilder | None,
        track_title: str = "",
        dependency_results: dict[str, str] | None = None,
    ) -> None:
        self.host = host
        self.caller = caller
        self.ticket = ticket  # a snapshot: the conductor owns the live record
        self.abort = abort
        self.context_request = context_request
        self.context_builder = context_builder or default_tier3_context
        self.track_title = track_title
        self.dependency_results = dependency_results or {}
        self.patched = False  # a Tier 4 patch was applied for this ticket (a change it made)
        self.workspace: Workspace | None = None  # the current attempt's scratch tree
        self.edited = False  # a human edited the ticket's description: the prompt is rebuilt

    # -- the lifecycle --------------------------------------------------------------------
    def run(self) -> None:
        try:
            self._run()
        finally:
            self._end_attempt(final=True)

    def _run(self) -> None:
        ticket, host, abort = self.ticket, self.host, self.abort
        try:
            if abort.is_set():
                return
            prompt, context = self._prompt(), self._context()
            decision = host.ask(MMASpawnApprovalDialog(ticket.id, ROLE, prompt, context), abort)
            if decision is None or abort.is_set():
                return
            if decision.abort:
                host.abort_track(decision.decider)
                return
            if not decision.approved:
                host.spawn_rejected(ticket.id, abort, decision.reason or "spawn rejected")
                return
            prompt, context = decision.payload["prompt"], decision.payload["context_md"]
            notes: str | None = ""
            while True:
                failure, patchable, kind = "", False, FailureClass.WORKER_FAILED
                outcome = self._attempt(prompt + notes, context)
                if outcome is None:
                    return
                if outcome.error is not None:  # provider or tool-loop failure: an attempt that failed
                    failure, kind = _describe(outcome.error), classify_error(outcome.error)
                    if kind is FailureClass.WORKER_EXCEPTION:
                        kind = FailureClass.SEND_FAILED  # raised by the send, not by this worker
                else:
                    answer = outcome.answer
                    text = answer.lstrip()
                    if text.startswith(BLOCKED_MARKER):
                        failure = text[len(BLOCKED_MARKER) :].strip() or "the worker reported BLOCKED"
                        kind = FailureClass.WORKER_BLOCKED
                    elif text.startswith(FAILED_MARKER):
                        failure, patchable = text[len(FAILED_MARKER) :].strip() or "(no failure output)", True
                    else:
                        changed = bool(outcome.patch.strip())
                        failure = unfinished_work(ticket, outcome.transcript, self.patched, changed) or ""
                        kind = FailureClass.UNFINISHED_WORK
                        if not failure and changed:
                            kind, failure = self._land(outcome.patch)
                        if not failure:
                            host.complete(ticket.id, abort, answer)
                            return
                        if kind is FailureClass.UNFINISHED_WORK and getattr(answer, "limit", ""):
                            kind = FailureClass.GUARD_TRIP  # the round limit forced the answer
                notes = self._recover(kind, failure, context, patchable)
                if notes is None or abort.is_set():
                    return
                if self.edited:
                    prompt, self.edited = self._prompt(), False
        except Aborted:
            return
        except Exception as exc:  # a bug of ours: never leave the ticket in_progress
            log.exception("worker for %s failed", ticket.id)
            host.block(ticket.id, abort, f"internal error: {_describe(exc)}", failed=False)

    # -- one attempt in its own scratch tree ---------------------------------------------------
    def _attempt(self, prompt: str, context: str) -> TicketOutcome | None:
        """One attempt in a fresh scratch tree of the project as it is now (the previous attempt's
        tree is removed first); None when the ticket was aborted meanwhile."""
        host, ticket = self.host, self.ticket
        self._end_attempt(final=False)
        self.workspace = host.workspace_for(ticket.id)
        settings = AttemptSettings(host.model_for(ticket.id), WorktreeApprovals(host.worktree_approvals))
        try:
            common = {"prompt": prompt, "context": context, "step_gate": self._step_gate, "abort": self.abort}
            with host.in_tier(ROLE):
                remote = host.remote_attempts
                if remote is not None:  # a Ray task; the same outcome as run_ticket's
                    retry = lambda: host.note_retry(ticket.id)  # noqa: E731
                    return remote.run(ticket, self.workspace, settings, on_retry=retry, **common)
                return run_ticket(self.caller, ticket, self.workspace, settings, **common)
        except Aborted:
            return None
        except ScratchTreeError as exc:  # the tree could not be made or diffed: a failed attempt
            return TicketOutcome(error=exc)

    def _land(self, patch: str) -> tuple[FailureClass, str]:
        """The attempt's patch behind an editable ``apply_patch`` dialog, then merged three-way into
        the project; ``(class, "")`` when it landed, else the failure (nothing written)."""
        host, abort, workspace = self.host, self.abort, self.workspace
        assert workspace is not None
        decision = host.ask(ToolApprovalDialog("apply_patch", {"patch": patch}, patch, self.ticket.id), abort)
        if decision is None or abort.is_set():
            raise Aborted("aborted during the patch review")
        if decision.abort:
            host.abort_track(decision.decider)
            raise Aborted("the track was aborted during the patch review")
        if not decision.approved:
            why = decision.reason or "no reason given"
            return FailureClass.PATCH_REJECTED, f"the ticket's patch was rejected ({why}); nothing written"
        edited = str(decision.payload["args"].get("patch", patch))
        try:
            with host.merge_lock:
                paths = merge_into(host.base_dir, workspace.versions(edited), host.path_check)
        except MergeConflict as exc:
            return FailureClass.MERGE_CONFLICT, exc.report()
        except (PatchError, ScratchTreeError) as exc:
            return FailureClass.MERGE_CONFLICT, f"the patch cannot be merged ({exc}); nothing was written"
        shown = ", ".join(str(p.relative_to(host.base_dir)) for p in paths) or "nothing (already there)"
        host.notify("info", f"ticket {self.ticket.id}: its patch was merged into {shown}")
        return FailureClass.WORKER_FAILED, ""

    def _end_attempt(self, *, final: bool) -> None:
        """The last attempt's tree: removed, or — when the ticket ended blocked — kept for
        inspection (the conductor records where)."""
        workspace, self.workspace = self.workspace, None
        if workspace is not None:
            self.host.finish_workspace(self.ticket.id, self.abort, workspace, final=final)

    # -- recovery ----------------------------------------------------------------------------
    def _recover(self, kind: FailureClass, failure: str, context: str, patchable: bool) -> str | None:
        """Carry out the orchestrator's strategy: the notes for another attempt, or None when
        this worker is done (replanning, skipped, blocked or aborted)."""
        host, ticket, abort = self.host, self.ticket, self.abort
        step = host.recover(ticket.id, kind)
        strategy = step.strategy
        if strategy is Strategy.TIER4_QA:
            notes = self._tier4(failure, context, patchable)
        elif strategy in (Strategy.RETRY, Strategy.ESCALATE_MODEL, Strategy.SWITCH_PROVIDER):
            if abort.wait(step.backoff_s):
                return None
            attempt = host.retry_count(ticket.id) + 1
            notes = f"\n\nAttempt {attempt} failed ({kind}):\n{failure[:2000]}\n"
        elif strategy is Strategy.REPLAN:
            host.block(ticket.id, abort, failure, failed=True, replan=True)
            return None
        elif strategy is Strategy.SKIP:
            host.skip(ticket.id, abort, f"{kind}: {failure[:200]}")
            return None
        elif strategy is Strategy.ABORT:
            host.abort_track("recovery")
            return None
        else:
            return self._ask_human(step, failure)
        if abort.is_set():
            return None
        host.note_retry(ticket.id)
        return notes

    def _ask_human(self, step: RecoveryStep, failure: str) -> str | None:
        ticket = self.ticket
        description = ask_recovery(self.host, ticket.id, ticket.description, step, failure, self.abort)
        if description is None:
            return None
        if description != ticket.description:
            ticket.description, self.edited = description, True
        return f"\n\nThe previous attempt failed:\n{failure[:2000]}\nA human asked for another attempt.\n"

    # -- pieces ----------------------------------------------------------------------------
    def _prompt(self) -> str:
        notes = []
        if self.dependency_results:
            notes.append("\nResults of the tickets this one depends on:")
            for tid, result in self.dependency_results.items():
                notes.append(f"- {tid}: {result[:1000]}")
        return (
            tier3_worker_prompt(self.ticket, None, notes)
            if not self.track_title
            else (f"Track: {self.track_title}\n" + tier3_worker_prompt(self.ticket, None, notes))
        )

    def _context(self) -> str:
        try:
            return self.context_builder(self.context_request)
        except Exception as exc:
            log.warning("context for %s failed: %s", self.ticket.id, exc)
            return f"(the worker context could not be built: {_describe(exc)})"

    def _step_gate(self, step: StepRequest) -> StepVerdict:
        if self.abort.is_set():
            return StepVerdict(False, step.args, "the ticket was aborted")
        shown: dict[str, Any] = {"tool": step.tool, "args": step.args}
        if step.preview:
            shown["preview"] = step.preview
        decision = self.host.ask(MMAApprovalDialog(self.ticket.id, json.dumps(shown, indent=2)), self.abort)
        if decision is None or self.abort.is_set():
            return StepVerdict(False, step.args, "the ticket was aborted")
        if decision.abort:
            self.host.abort_track(decision.decider)
            return StepVerdict(False, step.args, "the track was aborted")
        if not decision.approved:
            return StepVerdict(False, step.args, decision.reason or "the user rejected this step")
        try:
            edited = json.loads(decision.payload["payload"])
        except json.JSONDecodeError as exc:
            return StepVerdict(False, step.args, f"the edited step is not valid JSON ({exc.msg}); not run")
        if not isinstance(edited, dict) or not isinstance(edited.get("args"), dict):
            return StepVerdict(False, step.args, "the edited step has no 'args' object; not run")
        if edited.get("tool", step.tool) != step.tool:
            return StepVerdict(False, step.args, "the edited step names another tool; not run")
        return StepVerdict(True, edited["args"])

    def _tier4(self, failure: str, context: str, patchable: bool) -> str:
        host, abort = self.host, self.abort
        attempt = host.retry_count(self.ticket.id) + 1
        with host.in_tier("Tier 4"):
            try:
                summary = run_tier4_qa(self.caller, failure, context, model=host.tier4_model, abort=abort)
            except Aborted:
                raise
            except Exception as exc:
                log.warning("Tier 4 QA failed: %s", exc)
                summary = failure[:2000]
            notes = f"\n\nAttempt {attempt} failed. QA summary of the failure:\n{summary}\n"
            if not (patchable and host.tier4_patches):
                return notes
            try:
                diff = run_tier4_patch_generation(
                    self.caller, failure, context, model=host.tier4_model, abort=abort
                )
            except Aborted:
                raise
            except Exception as exc:
                log.warning("Tier 4 patch generation failed: %s", exc)
                return notes
        if not diff.strip():
            return notes
        decision = host.ask(ToolApprovalDialog("apply_patch", {"patch": diff}, diff, self.ticket.id), abort)
        if decision is None or abort.is_set():
            raise Aborted("aborted during the patch review")
        if decision.abort:
            host.abort_track(decision.decider)
            raise Aborted("the track was aborted during the patch review")
        if not decision.approved:
            return notes + "A Tier 4 patch was proposed and rejected by the user; fix the failure yourself.\n"
        patch = decision.payload["args"].get("patch", diff)
        try:
            with host.merge_lock:
                paths = apply_patch(str(patch), host.base_dir, host.path_check)
        except PatchError as exc:
            host.notify("warning", f"ticket {self.ticket.id}: the Tier 4 patch did not apply: {exc}")
            return notes + f"A Tier 4 patch could not be applied ({exc}); fix the failure yourself.\n"
        self.patched = True
        shown = ", ".join(str(p.relative_to(host.base_dir)) for p in paths)
        return notes + f"A Tier 4 patch was applied to: {shown}. Verify it and finish the ticket.\n"


def unfinished_work(
    ticket: Ticket, ran: list[dict[str, Any]], patched: bool = False, changed: bool | None = None
) -> str | None:
    """Why a ticket whose worker claims success did not do its work (None when it did), from the
    attempt's tool calls (``ran``) and whether its scratch tree changed (``changed``; None when
    the attempt had no tree: a successful change then counts): every change failed or was
    rejected, or nothing changed (no patch, no Tier 4 patch) while the ticket names files to
    change. The reason quotes the failed tool results."""
    changes = [entry for entry in ran if entry.get("mutating")]
    succeeded = any(entry.get("status") == "success" for entry in changes)
    if patched or changed or (changed is None and succeeded):
        return None
    if changes and not succeeded:
        lines = [
            f"- {entry.get('tool', '?')} ({entry.get('status', '?')}): "
            f"{str(entry.get('message') or '(no message)')[:300]}"
            for entry in changes
        ]
        return "the worker reported success, but every change it tried failed:\n" + "\n".join(lines)
    if ticket.target_files:
        return (
            f"the worker reported success without changing anything; the ticket asks for changes to "
            f"{', '.join(ticket.target_files)}"
        )
    return None


def _describe(exc: BaseException) -> str:
    ui_message = getattr(exc, "ui_message", None)
    if callable(ui_message):
        with contextlib.suppress(Exception):
            return str(ui_message())
    return f"{type(exc).__name__}: {exc}"
