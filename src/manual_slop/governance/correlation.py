"""Which agent run the calling code works for, so every log line it makes can say so.

A run (one send of the AI client: a chat message, an MMA ticket attempt, a plan subtask) is
*current* on the thread that runs its tool loop (:func:`run_scope`), and on a tool thread while
that thread asks the Execution Clutch about one of the run's calls (:func:`within_run` wraps the
approval callback). Two places read it:

- the comms log adds ``run_id``, ``conversation`` and ``ticket`` to every entry
  (:func:`correlation`);
- the clutch adds them, and the tool call's id, to every decision it audits, and lets the run's
  log hear the decision (:func:`bind_dialog`).

The current run lives in a :class:`~contextvars.ContextVar`, not in a registry: each thread
sees only its own. This module imports nothing at run time, so the comms log and the clutch can
import it without pulling the AI client in.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from manual_slop.dialogs import Decision, PendingDialog
    from manual_slop.tools.tool import ApprovalRequest, ApprovalResult, PreToolCallback

__all__ = ["RunObserver", "bind_dialog", "correlation", "current_run", "run_scope", "within_run"]


class RunObserver(Protocol):
    """What a run offers the code that works for it (``run_log.RunLog``)."""

    @property
    def run_id(self) -> str: ...

    @property
    def conversation(self) -> str: ...

    @property
    def ticket(self) -> str: ...

    def decision(self, dialog: PendingDialog, decision: Decision, call_id: str) -> None:
        """A dialog asked during the run was decided (any thread)."""


@dataclass(frozen=True, slots=True)
class _Current:
    run: RunObserver
    call_id: str = ""  # the tool call being approved (on a tool thread)


_current: ContextVar[_Current | None] = ContextVar("manual_slop_current_run", default=None)


def current_run() -> RunObserver | None:
    """The run the calling code works for, or None."""
    current = _current.get()
    return None if current is None else current.run


@contextlib.contextmanager
def run_scope(run: RunObserver | None, call_id: str = "") -> Iterator[None]:
    """Make ``run`` current (for ``call_id``) until the block ends; None changes nothing."""
    if run is None:
        yield
        return
    token = _current.set(_Current(run, call_id))
    try:
        yield
    finally:
        _current.reset(token)


def correlation() -> dict[str, str]:
    """The ids a log line made now carries: ``run_id``, ``conversation``, ``ticket`` and
    ``call_id`` (the last two only when set); ``{}`` outside a run."""
    current = _current.get()
    if current is None:
        return {}
    run = current.run
    ids = {"run_id": run.run_id, "conversation": run.conversation}
    if run.ticket:
        ids["ticket"] = run.ticket
    if current.call_id:
        ids["call_id"] = current.call_id
    return ids


def within_run(callback: PreToolCallback | None) -> PreToolCallback | None:
    """``callback`` made to run inside the current run, on whichever tool thread calls it, so the
    dialogs it opens belong to the run and name the call; unchanged outside a run."""
    run = current_run()
    if callback is None or run is None:
        return callback
    ask = callback

    def approve(request: ApprovalRequest) -> ApprovalResult:
        with run_scope(run, request.call.id):
            return ask(request)

    return approve


def bind_dialog(dialog: PendingDialog) -> dict[str, str]:
    """The correlation ids of the run ``dialog`` is asked in (``{}`` outside a run); that run
    hears the dialog's decision."""
    current = _current.get()
    if current is None:
        return {}
    ids = correlation()
    run, call_id = current.run, current.call_id
    dialog.on_resolved(lambda resolved, decision: run.decision(resolved, decision, call_id))
    return ids
