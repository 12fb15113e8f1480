"""One Tier 3 ticket attempt as a function: (ticket, a snapshot of the project, settings) → outcome.

:func:`run_ticket` sends the ticket once, in a conversation of its own (context amnesia), with
the tools working in the attempt's :class:`~manual_slop.mma.worktree.Workspace` — a scratch tree
made from the project as it is when the send starts (the project already holds the patches of
the tickets this one depends on). It returns a :class:`TicketOutcome`: the answer (or the
error the send raised), the patch the tree made, the transcript (the log entry of every tool call
the send ran) and the token usage. Nothing here touches the project: whether the patch lands
is the worker's business (approval, three-way merge). That makes an attempt a unit a backend
can run anywhere (threads today; a Ray task later ships a bundle of the project as the snapshot).

Approvals of mutating tools inside the tree follow ``[mma] worktree_approvals``:
``ask`` — every one passes the step gate (an ``mma_step`` dialog), as before;
``patch_only`` — our file tools (:data:`TREE_FILE_TOOLS`, whose every write the tree's path
policy confines to the tree) run without a dialog, because the human approves the resulting
patch. Everything else — the shell above all — still asks (and HITL rules may allow it).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from manual_slop.mma.client import StepGate, StepRequest, StepVerdict, TierCaller, TokenUsage
from manual_slop.mma.errors import Aborted
from manual_slop.mma.models import Ticket
from manual_slop.mma.worktree import Workspace

__all__ = [
    "TREE_FILE_TOOLS",
    "AttemptSettings",
    "TicketOutcome",
    "WorktreeApprovals",
    "run_ticket",
    "tree_step_gate",
]

ROLE = "Tier 3"
# our mutating tools that only write the one file their ``path`` names (checked by the path policy)
TREE_FILE_TOOLS = frozenset(
    {
        "write_file", "edit_file", "set_file_slice",
        "py_update_definition", "py_set_signature", "py_set_var_declaration",
    }
)  # fmt: skip


class WorktreeApprovals(StrEnum):
    ASK = "ask"  # every mutating tool in the tree asks through the step gate
    PATCH_ONLY = "patch_only"  # file tools in the tree run freely; the human approves the patch


@dataclass(frozen=True, slots=True)
class AttemptSettings:
    """What an attempt needs besides the ticket and the snapshot."""

    model: str = ""
    approvals: WorktreeApprovals = WorktreeApprovals.ASK


@dataclass(slots=True)
class TicketOutcome:
    """What one attempt produced: the answer or the error, the patch, the transcript, the usage."""

    answer: str = ""
    error: Exception | None = None
    patch: str = ""
    transcript: list[dict[str, Any]] = field(default_factory=list)
    usage: TokenUsage = field(default_factory=TokenUsage)


def tree_step_gate(gate: StepGate, approvals: WorktreeApprovals) -> StepGate:
    """``gate`` as the tree's approvals setting wants it (see the module doc)."""
    if approvals is WorktreeApprovals.ASK:
        return gate

    def decide(step: StepRequest) -> StepVerdict:
        if step.tool in TREE_FILE_TOOLS:
            return StepVerdict(True, step.args)
        return gate(step)

    return decide


def run_ticket(
    caller: TierCaller,
    ticket: Ticket,
    snapshot: Workspace,
    settings: AttemptSettings,
    *,
    prompt: str,
    context: str,
    step_gate: StepGate,
    abort: threading.Event,
) -> TicketOutcome:
    """Run one attempt of ``ticket`` in ``snapshot`` (see the module doc); Aborted when ``abort``
    is set before or during the send. The tree stays open: the caller merges, keeps or closes it."""
    outcome = TicketOutcome()
    used: list[TokenUsage] = []
    try:
        outcome.answer = caller.call(
            ROLE,
            context,
            prompt,
            model=settings.model,
            base_dir=str(snapshot.project),
            enable_tools=True,
            step_gate=tree_step_gate(step_gate, settings.approvals),
            abort=abort,
            tool_observer=outcome.transcript.append,
            ticket=ticket.id,
            workspace=snapshot,
            on_usage=used.append,
        )
    except Aborted:
        raise
    except Exception as exc:  # a provider or tool-loop failure: the attempt failed, the tree stays
        outcome.error = exc
    if abort.is_set():
        raise Aborted(f"ticket {ticket.id} was aborted")
    if used:
        outcome.usage = used[-1]
    outcome.patch = snapshot.diff()
    return outcome
