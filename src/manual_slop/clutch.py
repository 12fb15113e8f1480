"""The Execution Clutch: every destructive action waits here for a human, or a rule decides.

A requesting thread calls :meth:`ExecutionClutch.submit` with a dialog. The rule set (the
project's HITL rules under the approval policy, and the built-in defaults behind them; see
:mod:`manual_slop.governance.rules`) decides: ``deny`` rejects it at once (the reason the model
is told names the rule), ``allow`` approves it at once, ``ask`` registers it as pending (visible
to the GUI and the Hook API, announced with a ``pending_added`` event) and blocks the thread
until someone resolves it or the rule's timeout passes; then the rule's ``on_timeout`` decides:
``reject``, ``approve``, ``keep_waiting`` or ``escalate`` (an error notification, an
``escalated`` audit entry, then waiting on). :meth:`ExecutionClutch.intercept` does the same for
events that are only looked at (a tool's result, the session's spend): None when no rule stops
them, and then nothing is recorded.

Every decision -- whoever made it -- is written to the audit log exactly once, naming the rule
that made it (or, for a human's or a timeout's decision, the rule that asked), and announced
with ``pending_resolved``. Callbacks (audit, publish, listeners) never run under the lock.

A decision asked during an agent run names it (``run_id``, ``conversation``, ``ticket``,
``call_id``) and is also recorded in the run's log (:mod:`manual_slop.governance.correlation`).
Before a dialog is shown it is written to the approval journal, and its decision after the
audit line (:mod:`manual_slop.governance.journal`): journal → show → decide → audit → journal.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from typing import Any, Protocol

from manual_slop.dialogs import Decider, Decision, PendingDialog
from manual_slop.governance.correlation import bind_dialog
from manual_slop.governance.rules import (
    Action,
    AllowRule,
    ApprovalPolicy,
    OnTimeout,
    Rule,
    RuleError,
    RuleEvent,
    RuleSet,
    Verdict,
)
from manual_slop.governance.subject import event_of

__all__ = ["AllowRule", "ApprovalPolicy", "ExecutionClutch", "ResolveOutcome", "RuleError"]


class ResolveOutcome(StrEnum):
    RESOLVED = "resolved"
    UNKNOWN = "unknown"
    ALREADY_RESOLVED = "already_resolved"


AuditSink = Callable[[dict[str, Any]], None]
Publisher = Callable[[str, dict[str, Any]], None]
SHUTTING_DOWN = "the app is shutting down"


class Journal(Protocol):
    """Where pending dialogs are made durable (``governance.journal.ApprovalJournal``)."""

    def record_pending(self, dialog: PendingDialog) -> None: ...

    def record_decided(self, dialog: PendingDialog, decision: Decision) -> None: ...


class ExecutionClutch:
    """Rules, pending registry and audit trail for approval dialogs."""

    RECENT_LIMIT = 10_000  # resolved ids remembered to tell "already resolved" from "unknown"
    WAIT_SLICE_S = 1.0  # keep_waiting / escalate: how often a wait past the timeout looks up

    def __init__(
        self,
        audit: AuditSink,
        publish: Publisher,
        policy: ApprovalPolicy | str = ApprovalPolicy.MANUAL,
        rules: Sequence[Rule | AllowRule] = (),
        journal: Journal | None = None,
    ) -> None:
        self._audit = audit
        self._journal = journal
        self._adopted: set[str] = set()  # restored dialogs: a later submit of one only waits
        self._publish = publish
        self._lock = threading.Lock()
        self._pending: OrderedDict[str, PendingDialog] = OrderedDict()
        self._recent: OrderedDict[str, None] = OrderedDict()
        self._ruleset = RuleSet(policy, _as_rules(rules))
        self._closed = False

    # -- policy and rules ----------------------------------------------------------------------
    @property
    def policy(self) -> ApprovalPolicy:
        with self._lock:
            return self._ruleset.policy

    def set_policy(self, policy: str) -> None:
        with self._lock:
            self._ruleset = RuleSet(policy, self._ruleset.project_rules)

    def set_rules(self, rules: Sequence[Rule | AllowRule]) -> None:
        """Replace the project's rules (allow-list rules of the first format are converted)."""
        converted = _as_rules(rules)
        with self._lock:
            self._ruleset = RuleSet(self._ruleset.policy, converted)

    @property
    def rules(self) -> tuple[Rule, ...]:
        """The project's rules, in force under the policy or not."""
        with self._lock:
            return self._ruleset.project_rules

    @property
    def ruleset(self) -> RuleSet:
        """The rule set deciding now (immutable: a change builds a new one)."""
        with self._lock:
            return self._ruleset

    def decide(self, event: RuleEvent) -> Verdict:
        """What the rules would decide for ``event`` now (the "which rule decides?" box)."""
        return self.ruleset.decide(event)

    def cost_rules(self) -> tuple[Rule, ...]:
        """The ``cost_over`` rules in force under the policy."""
        return self.ruleset.cost_rules()

    # -- the blocking path -------------------------------------------------------------
    def submit(
        self, dialog: PendingDialog, timeout: float, preapproved: str = "", refused: str = ""
    ) -> Decision:
        """Decide ``dialog`` by rule or by a human; blocks up to ``timeout`` s (or the asking
        rule's ``timeout_s``) for the human, then the rule's ``on_timeout`` applies.

        ``preapproved`` names a rule of the caller's that already allows the action (e.g. a
        read-only tool inside the project): it is approved, audited with that rule.
        ``refused`` is why the path policy forbids it (a file that never reaches a model): it is
        rejected whatever the rules say, audited with that reason.
        A dialog registered by :meth:`adopt` is only waited for (it is decided once).
        """
        with self._lock:
            adopted = dialog.uid in self._adopted
        if adopted:
            return dialog.wait_decision(timeout)
        ids = bind_dialog(dialog)  # the run it is asked in (if any) hears the decision
        dialog.on_resolved(lambda resolved, decision: self._on_resolved(resolved, decision, ids))
        with self._lock:
            ruleset, closed = self._ruleset, self._closed
        if closed:
            dialog.resolve(False, decider=Decider.SHUTDOWN, reason=SHUTTING_DOWN)
            return self._decision_of(dialog)
        if refused:
            dialog.resolve(False, decider=Decider.POLICY, reason=refused, rule="path policy")
            return self._decision_of(dialog)
        if preapproved:
            dialog.resolve(True, decider=Decider.POLICY, rule=preapproved)
            return self._decision_of(dialog)
        return self._apply(dialog, ruleset.decide(event_of(dialog)), timeout)

    def intercept(self, dialog: PendingDialog, timeout: float) -> Decision | None:
        """For an event only looked at (``after_tool``, ``on_error``, ``cost_over``): None when
        the rules let it pass (nothing recorded), else the decision, as :meth:`submit` makes it."""
        verdict = self.ruleset.decide(event_of(dialog))
        if verdict.action is Action.ALLOW:
            return None
        dialog.on_resolved(self._on_resolved)
        return self._apply(dialog, verdict, timeout)

    def _apply(self, dialog: PendingDialog, verdict: Verdict, timeout: float) -> Decision:
        name = verdict.rule_name
        if verdict.action is Action.DENY:
            dialog.resolve(
                False, decider=Decider.POLICY, rule=name, reason=f"approval rule {name!r} denies this"
            )
            return self._decision_of(dialog)
        if verdict.action is Action.ALLOW:
            dialog.resolve(True, decider=Decider.POLICY, rule=name)
            return self._decision_of(dialog)
        dialog.rule, dialog.on_timeout = name, str(verdict.on_timeout)
        if not self._journal_pending(dialog):
            return self._decision_of(dialog)
        with self._lock:
            closed = self._closed
            if not closed and not dialog.done:
                self._pending[dialog.uid] = dialog
        if closed:  # close() ran after submit looked: nobody would ever answer
            dialog.resolve(False, decider=Decider.SHUTDOWN, reason=SHUTTING_DOWN)
            return self._decision_of(dialog)
        if not dialog.done:
            self._publish("pending_added", dialog.to_dict())
        limit = verdict.timeout_s if verdict.timeout_s is not None else timeout
        return self._wait(dialog, verdict, limit)

    def _wait(self, dialog: PendingDialog, verdict: Verdict, limit: float) -> Decision:
        decision = dialog.await_decision(limit)
        if decision is not None:
            return decision
        waited, name = f"no decision within {limit:g} s", verdict.rule_name
        if verdict.on_timeout is OnTimeout.REJECT:
            dialog.resolve(False, decider=Decider.TIMEOUT, reason=waited, rule=name)
        elif verdict.on_timeout is OnTimeout.APPROVE:
            dialog.resolve(
                True, decider=Decider.TIMEOUT, reason=f"{waited}; rule {name!r} approves then", rule=name
            )
        else:
            if verdict.on_timeout is OnTimeout.ESCALATE:
                self._escalate(dialog, name, limit)
            # until someone decides, the request is cancelled, or close() rejects it at shutdown
            while (decision := dialog.await_decision(self.WAIT_SLICE_S)) is None:
                with self._lock:
                    closed = self._closed
                if closed:
                    dialog.resolve(False, decider=Decider.SHUTDOWN, reason=SHUTTING_DOWN)
            return decision
        return self._decision_of(dialog)

    def _escalate(self, dialog: PendingDialog, rule: str, limit: float) -> None:
        with self._lock:
            if dialog.uid not in self._pending:
                return
            dialog.escalated = True
        message = (
            f"{dialog.kind} {dialog.uid[:8]} has waited {limit:g} s for a decision; rule {rule!r} "
            "escalates it: it stays pending until someone decides"
        )
        self._audit(
            {
                "event": "escalated",
                "id": dialog.uid,
                "kind": str(dialog.kind),
                "rule": rule,
                "waited_s": limit,
                "requested_at": dialog.created,
                "escalated_at": time.time(),
                "source_tier": dialog.source_tier,
            }
        )
        self._publish("pending_escalated", {**dialog.to_dict(), "message": message})

    def _journal_pending(self, dialog: PendingDialog) -> bool:
        """Journal → show: a dialog that cannot be made durable is rejected, not shown."""
        if self._journal is None:
            return True
        try:
            self._journal.record_pending(dialog)
        except OSError as exc:
            dialog.resolve(False, decider=Decider.POLICY, reason=str(exc), rule="approval journal")
            return False
        return True

    def adopt(self, dialog: PendingDialog) -> bool:
        """Register a dialog restored after a restart as pending (journaled, announced) with no
        thread waiting on it yet; a later :meth:`submit` of the same object waits for it."""
        with self._lock:
            if self._closed or dialog.uid in self._pending or dialog.uid in self._recent:
                return False
            self._adopted.add(dialog.uid)  # kept after the decision: a late submit only reads it
        dialog.on_resolved(self._on_resolved)
        if not self._journal_pending(dialog):
            return False
        with self._lock:
            if not dialog.done:
                self._pending[dialog.uid] = dialog
        if not dialog.done:
            self._publish("pending_added", dialog.to_dict())
        return True

    @staticmethod
    def _decision_of(dialog: PendingDialog) -> Decision:
        decision = dialog.decision
        assert decision is not None
        return decision

    def _on_resolved(
        self, dialog: PendingDialog, decision: Decision, ids: Mapping[str, str] | None = None
    ) -> None:
        with self._lock:
            was_pending = self._pending.pop(dialog.uid, None) is not None
            self._recent[dialog.uid] = None
            while len(self._recent) > self.RECENT_LIMIT:
                self._recent.popitem(last=False)
        original = dialog.payload
        self._audit(
            {
                "event": "decision",
                "id": dialog.uid,
                "kind": str(dialog.kind),
                "approved": decision.approved,
                "abort": decision.abort,
                "decider": decision.decider,
                "rule": decision.rule or dialog.rule,  # a human's decision: the rule that asked
                "reason": decision.reason,
                "edited": decision.edited,
                "requested_at": dialog.created,
                "decided_at": decision.decided_at,
                "source_tier": dialog.source_tier,
                "escalated": dialog.escalated,
                "payload": decision.payload,
                "original_payload": original if decision.edited else None,
                **(ids or {}),  # the run it was asked in (governance.correlation)
            }
        )
        if self._journal is not None:  # decide → audit → journal: a restart sees either mark
            self._journal.record_decided(dialog, decision)
        if was_pending:
            self._publish(
                "pending_resolved",
                {
                    "id": dialog.uid,
                    "kind": str(dialog.kind),
                    "approved": decision.approved,
                    "abort": decision.abort,
                    "decider": decision.decider,
                },
            )

    # -- the resolving side --------------------------------------------------------------
    def pending(self) -> list[PendingDialog]:
        """Pending dialogs, oldest first."""
        with self._lock:
            return list(self._pending.values())

    def front(self) -> PendingDialog | None:
        """The oldest pending dialog (the one a modal shows)."""
        with self._lock:
            return next(iter(self._pending.values()), None)

    def get(self, uid: str) -> PendingDialog | None:
        with self._lock:
            return self._pending.get(uid)

    def resolve(
        self,
        uid: str,
        approved: bool,
        payload: Mapping[str, Any] | None = None,
        *,
        abort: bool = False,
        decider: str = Decider.GUI,
    ) -> ResolveOutcome:
        """Resolve a pending dialog by id from any thread. Bad edits raise DialogPayloadError."""
        with self._lock:
            dialog = self._pending.get(uid)
            known = uid in self._recent
        if dialog is None:
            return ResolveOutcome.ALREADY_RESOLVED if known else ResolveOutcome.UNKNOWN
        if dialog.resolve(approved, payload, abort=abort, decider=decider):
            return ResolveOutcome.RESOLVED
        return ResolveOutcome.ALREADY_RESOLVED

    def close(self) -> int:
        """Reject everything pending (waiting threads wake up); later submits are rejected."""
        with self._lock:
            self._closed = True
            dialogs = list(self._pending.values())
        for dialog in dialogs:
            dialog.resolve(False, decider=Decider.SHUTDOWN, reason=SHUTTING_DOWN)
        return len(dialogs)


def _as_rules(rules: Sequence[Rule | AllowRule]) -> tuple[Rule, ...]:
    """Rules of either format as rules; a generated name used twice gets ``#<index>``."""
    out: list[Rule] = []
    names: set[str] = set()
    for index, rule in enumerate(rules):
        if isinstance(rule, AllowRule):
            name = rule.describe()
            rule = rule.to_rule(name if name not in names else f"{name} #{index}")
        names.add(rule.name)
        out.append(rule)
    return tuple(out)
