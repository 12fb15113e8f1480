"""One subtask of a plan on one pool thread: its engine, its attempts, its outcome.

:meth:`SubtaskWorker.run` reads top to bottom: abort check → attempt (the host builds the
:class:`~manual_slop.plan.engines.SubtaskRun`, the engine runs it) → on success the host saves
the result and completes the ticket; a failure is classified and the recovery orchestrator
(``host.recover``) says what follows — another attempt after a backoff, a replan, or the
``recovery`` dialog (:func:`~manual_slop.mma.worker.ask_recovery`). The user rejecting what
an engine produced ends the subtask at once, without a retry. The abort event is checked before each
attempt and after it; the engine watches it (and the attempt's cancel token) while it runs.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Protocol

from manual_slop.cancel import CancelToken
from manual_slop.governance.recovery import RecoveryStep
from manual_slop.governance.severity import ATTEMPTS, FailureClass, Strategy, classify_error
from manual_slop.mma.errors import Aborted
from manual_slop.mma.worker import RecoveryHost, ask_recovery
from manual_slop.plan.engines import Engine, EngineRejected, EngineResult, SubtaskRun, describe_failure

__all__ = ["SubtaskHost", "SubtaskWorker"]

log = logging.getLogger(__name__)

ROLE = "Tier 3"  # subtasks are the plan's workers: their comms and tool calls are tagged like MMA's


class SubtaskHost(RecoveryHost, Protocol):
    """What a subtask worker asks of its plan conductor (every call is thread-safe)."""

    def subtask_run(
        self, ticket_id: str, attempt: int, abort: threading.Event, cancel: CancelToken
    ) -> SubtaskRun: ...

    def engine_for(self, ticket_id: str) -> Engine: ...

    def subtask_finished(
        self, ticket_id: str, abort: threading.Event, result: EngineResult, run: SubtaskRun
    ) -> None: ...

    def add_usage(self, ticket_id: str, usage: dict[str, int]) -> None: ...

    def retry_count(self, ticket_id: str) -> int: ...

    def give_up(self, ticket_id: str) -> bool: ...

    def note_retry(self, ticket_id: str) -> None: ...

    def recover(self, ticket_id: str, failure: FailureClass) -> RecoveryStep: ...

    def objective(self, ticket_id: str) -> str: ...

    def in_tier(self, tier: str) -> contextlib.AbstractContextManager[None]: ...


class SubtaskWorker:
    """Runs one subtask's attempts on the calling (pool) thread."""

    def __init__(
        self, host: SubtaskHost, ticket_id: str, abort: threading.Event, cancel: CancelToken
    ) -> None:
        self.host = host
        self.ticket_id = ticket_id
        self.abort = abort
        self.cancel = cancel

    def run(self) -> None:
        host, tid, abort = self.host, self.ticket_id, self.abort
        try:
            while not abort.is_set():
                attempt = host.retry_count(tid) + 1
                run = host.subtask_run(tid, attempt, abort, self.cancel)
                engine = host.engine_for(tid)
                try:
                    with host.in_tier(ROLE):
                        result = engine.run(run)
                except Aborted:
                    return
                except EngineRejected as exc:
                    host.block(tid, abort, f"rejected by the user: {exc}", failed=False)
                    return
                except Exception as exc:  # the engine failed: an attempt that failed
                    failure = f"{engine.name} engine, attempt {attempt}: {describe_failure(exc)}"
                    kind = classify_error(exc)
                    log.info("subtask %s: %s", tid, failure)
                else:
                    if abort.is_set():
                        return
                    host.subtask_finished(tid, abort, result, run)
                    return
                if not self._recover(
                    FailureClass.SEND_FAILED if kind is FailureClass.WORKER_EXCEPTION else kind, failure
                ):
                    return
        except Exception as exc:  # a bug of ours: never leave the subtask running
            log.exception("subtask worker for %s failed", tid)
            host.block(tid, abort, f"internal error: {describe_failure(exc)}", failed=False)

    def _recover(self, kind: FailureClass, failure: str) -> bool:
        """Carry out the orchestrator's strategy; True: another attempt. A plan has no Tier 4:
        every attempt strategy is one more attempt after the step's backoff."""
        host, tid, abort = self.host, self.ticket_id, self.abort
        step = host.recover(tid, kind)
        if step.strategy in ATTEMPTS:
            if abort.wait(step.backoff_s):
                return False
            host.note_retry(tid)
            return True
        if step.strategy is Strategy.REPLAN:
            host.block(tid, abort, failure, failed=True, replan=True)
        elif step.strategy is Strategy.SKIP:
            host.skip(tid, abort, f"{kind}: {failure[:200]}")
        elif step.strategy is Strategy.ABORT:
            host.abort_track("recovery")
        else:
            return ask_recovery(host, tid, host.objective(tid), step, failure, abort) is not None
        return False
