"""``[mma] backend = "ray"``: a Tier 3 attempt as a Ray task instead of a send on a local thread.

:class:`RayAttempts` stands in for :func:`~manual_slop.mma.attempt.run_ticket` and returns the
same :class:`~manual_slop.mma.attempt.TicketOutcome`, so everything after the attempt (the patch
dialog, the three-way merge, recovery) is the threads backend's own code. It opens the attempt's
scratch tree locally (the project as it is now, dependencies' patches included), ships it as a
:class:`~manual_slop.mma.snapshot.Snapshot`, and waits for the task:

- a step dialog the task raises is decided by the worker's own step gate (the same ``mma_step``
  dialog a local attempt shows), routed by the submission it came from;
- a task Ray had to start again (its node died) counts one retry per extra start;
- an abort cancels the task (``ray.cancel``) and the attempt ends as aborted;
- a task that failed (the send raised, or Ray gave up) is a failed attempt with the reason.

One :class:`RayAttempts` serves the app's runtime: its cluster starts with the first Ray track
(a local one unless ``ray_address`` names one) and stops with the app.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from manual_slop.mma.attempt import TREE_FILE_TOOLS, AttemptSettings, TicketOutcome, WorktreeApprovals
from manual_slop.mma.backends.ray_backend import (
    AttemptRequest,
    RayCluster,
    RaySettings,
    RayTicketRunner,
    load_ray,
)
from manual_slop.mma.client import StepGate, StepRequest, TokenUsage
from manual_slop.mma.errors import Aborted, MMAError
from manual_slop.mma.models import Ticket
from manual_slop.mma.snapshot import Snapshot
from manual_slop.mma.worktree import Workspace

__all__ = ["RayAttemptFailed", "RayAttempts"]

ROLE = "Tier 3"

log = logging.getLogger(__name__)


def workers(beats: Mapping[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One row per attempt, newest last: ticket, node, start time, last event, starts (2+: Ray
    ran it again after a node died)."""
    rows = []
    for starts in beats.values():
        last = starts[-1]
        rows.append(
            {
                "ticket": str(last.get("ticket", "")),
                "node": str(last.get("node", ""))[:12],
                "started": float(last.get("started", 0.0)),
                "last_event": str(last.get("last_event", "")),
                "starts": len(starts),
            }
        )
    return rows[-50:]


class RayAttemptFailed(MMAError):
    """The Ray task ended without an answer (its send raised, or Ray gave up on it)."""


class RayAttempts:
    """Runs attempts as Ray tasks; ``provider_settings`` gives the AI settings (with the keys,
    which travel only in each task's environment)."""

    def __init__(
        self,
        settings: RaySettings,
        provider_settings: Callable[[], Mapping[str, Any]],
        placement: Callable[[str], str] | None = None,
        on_workers: Callable[[list[dict[str, Any]]], None] | None = None,
    ) -> None:
        self.cluster = RayCluster(settings)
        self.placement = placement  # ticket id -> a node id to start it on ('' = anywhere)
        self._on_workers = on_workers  # the dashboard's view of the attempts (see workers())
        self.runner = RayTicketRunner(self.cluster, self._ask, self._beats)
        self._provider_settings = provider_settings
        self._gates: dict[str, StepGate] = {}
        self._lock = threading.Lock()

    @property
    def settings(self) -> RaySettings:
        return self.cluster.settings

    def run(
        self,
        ticket: Ticket,
        workspace: Workspace,
        settings: AttemptSettings,
        *,
        prompt: str,
        context: str,
        step_gate: StepGate,
        abort: threading.Event,
        on_retry: Callable[[], None],
    ) -> TicketOutcome:
        """One attempt of ``ticket`` on the cluster (see the module doc); Aborted when ``abort``
        is set first or meanwhile."""
        if abort.is_set():
            raise Aborted(f"ticket {ticket.id} was aborted")
        workspace()  # the tree: the project as it is now
        assert workspace.tree is not None
        snapshot = Snapshot.of(workspace.tree)
        free = tuple(sorted(TREE_FILE_TOOLS)) if settings.approvals is WorktreeApprovals.PATCH_ONLY else ()
        request = AttemptRequest(
            ticket.id, prompt, context, self._provider_settings(), settings.model, ROLE, free
        )
        node = self.placement(ticket.id) if self.placement is not None else ""
        submission, ref = self.runner.submit(
            request, snapshot, prefer_node=node, gate=lambda sid: self._register(sid, step_gate)
        )
        ray = load_ray()
        try:
            result = self.runner.result(submission, ref, abort)
        except (ray.exceptions.RayError, ray.exceptions.GetTimeoutError) as exc:
            log.warning("the Ray task of %s failed: %s", ticket.id, exc)
            return TicketOutcome(error=RayAttemptFailed(f"the Ray task of {ticket.id} failed: {exc}"))
        finally:
            with self._lock:
                self._gates.pop(submission, None)
        if result is None or abort.is_set():
            raise Aborted(f"ticket {ticket.id} was aborted")
        for _ in range(max(0, int(result.get("starts", 1)) - 1)):
            on_retry()  # Ray ran it again on another node
        usage = result.get("usage") or {}
        outcome = TicketOutcome(
            answer=str(result.get("answer", "")),
            patch=str(result.get("patch", "")),
            transcript=list(result.get("tool_calls") or []),
            usage=TokenUsage(int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))),
        )
        if result.get("error"):
            outcome.error = RayAttemptFailed(str(result["error"]))
        return outcome

    def heartbeats(self) -> dict[str, list[dict[str, Any]]]:
        return self.runner.heartbeats()

    def _beats(self, beats: dict[str, list[dict[str, Any]]]) -> None:
        if self._on_workers is not None:
            self._on_workers(workers(beats))

    def stop(self) -> None:
        self.runner.stop()
        self.cluster.stop()

    # -- dialogs ----------------------------------------------------------------------------
    def _register(self, submission: str, gate: StepGate) -> None:
        with self._lock:
            self._gates[submission] = gate

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            gate = self._gates.get(str(request.get("submission", "")))
        if gate is None:
            return {"approved": False, "abort": True, "reason": "the attempt is over"}
        verdict = gate(
            StepRequest(str(request["tool"]), dict(request["args"]), str(request.get("preview") or ""))
        )
        return {"approved": verdict.approved, "args": verdict.args, "reason": verdict.reason}
