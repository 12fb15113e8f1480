"""ConductorEngine: runs one track's ticket DAG through a bounded pool of workers.

The loop (on its own thread) reads top to bottom::

    publish/persist what changed → abort or stop? → replan requested? → paused?
    → over a cost_over rule's threshold? (pause, ask) → complete? (done) → tick the engine for
    as many ready tickets as there are free workers → nothing ready, nothing running?
    (blocked) → spawn → wait for a change

Every ticket change goes through the :class:`~manual_slop.mma.dag.ExecutionEngine`
under one lock, is published at once as a ``ticket_status`` event, and marks the
track dirty; the loop then posts one ``mma_state_update`` snapshot and saves the
track (coalescing bursts). Workers own nothing but their ticket snapshot: they
report back through the :class:`~manual_slop.mma.worker.WorkerHost` methods here,
which ignore a worker whose ticket was aborted meanwhile.

Abort (one ticket or the whole track) marks the tickets ``killed`` under the lock,
sets their abort events and rejects their open dialogs, so it takes effect at once;
workers notice within one poll of their event. ``stop`` (app shutdown) does the same
but puts in-flight tickets back to ``todo`` so a restart resumes them.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import json
import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from manual_slop.dialogs import CostDialog, Decision, MMAApprovalDialog, PendingDialog
from manual_slop.governance.durable import claim_restored
from manual_slop.governance.recovery import RecoveryOrchestrator, RecoveryStep
from manual_slop.governance.severity import FailureClass
from manual_slop.mma.client import ContextBuilder, ContextRequest, TierCaller
from manual_slop.mma.conductor_config import (
    TRACK_STATUS,
    ConductorConfig,
    ConductorHost,
    ConductorStatus,
    StateSink,
)
from manual_slop.mma.dag import ExecutionEngine, TrackDAG
from manual_slop.mma.errors import Aborted, MMAError, PersistenceError
from manual_slop.mma.models import Ticket, TicketStatus, Track
from manual_slop.mma.persistence import TrackStore
from manual_slop.mma.planning import find_json_object, parse_tickets, replan_track
from manual_slop.mma.pool import WorkerPool
from manual_slop.mma.tier4 import PathCheck
from manual_slop.mma.worker import TicketWorker
from manual_slop.mma.worktree import Workspace, discard_kept

__all__ = ["ConductorConfig", "ConductorEngine", "ConductorHost", "ConductorStatus", "StateSink"]

log = logging.getLogger(__name__)

IDLE_WAIT_S = 0.05  # the loop also wakes on every change; this bounds a missed wake
FAILURES_BEFORE_REPLAN = 3


class ConductorEngine:
    """Orchestrates one track; see the module docstring for the loop."""

    def __init__(
        self,
        track: Track,
        event_queue: StateSink | None = None,
        auto_queue: bool = True,
        *,
        host: ConductorHost,
        caller: TierCaller,
        context_builder: ContextBuilder | None = None,
        config: ConductorConfig | None = None,
        store: TrackStore | None = None,
    ) -> None:
        self.track = track
        self.event_queue = event_queue
        self.auto_queue = auto_queue
        self.host = host
        self.caller = caller
        self.context_builder = context_builder
        self.config = config or ConductorConfig()
        self.store = store
        self.tier_usage = caller.usage
        self.track.prepare_for_run()
        self.engine = ExecutionEngine(TrackDAG(track.tickets))  # raises DagError before anything runs
        self.pool = WorkerPool(self.config.max_workers)
        self.pool.on_exit(lambda _tid: self._wake.set())
        self._lock = threading.RLock()
        self.merge_lock = threading.Lock()  # one patch merged into the project at a time
        self._workspaces: dict[str, Workspace] = {}  # the running attempts' scratch trees
        self._wake = threading.Event()
        self._pause = threading.Event()
        self._abort_all = threading.Event()
        self._stop = threading.Event()
        self._abort_events: dict[str, threading.Event] = {}
        self._open_dialogs: dict[str, tuple[PendingDialog, threading.Event]] = {}
        self._replans: deque[tuple[str, str]] = deque()
        self._failures: Counter[str] = Counter()
        self._attempt_floor: Counter[str] = Counter()  # retry_count when a human granted fresh retries
        self.recovery = RecoveryOrchestrator(
            repeat_threshold=self.config.recovery_repeat,
            window_s=self.config.recovery_window_s,
            backoff_base_s=self.config.retry_backoff_s,
            backoff_max_s=max(30.0, self.config.retry_backoff_s),
        )
        self._tiers: Counter[str] = Counter()
        self._credits = 0
        self._worker_names = itertools.count(1)
        self._status = ConductorStatus.IDLE
        self._dirty = True
        self._thread: threading.Thread | None = None
        self._cost_askers: list[threading.Thread] = []
        for ticket in self.engine.changed:
            self._announce(ticket)

    # =====================================================================================
    # control (any thread)
    # =====================================================================================
    @property
    def status(self) -> ConductorStatus:
        with self._lock:
            return self._status

    @property
    def track_id(self) -> str:
        return self.track.id

    @property
    def base_dir(self) -> Path:
        return self.config.base_dir

    @property
    def path_check(self) -> PathCheck | None:
        return self.config.path_check

    @property
    def tier4_model(self) -> str:
        return self.config.tier4_model

    @property
    def tier4_patches(self) -> bool:
        return self.config.tier4_patches

    @property
    def worktree_approvals(self) -> str:
        return self.config.worktree_approvals

    @property
    def remote_attempts(self) -> Any:
        return self.config.remote_attempts

    def start(self) -> threading.Thread:
        """Run the loop on a new thread ``slop-mma-conductor``."""
        if self._thread is not None:
            raise RuntimeError("the conductor was already started")
        self._thread = threading.Thread(target=self.run, name="slop-mma-conductor", daemon=True)
        self._thread.start()
        return self._thread

    def is_alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def pause(self) -> None:
        """Start no new worker (running ones finish their ticket)."""
        self._pause.set()
        self._wake.set()

    def resume(self) -> None:
        self._pause.clear()
        self._wake.set()

    def step(self, count: int = 1) -> None:
        """Step mode (``auto_queue=False``): allow ``count`` more tickets to start."""
        with self._lock:
            self._credits += count
        self._wake.set()

    def abort(self, ticket_id: str | None = None, *, wait: float = 0.0, source: str = "gui") -> bool:
        """Kill one ticket or, with no id, the whole track. With ``wait``, join the workers
        (and the loop, for the whole track) for up to ``wait`` s; True when they all ended."""
        if ticket_id is not None:
            with self._lock:
                ticket = self.engine.dag.by_id.get(ticket_id)
                if ticket is None:
                    raise MMAError(f"track {self.track.id} has no ticket {ticket_id!r}")
                if ticket.status in (TicketStatus.COMPLETED, TicketStatus.KILLED):
                    raise MMAError(f"ticket {ticket_id} is already {ticket.status}")
                self._changed(self.engine.kill(ticket_id, f"aborted by {source}"))
                self._cancel_worker(ticket_id, source, "ticket aborted")
            return self._join_workers([ticket_id], wait) if wait else True
        self._abort_all.set()
        with self._lock:
            for tid in self.engine.in_progress():
                self._changed(self.engine.kill(tid, f"track aborted by {source}"))
            self._cancel_all(source, "track aborted")
        self._wake.set()
        return self.join(wait) if wait else True

    def stop(self, timeout: float = 1.0) -> bool:
        """App shutdown: in-flight tickets go back to ``todo``; joins for up to ``timeout`` s."""
        self._stop.set()
        with self._lock:
            for tid in self.engine.in_progress():
                self._changed([self.engine.requeue(tid)])
            self._cancel_all("shutdown", "the app is shutting down")
        self._wake.set()
        ended = self.join(timeout)
        self.close_workspaces()
        return ended

    def close_workspaces(self) -> None:
        """Remove the scratch trees of attempts still registered (a worker that did not end in
        time at shutdown); kept trees of blocked tickets stay."""
        with self._lock:
            open_trees, self._workspaces = list(self._workspaces.values()), {}
        for workspace in open_trees:
            workspace.close()

    def join(self, timeout: float) -> bool:
        """Wait for the loop thread and every worker; True when all ended in time."""
        deadline = time.monotonic() + timeout
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(max(0.0, deadline - time.monotonic()))
        for asker in list(self._cost_askers):
            asker.join(max(0.0, deadline - time.monotonic()))
        leftovers = self.pool.join(max(0.0, deadline - time.monotonic()))
        askers = any(asker.is_alive() for asker in self._cost_askers)
        return not leftovers and not askers and not self.is_alive()

    def block_ticket(self, ticket_id: str, reason: str) -> None:
        """Block a ``todo`` or ``in_progress`` ticket by hand (its worker is stopped)."""
        with self._lock:
            ticket = self._ticket(ticket_id)
            if ticket.status not in (TicketStatus.TODO, TicketStatus.IN_PROGRESS):
                raise MMAError(
                    f"ticket {ticket_id} is {ticket.status}; only todo or running tickets can be blocked"
                )
            running = ticket.status is TicketStatus.IN_PROGRESS
            self._changed(self.engine.block(ticket_id, reason or "blocked by the user", manual=True))
            if running:
                self._cancel_worker(ticket_id, "gui", "ticket blocked")

    def unblock_ticket(self, ticket_id: str) -> None:
        """A blocked or killed ticket goes back to ``todo`` (with the blocks it cascaded)."""
        with self._lock:
            ticket = self._ticket(ticket_id)  # MMAError for an unknown id
            changed = self.engine.unblock(ticket_id)
            self._failures.pop(ticket_id, None)
            self._discard_kept(ticket)
            self._changed(changed)

    def set_model_override(self, ticket_id: str, model: str) -> None:
        with self._lock:
            ticket = self._ticket(ticket_id)
            ticket.model_override = model
            ticket.updated_at = time.time()
            self._changed([ticket])

    def set_dependencies(self, ticket_id: str, depends_on: Sequence[str]) -> None:
        """Replace a waiting ticket's dependencies (a DAG edit); MMAError (a cycle, an unknown id,
        a ticket already running or done) changes nothing."""
        with self._lock:
            ticket = self._ticket(ticket_id)
            if ticket.status not in (TicketStatus.TODO, TicketStatus.BLOCKED):
                raise MMAError(
                    f"ticket {ticket_id} is {ticket.status}; only a waiting ticket's dependencies can change"
                )
            tickets = [t.copy() for t in self.track.tickets]
            edited = next(t for t in tickets if t.id == ticket_id)
            edited.depends_on = list(depends_on)
            edited.updated_at = time.time()
            engine = ExecutionEngine(TrackDAG(tickets))  # DagError (cycle, unknown id) before any change
            self.track.tickets = tickets
            self.engine = engine
            self._changed([*engine.changed, edited])

    def snapshot(self) -> dict[str, Any]:
        """The state the GUI and ``GET /api/mma/status`` show."""
        with self._lock:
            return {
                "status": str(self._status),
                "active_tier": self._active_tier(),
                "tier_usage": self.tier_usage.snapshot(),
                "tickets": [t.to_dict() for t in self.track.tickets],
                "track": self.track.summary(),
            }

    # =====================================================================================
    # the loop (conductor thread)
    # =====================================================================================
    def run(self) -> None:
        final = ConductorStatus.STOPPED
        self._set_status(ConductorStatus.RUNNING)
        try:
            while True:
                self._flush()
                if self._abort_all.is_set():
                    final = ConductorStatus.ABORTED
                    break
                if self._stop.is_set():
                    final = ConductorStatus.STOPPED
                    break
                if self._replans:
                    self._replan(*self._replans.popleft())
                    continue
                if self._pause.is_set() or self._over_budget():
                    self._set_status(ConductorStatus.PAUSED)
                    self._sleep()
                    continue
                self._set_status(ConductorStatus.RUNNING)
                with self._lock:
                    if self.engine.is_complete():
                        final = ConductorStatus.DONE
                        break
                    free = self.pool.free_slots()
                    if not self.auto_queue:
                        free = min(free, self._credits)
                    ready = self.engine.tick(free) if free > 0 else []
                    if not ready and self.engine.is_stalled() and not self.pool.active_count():
                        final = ConductorStatus.BLOCKED
                        break
                    for ticket in ready:
                        self._spawn(ticket)
                self._sleep()
        except Exception as exc:
            log.exception("conductor loop failed")
            self._notify("error", f"MMA conductor stopped: {type(exc).__name__}: {exc}")
            final = ConductorStatus.BLOCKED
        finally:
            if final in (ConductorStatus.ABORTED, ConductorStatus.STOPPED):
                self.pool.join(2.0)
            final = self._after_run(final)
            self._set_status(final)
            self._flush()

    def _after_run(self, final: ConductorStatus) -> ConductorStatus:
        """The loop ended with ``final``; what comes after it (a plan merges and judges). Runs on the
        conductor thread before the final status is published; returns the status to publish."""
        return final

    def _sleep(self) -> None:
        self._wake.wait(IDLE_WAIT_S)
        self._wake.clear()

    def _over_budget(self) -> bool:
        """The spend crossed a ``cost_over`` threshold: pause, and ask on a thread of its own
        (the loop keeps publishing); approving resumes the track, rejecting leaves it paused."""
        watch = self.config.cost_watch
        if watch is None:
            return False
        notice = watch.unknown_notice(self.track.id)
        if notice:
            self._notify("warning", notice)
        dialog = watch.check(self.track.id)
        if dialog is None:
            return False
        self.pause()
        asker = threading.Thread(target=self._ask_cost, args=(dialog,), name="slop-mma-cost", daemon=True)
        self._cost_askers.append(asker)
        asker.start()
        return True

    def _ask_cost(self, dialog: CostDialog) -> None:
        decision = self.ask(dialog, self._abort_all)
        if decision is not None and decision.abort:
            self.abort(source=decision.decider)
            return
        if decision is not None and decision.approved:
            self._notify("info", f"track {self.track.id} resumes: the spend was approved ({decision.rule})")
            self.resume()
            return
        self.pause()  # a resume meanwhile does not outlive the refusal
        self._notify("warning", f"track {self.track.id} stays paused: {dialog.payload['message']}")

    def _spawn(self, ticket: Ticket) -> None:
        worker_name = f"worker-{next(self._worker_names)}"
        self._discard_kept(ticket)  # a ticket that runs again starts from the project, not its old tree
        self.engine.start(ticket.id, worker_name)
        if not self.auto_queue:
            self._credits -= 1
        abort = threading.Event()
        self._abort_events[ticket.id] = abort
        if self.pool.spawn(ticket.id, self._worker_for(ticket, abort)) is None:  # free slots were counted
            self.engine.requeue(ticket.id)
        self._changed([ticket])

    def _worker_for(self, ticket: Ticket, abort: threading.Event) -> Callable[[], None]:
        """What runs ``ticket`` on a pool thread (a Tier 3 worker; plans run their subtasks' engines)."""
        by_id = self.engine.dag.by_id
        worker = TicketWorker(
            self,
            self.caller,
            ticket.copy(),
            abort,
            context_request=ContextRequest(
                tuple(ticket.target_files),
                self.config.base_dir,
                self.config.project_files,
                self.config.exclude,
                query=ticket.description,
            ),
            context_builder=self.context_builder,
            track_title=self.track.title,
            dependency_results={
                d: by_id[d].result for d in ticket.depends_on if d in by_id and by_id[d].result
            },
        )
        return worker.run

    def _replan(self, ticket_id: str, error: str) -> None:
        with self._lock:
            if self.track.replan_count >= self.config.max_replans or ticket_id not in self.engine.dag.by_id:
                return
            failed = self.engine.dag.by_id[ticket_id].copy()
            kept = [
                t.id
                for t in self.track.tickets
                if t.status in (TicketStatus.COMPLETED, TicketStatus.IN_PROGRESS)
            ]
            remaining = [t.copy() for t in self.track.tickets if t.id not in set(kept)]
            track_view = copy.deepcopy(self.track)
            self._tiers["Tier 2"] += 1
            self._dirty = True
        self._flush()
        try:
            tickets = replan_track(
                self.caller, track_view, failed, error, remaining, kept,
                model=self.config.tier2_model, abort=self._abort_all,
            )  # fmt: skip
        except Aborted:
            return
        except Exception as exc:
            self._notify("warning", f"track {self.track.id}: replanning after {ticket_id} failed: {exc}")
            return
        finally:
            with self._lock:
                self._tiers["Tier 2"] -= 1
                self._dirty = True
        payload = {
            "replan": track_view.replan_count + 1,
            "replaces": [t.id for t in remaining],
            "tickets": [_plan_view(t) for t in tickets],
        }
        decision = self.ask(MMAApprovalDialog(ticket_id, json.dumps(payload, indent=2)), self._abort_all)
        if decision is None or decision.abort or not decision.approved:
            if decision is not None and decision.abort:
                self.abort(source=decision.decider)
            self._notify("info", f"track {self.track.id}: the replan after {ticket_id} was not applied")
            return
        try:
            tickets = parse_tickets(find_json_object(decision.payload["payload"]), kept)
        except ValueError as exc:
            self._notify("error", f"track {self.track.id}: the edited replan is invalid ({exc}); not applied")
            return
        with self._lock:
            keep = set(self.engine.in_progress()) | {
                t.id for t in self.track.tickets if t.status is TicketStatus.COMPLETED
            }
            new_list = [t for t in self.track.tickets if t.id in keep] + tickets
            try:  # a kept ticket may have been aborted meanwhile: validate before replacing anything
                engine = ExecutionEngine(TrackDAG(new_list))
            except MMAError as exc:
                self._notify(
                    "error", f"track {self.track.id}: the replan no longer fits ({exc}); not applied"
                )
                return
            self.track.tickets = new_list
            self.track.replan_count += 1
            self.engine = engine
            self._changed(self.track.tickets)

    # =====================================================================================
    # WorkerHost (worker threads)
    # =====================================================================================
    def ask(self, dialog: PendingDialog, abort: threading.Event) -> Decision | None:
        """Submit a dialog on the clutch; None when ``abort`` was set before it could be shown."""
        dialog.source_tier = "Tier 2" if abort is self._abort_all else "Tier 3"
        restored = claim_restored(self.host, self.track.id, dialog)  # asked before a restart
        if isinstance(restored, Decision):
            return restored
        dialog = restored or dialog
        with self._lock:
            if abort.is_set():
                return None
            self._open_dialogs[dialog.uid] = (dialog, abort)
        try:
            return self.host.request_approval(dialog)
        finally:
            with self._lock:
                self._open_dialogs.pop(dialog.uid, None)

    def model_for(self, ticket_id: str) -> str:
        with self._lock:
            ticket = self._ticket(ticket_id)
            if ticket.model_override:
                return ticket.model_override
            models = self.config.tier3_models
            return models[min(ticket.retry_count, 2, len(models) - 1)] if models else ""

    def retry_count(self, ticket_id: str) -> int:
        with self._lock:
            return self._ticket(ticket_id).retry_count

    def give_up(self, ticket_id: str) -> bool:
        """After a failed attempt: block now (retries used up, or a critical ticket that can be replanned)."""
        with self._lock:
            return self._give_up(self._ticket(ticket_id))

    def _give_up(self, ticket: Ticket) -> bool:
        replannable = self.track.replan_count < self.config.max_replans
        used = ticket.retry_count - self._attempt_floor[ticket.id]
        return used >= self.config.max_retries or (ticket.critical and replannable)

    def recover(self, ticket_id: str, failure: FailureClass) -> RecoveryStep:
        """The next strategy for a failed attempt of ``ticket_id`` (governance.recovery)."""
        with self._lock:
            attempts_left = not self._give_up(self._ticket(ticket_id))
            replan_left = self.track.replan_count < self.config.max_replans
        step = self.recovery.next_step(
            ticket_id, failure, attempts_left=attempts_left, replan_left=replan_left
        )
        self.host.publish(
            "recovery_step", {"track_id": self.track.id, "ticket_id": ticket_id, **step.to_dict()}
        )
        return step

    def grant_retry(self, ticket_id: str) -> None:
        """A human chose retry: the ticket gets a fresh set of retries and its ladder starts again."""
        with self._lock:
            self._attempt_floor[ticket_id] = self._ticket(ticket_id).retry_count
        self.recovery.restart(ticket_id)

    def skip(self, ticket_id: str, abort: threading.Event, reason: str) -> None:
        """A human chose skip: the ticket ends completed without its work; dependents go on."""
        with self._lock:
            if self._owned(ticket_id, abort):
                self.engine.complete(ticket_id, f"SKIPPED by the user: {reason}")
                self._changed([self._ticket(ticket_id)])
        self._notify("warning", f"track {self.track.id}: ticket {ticket_id} was skipped ({reason})")

    def edit_description(self, ticket_id: str, abort: threading.Event, description: str) -> None:
        """A human chose edit: the running ticket's description is the edited one from now on."""
        with self._lock:
            if self._owned(ticket_id, abort):
                ticket = self._ticket(ticket_id)
                ticket.description = description
                self._changed([ticket])

    def note_retry(self, ticket_id: str) -> None:
        with self._lock:
            if self._ticket(ticket_id).status is TicketStatus.IN_PROGRESS:
                self._changed([self.engine.note_retry(ticket_id)])

    def complete(self, ticket_id: str, abort: threading.Event, result: str) -> None:
        with self._lock:
            if self._owned(ticket_id, abort):
                self.engine.complete(ticket_id, result)
                self._changed([self._ticket(ticket_id)])

    def block(
        self, ticket_id: str, abort: threading.Event, reason: str, *, failed: bool, replan: bool = False
    ) -> None:
        """Block the ticket; ``replan``: Tier 2 replans the rest (when replans are left)."""
        with self._lock:
            if not self._owned(ticket_id, abort):
                return
            ticket = self._ticket(ticket_id)
            self._changed(self.engine.block(ticket_id, reason))
            if failed:
                self._failures[ticket_id] += ticket.retry_count + 1
            wanted = replan or (
                failed and (self._failures[ticket_id] >= FAILURES_BEFORE_REPLAN or ticket.critical)
            )
            if wanted and self.track.replan_count < self.config.max_replans:
                self._replans.append((ticket_id, reason))

    def spawn_rejected(self, ticket_id: str, abort: threading.Event, reason: str) -> None:
        with self._lock:
            if self._owned(ticket_id, abort):
                self._changed([self.engine.requeue(ticket_id)])
        self._notify("info", f"spawn of {ticket_id} rejected ({reason}); the track is paused")
        self.pause()

    def abort_track(self, source: str) -> None:
        self.abort(source=source)

    def notify(self, level: str, message: str) -> None:
        self._notify(level, message)

    @contextlib.contextmanager
    def in_tier(self, tier: str) -> Iterator[None]:
        with self._lock:
            self._tiers[tier] += 1
            self._dirty = True
        self._wake.set()
        try:
            yield
        finally:
            with self._lock:
                self._tiers[tier] -= 1
                self._dirty = True
            self._wake.set()

    def workspace_for(self, ticket_id: str) -> Workspace:
        """A fresh scratch tree (made on first use) of the project for an attempt of ``ticket_id``."""
        workspace = Workspace(self.config.base_dir, self.config.read_check)
        with self._lock:
            self._workspaces[ticket_id] = workspace
        return workspace

    def finish_workspace(
        self, ticket_id: str, abort: threading.Event, workspace: Workspace, *, final: bool
    ) -> None:
        """An attempt's tree is done with: kept (its path recorded on the ticket) when it is the
        worker's last and the ticket ended blocked, else removed."""
        with self._lock:
            if self._workspaces.get(ticket_id) is workspace:
                del self._workspaces[ticket_id]
            ticket = self.engine.dag.by_id.get(ticket_id)
            keep = (
                final
                and workspace.opened
                and ticket is not None
                and ticket.status is TicketStatus.BLOCKED
                and self._abort_events.get(ticket_id) is abort
            )
            if keep and ticket is not None:
                root = workspace.keep()
                if root is not None:
                    ticket.worktree = str(root)
                    self._changed([ticket])
                return
        workspace.close()

    # =====================================================================================
    # internals
    # =====================================================================================
    def _discard_kept(self, ticket: Ticket) -> None:
        """Remove the tree kept for ``ticket`` after an earlier failure (under the lock)."""
        if ticket.worktree:
            discard_kept(Path(ticket.worktree), self.config.base_dir)
            ticket.worktree = ""

    def _ticket(self, ticket_id: str) -> Ticket:
        ticket = self.engine.dag.by_id.get(ticket_id)
        if ticket is None:
            raise MMAError(f"track {self.track.id} has no ticket {ticket_id!r}")
        return ticket

    def _owned(self, ticket_id: str, abort: threading.Event) -> bool:
        """The worker holding ``abort`` still owns the ticket (not aborted, blocked or stopped)."""
        ticket = self.engine.dag.by_id.get(ticket_id)
        return (
            ticket is not None
            and not abort.is_set()
            and self._abort_events.get(ticket_id) is abort
            and ticket.status is TicketStatus.IN_PROGRESS
        )

    def _cancel_worker(self, ticket_id: str, source: str, reason: str) -> None:
        event = self._abort_events.get(ticket_id)
        if event is not None:
            event.set()
            for dialog, owner in list(self._open_dialogs.values()):
                if owner is event:
                    dialog.resolve(False, abort=False, decider=source, reason=reason)

    def _cancel_all(self, source: str, reason: str) -> None:
        for event in self._abort_events.values():
            event.set()
        for dialog, _ in list(self._open_dialogs.values()):
            dialog.resolve(False, abort=False, decider=source, reason=reason)

    def _join_workers(self, ticket_ids: Sequence[str], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not set(ticket_ids) & set(self.pool.active()):
                return True
            time.sleep(0.01)
        return not set(ticket_ids) & set(self.pool.active())

    def _changed(self, tickets: Sequence[Ticket]) -> None:
        for ticket in tickets:
            self._announce(ticket)
        self.track.touch()
        self._dirty = True
        self._wake.set()

    def _announce(self, ticket: Ticket) -> None:
        self.host.publish(
            "ticket_status",
            {
                "track_id": self.track.id,
                "ticket_id": ticket.id,
                "status": str(ticket.status),
                "retry_count": ticket.retry_count,
                "blocked_reason": ticket.blocked_reason or None,
                "assigned_to": ticket.assigned_to or None,
            },
        )

    def _set_status(self, status: ConductorStatus) -> None:
        with self._lock:
            if status is self._status:
                return
            self._status = status
            self.track.status = TRACK_STATUS.get(status, self.track.status)
            self.track.touch()
            self._dirty = True

    def _active_tier(self) -> str | None:
        for tier in ("Tier 1", "Tier 2", "Tier 4", "Tier 3"):
            if self._tiers[tier] > 0:
                return tier
        return None

    def _flush(self) -> None:
        with self._lock:
            if not self._dirty:
                return
            self._dirty = False
            snapshot = self.snapshot()
            saved = self._capture() if self.store is not None else None
        # Save first: whoever sees the new state (e.g. "done") finds the track files written.
        if saved is not None:
            try:
                self._persist(saved)
            except PersistenceError as exc:
                self._notify("error", str(exc))
        if self.event_queue is not None:
            self.event_queue.put_threadsafe("mma_state_update", snapshot)

    def _capture(self) -> Any:
        """What :meth:`_persist` writes, copied under the lock (the track)."""
        return copy.deepcopy(self.track)

    def _persist(self, captured: Any) -> None:
        """Write what :meth:`_capture` copied (outside the lock); PersistenceError when it cannot."""
        if self.store is not None:
            self.store.save(captured)

    def _notify(self, level: str, message: str) -> None:
        log.log(logging.ERROR if level == "error" else logging.INFO, "%s", message)
        self.host.post_gui_task({"action": "notify", "level": level, "message": message})


def _plan_view(ticket: Ticket) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": ticket.id,
        "description": ticket.description,
        "depends_on": ticket.depends_on,
    }
    if ticket.priority != "medium":
        view["priority"] = str(ticket.priority)
    if ticket.target_files:
        view["target_files"] = ticket.target_files
    if ticket.model_override:
        view["model_override"] = ticket.model_override
    if ticket.critical:
        view["critical"] = True
    return view
