"""The Execution Clutch: every destructive action waits here for a human (or a policy).

A requesting thread calls :meth:`ExecutionClutch.submit` with a dialog. Under the
``manual`` policy the dialog is registered as pending (visible to the GUI and the
Hook API, announced with a ``pending_added`` event) and the thread blocks until
someone resolves it or the wait times out. ``allow_list`` auto-approves dialogs
matched by a rule from the project file and asks for the rest; ``auto`` approves
everything (simulations only). Every decision — whoever made it — is written to
the audit log exactly once and announced with ``pending_resolved``. A decision asked during an
agent run names it (``run_id``, ``conversation``, ``ticket``, ``call_id``) and is also recorded
in the run's log (:mod:`manual_slop.governance.correlation`).
"""

from __future__ import annotations

import fnmatch
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from manual_slop.dialogs import Decider, Decision, PendingDialog
from manual_slop.governance.correlation import bind_dialog

__all__ = ["AllowRule", "ApprovalPolicy", "ExecutionClutch", "ResolveOutcome", "RuleError"]


class ApprovalPolicy(StrEnum):
    MANUAL = "manual"
    ALLOW_LIST = "allow_list"
    AUTO = "auto"


class ResolveOutcome(StrEnum):
    RESOLVED = "resolved"
    UNKNOWN = "unknown"
    ALREADY_RESOLVED = "already_resolved"


class RuleError(ValueError):
    """An allow-list rule in the project file is malformed."""


@dataclass(frozen=True, slots=True)
class AllowRule:
    """``tool`` must match; ``pattern`` (regex, searched) and ``path_glob`` narrow it further."""

    tool: str
    pattern: str = ""
    path_glob: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], index: int = 0) -> AllowRule:
        where = f"approval.rules[{index}]"
        tool = data.get("tool")
        if not isinstance(tool, str) or not tool:
            raise RuleError(f"{where}: 'tool' must be a non-empty string")
        pattern = data.get("pattern", "")
        path_glob = data.get("path_glob", "")
        if not isinstance(pattern, str) or not isinstance(path_glob, str):
            raise RuleError(f"{where}: 'pattern' and 'path_glob' must be strings")
        unknown = set(data) - {"tool", "pattern", "path_glob"}
        if unknown:
            raise RuleError(f"{where}: unknown keys {sorted(unknown)}")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise RuleError(f"{where}: pattern {pattern!r} is not a valid regex ({exc})") from exc
        return cls(tool, pattern, path_glob)

    def matches(self, dialog: PendingDialog) -> bool:
        tool, text, path = dialog.rule_subject()
        if tool != self.tool:
            return False
        if self.pattern and not re.search(self.pattern, text):
            return False
        return not (self.path_glob and (path is None or not fnmatch.fnmatchcase(path, self.path_glob)))

    def describe(self) -> str:
        parts = [f"tool={self.tool}"]
        if self.pattern:
            parts.append(f"pattern={self.pattern}")
        if self.path_glob:
            parts.append(f"path_glob={self.path_glob}")
        return " ".join(parts)


AuditSink = Callable[[dict[str, Any]], None]
Publisher = Callable[[str, dict[str, Any]], None]


class Journal(Protocol):
    """Where pending dialogs are made durable (``governance.journal.ApprovalJournal``)."""

    def record_pending(self, dialog: PendingDialog) -> None: ...

    def record_decided(self, dialog: PendingDialog, decision: Decision) -> None: ...


class ExecutionClutch:
    """Policy, pending registry and audit trail for approval dialogs."""

    RECENT_LIMIT = 10_000  # resolved ids remembered to tell "already resolved" from "unknown"

    def __init__(
        self,
        audit: AuditSink,
        publish: Publisher,
        policy: ApprovalPolicy = ApprovalPolicy.MANUAL,
        rules: Sequence[AllowRule] = (),
        journal: Journal | None = None,
    ) -> None:
        self._audit = audit
        self._journal = journal
        self._adopted: set[str] = set()  # restored dialogs: a later submit of one only waits
        self._publish = publish
        self._lock = threading.Lock()
        self._pending: OrderedDict[str, PendingDialog] = OrderedDict()
        self._recent: OrderedDict[str, None] = OrderedDict()
        self._policy = ApprovalPolicy(policy)
        self._rules: tuple[AllowRule, ...] = tuple(rules)
        self._closed = False

    # -- policy --------------------------------------------------------------------
    @property
    def policy(self) -> ApprovalPolicy:
        with self._lock:
            return self._policy

    def set_policy(self, policy: str) -> None:
        with self._lock:
            self._policy = ApprovalPolicy(policy)

    def set_rules(self, rules: Sequence[AllowRule]) -> None:
        with self._lock:
            self._rules = tuple(rules)

    @property
    def rules(self) -> tuple[AllowRule, ...]:
        with self._lock:
            return self._rules

    # -- the blocking path -------------------------------------------------------------
    def submit(
        self, dialog: PendingDialog, timeout: float, preapproved: str = "", refused: str = ""
    ) -> Decision:
        """Decide ``dialog`` by policy or by a human; blocks up to ``timeout`` s for the human.

        ``preapproved`` names a rule of the caller's that already allows the action (e.g. a
        read-only tool inside the project): it is approved by policy, audited with that rule.
        ``refused`` is why the path policy forbids it (a file that never reaches a model): it is
        rejected by policy whatever the approval policy, audited with that reason.
        A dialog registered by :meth:`adopt` is only waited for (it is decided once).
        """
        with self._lock:
            adopted = dialog.uid in self._adopted
        if adopted:
            return dialog.wait_decision(timeout)
        ids = bind_dialog(dialog)  # the run it is asked in (if any) hears the decision
        dialog.on_resolved(lambda resolved, decision: self._on_resolved(resolved, decision, ids))
        with self._lock:
            policy, rules, closed = self._policy, self._rules, self._closed
        if closed:
            dialog.resolve(False, decider=Decider.SHUTDOWN, reason="the app is shutting down")
            return self._decision_of(dialog)
        if refused:
            dialog.resolve(False, decider=Decider.POLICY, reason=refused, rule="path policy")
            return self._decision_of(dialog)
        if preapproved:
            dialog.resolve(True, decider=Decider.POLICY, rule=preapproved)
            return self._decision_of(dialog)
        if policy is ApprovalPolicy.AUTO:
            dialog.resolve(True, decider=Decider.POLICY, rule="policy=auto")
            return self._decision_of(dialog)
        if policy is ApprovalPolicy.ALLOW_LIST:
            rule = next((r for r in rules if r.matches(dialog)), None)
            if rule is not None:
                dialog.resolve(True, decider=Decider.POLICY, rule=rule.describe())
                return self._decision_of(dialog)
        if not self._journal_pending(dialog):
            return self._decision_of(dialog)
        with self._lock:
            if not dialog.done:
                self._pending[dialog.uid] = dialog
        if not dialog.done:
            self._publish("pending_added", dialog.to_dict())
        return dialog.wait_decision(timeout)

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
                "rule": decision.rule,
                "reason": decision.reason,
                "edited": decision.edited,
                "requested_at": dialog.created,
                "decided_at": decision.decided_at,
                "source_tier": dialog.source_tier,
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
            dialog.resolve(False, decider=Decider.SHUTDOWN, reason="the app is shutting down")
        return len(dialogs)
