"""Approval dialogs: the objects a thread blocks on until a human decides.

Each dialog carries a payload (a dict whose keys depend on its kind), a uuid,
and a ``threading.Condition``. The requesting thread calls :meth:`PendingDialog.wait`;
any other thread (GUI button, Hook API, policy) calls :meth:`PendingDialog.resolve`
once. Only the keys a kind declares editable may change, and the edited payload
is what ``wait`` returns — the caller runs exactly what the human approved.

Kinds and payload keys (editable ones marked *):

==================  ==========================================================
``confirm_script``  ``script``\\*, ``base_dir``
``tool_approval``   ``tool``, ``args``\\*, ``diff``, ``ticket_id`` (an MMA ticket's patch)
``mma_step``        ``ticket_id``, ``payload``\\*
``mma_spawn``       ``ticket_id``, ``role``, ``prompt``\\*, ``context_md``\\*
``ask``             ``question``, ``tool``, ``args``\\*, ``answer``\\*
``recovery``        ``ticket_id``, ``track_id``, ``failure``, ``severity``, ``error``,
                    ``tried``, ``choices``, ``choice``\\*, ``description``\\*
``tool_result``     ``tool``, ``args``, ``status``, ``result``\\*
``cost_check``      ``track_id``, ``spent_usd``, ``since_usd``, ``threshold_usd``, ``message``
==================  ==========================================================

Every kind also accepts ``reason`` (why it was rejected; told to the model). The rule that
asked (``rule``), what its timeout does (``on_timeout``) and whether it was escalated are set
by the Execution Clutch (:mod:`manual_slop.governance`).
"""

from __future__ import annotations

import copy
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar

__all__ = [
    "AskDialog",
    "ConfirmDialog",
    "CostDialog",
    "Decider",
    "Decision",
    "DialogPayloadError",
    "MMAApprovalDialog",
    "MMASpawnApprovalDialog",
    "PendingDialog",
    "PendingKind",
    "RecoveryDialog",
    "ToolApprovalDialog",
    "ToolResultDialog",
    "dialog_from_kind",
]


SETTLE_TIMEOUT_S = 30.0  # how long a waiter gives a decision's audit and journal lines to be written


class PendingKind(StrEnum):
    CONFIRM_SCRIPT = "confirm_script"
    TOOL_APPROVAL = "tool_approval"
    MMA_STEP = "mma_step"
    MMA_SPAWN = "mma_spawn"
    ASK = "ask"
    RECOVERY = "recovery"
    TOOL_RESULT = "tool_result"
    COST_CHECK = "cost_check"


class Decider(StrEnum):
    """Who made a decision; written to the audit log."""

    GUI = "gui"
    HOOK = "hook"
    POLICY = "policy"
    TIMEOUT = "timeout"
    SHUTDOWN = "shutdown"
    CANCEL = "cancel"  # the request that asked was stopped


class DialogPayloadError(ValueError):
    """An edit names a key the dialog does not have, changes a fixed key, or has the wrong type."""


@dataclass(frozen=True, slots=True)
class Decision:
    """The outcome of a dialog, as the waiting thread and the audit log see it."""

    approved: bool
    payload: dict[str, Any]
    decider: str
    decided_at: float
    abort: bool = False
    reason: str = ""
    edited: bool = False
    rule: str = ""


Resolved = Callable[["PendingDialog", Decision], None]


class PendingDialog:
    """Base class: a payload waiting for approve / reject from another thread."""

    kind: ClassVar[PendingKind]
    editable: ClassVar[Mapping[str, type]] = {}

    def __init__(self, payload: dict[str, Any]) -> None:
        self.uid = uuid.uuid4().hex
        self.created = time.time()
        self._payload = copy.deepcopy(payload)
        self._cond = threading.Condition()
        self._decision: Decision | None = None
        self._listeners: list[Resolved] = []
        self._settled = False  # the listeners (audit, journal) have run: the waiter may act
        self.source_tier: str | None = None
        # set by the clutch when a rule asks: its name, its timeout policy, escalated or not
        self.rule = ""
        self.on_timeout = "reject"
        self.escalated = False

    @classmethod
    def restore(cls, uid: str, created: float, payload: Mapping[str, Any]) -> PendingDialog:
        """The dialog journaled as ``uid`` before a restart, undecided, with its original payload
        (``governance.durable``); DialogPayloadError when the payload is not an object."""
        if not isinstance(payload, Mapping):
            raise DialogPayloadError(f"{cls.kind} payload must be an object, got {type(payload).__name__}")
        dialog = cls.__new__(cls)  # the kind's __init__ builds a payload; this one is given
        PendingDialog.__init__(dialog, dict(payload))
        dialog.uid, dialog.created = uid, float(created)
        return dialog

    # -- reading ---------------------------------------------------------------
    @property
    def payload(self) -> dict[str, Any]:
        """A copy of the original payload."""
        return copy.deepcopy(self._payload)

    @property
    def decision(self) -> Decision | None:
        with self._cond:
            return self._decision

    @property
    def done(self) -> bool:
        return self.decision is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.uid,
            "kind": str(self.kind),
            "created": self.created,
            "payload": self.payload,
            "rule": self.rule,
            "on_timeout": self.on_timeout,
            "escalated": self.escalated,
        }

    def rule_subject(self) -> tuple[str, str, str | None]:
        """``(tool name, text for pattern rules, path for glob rules)`` used by allow-list rules."""
        return (str(self.kind), "", None)

    # -- deciding ----------------------------------------------------------------
    def on_resolved(self, callback: Resolved) -> None:
        """Call ``callback(dialog, decision)`` once, right after the decision is made."""
        with self._cond:
            if self._decision is None:
                self._listeners.append(callback)
                return
            decision = self._decision
        callback(self, decision)

    def merged_payload(self, edits: Mapping[str, Any] | None) -> tuple[dict[str, Any], bool, str]:
        """Validate ``edits`` and return ``(final payload, edited?, reason)``."""
        final = copy.deepcopy(self._payload)
        if edits is None:
            return final, False, ""
        if not isinstance(edits, Mapping):
            raise DialogPayloadError(f"payload must be an object, got {type(edits).__name__}")
        reason = ""
        edited = False
        for key, value in edits.items():
            if key == "reason":
                if not isinstance(value, str):
                    raise DialogPayloadError("reason: expected string")
                reason = value
                continue
            if key in self.editable:
                expected = self.editable[key]
                if not isinstance(value, expected) or (expected is not bool and isinstance(value, bool)):
                    raise DialogPayloadError(
                        f"{key}: expected {expected.__name__}, got {type(value).__name__}"
                    )
                if final.get(key) != value:
                    edited = True
                final[key] = copy.deepcopy(value)
            elif key in self._payload:
                if self._payload[key] != value:
                    raise DialogPayloadError(f"{key}: cannot be edited for {self.kind} dialogs")
            else:
                allowed = sorted({*self._payload, *self.editable, "reason"})
                raise DialogPayloadError(f"unknown payload key {key!r}; allowed: {', '.join(allowed)}")
        return final, edited, reason

    def resolve(
        self,
        approved: bool,
        payload: Mapping[str, Any] | None = None,
        *,
        abort: bool = False,
        decider: str = Decider.GUI,
        reason: str = "",
        rule: str = "",
    ) -> bool:
        """Decide once; False when already decided. Raises DialogPayloadError for bad edits."""
        final, edited, payload_reason = self.merged_payload(payload)
        decision = Decision(
            approved=bool(approved) and not abort,
            payload=final,
            decider=str(decider),
            decided_at=time.time(),
            abort=bool(abort),
            reason=reason or payload_reason,
            edited=edited,
            rule=rule,
        )
        with self._cond:
            if self._decision is not None:
                return False
            self._decision = decision
            listeners, self._listeners = self._listeners, []
        try:  # the audit and the journal first: the waiting thread acts on a recorded decision
            for callback in listeners:
                callback(self, decision)
        finally:
            with self._cond:
                self._settled = True
                self._cond.notify_all()
        return True

    def await_decision(self, timeout: float) -> Decision | None:
        """Block until decided (and recorded) or ``timeout`` s pass; None after a timeout."""
        with self._cond:
            self._cond.wait_for(lambda: self._settled, timeout=max(0.0, timeout))
            return self._decision if self._settled else None

    def wait_decision(self, timeout: float) -> Decision:
        """Block until decided or ``timeout`` s pass; a timeout rejects the dialog."""
        decision = self.await_decision(timeout)
        if decision is None:
            self.resolve(False, decider=Decider.TIMEOUT, reason=f"no decision within {timeout:g} s")
            decision = self.await_decision(SETTLE_TIMEOUT_S)  # decided meanwhile: its record first
            decision = decision or self.decision
        assert decision is not None
        return decision

    def wait(self, timeout: float) -> tuple[bool, dict[str, Any]]:
        """``(approved, final payload)``; ``(False, original payload)`` after a timeout."""
        decision = self.wait_decision(timeout)
        return decision.approved, decision.payload


class ConfirmDialog(PendingDialog):
    """A shell script the model wants to run in ``base_dir``."""

    kind = PendingKind.CONFIRM_SCRIPT
    editable: ClassVar[Mapping[str, type]] = {"script": str}

    def __init__(self, script: str, base_dir: str) -> None:
        super().__init__({"script": script, "base_dir": base_dir})

    def rule_subject(self) -> tuple[str, str, str | None]:
        return ("run_shell", self._payload["script"], None)


class ToolApprovalDialog(PendingDialog):
    """A mutating file tool call, shown with a unified diff of its effect."""

    kind = PendingKind.TOOL_APPROVAL
    editable: ClassVar[Mapping[str, type]] = {"args": dict}

    def __init__(self, tool: str, args: dict[str, Any], diff: str = "", ticket_id: str = "") -> None:
        payload: dict[str, Any] = {"tool": tool, "args": args, "diff": diff}
        if ticket_id:  # an MMA ticket's patch: which ticket it would land for
            payload["ticket_id"] = ticket_id
        super().__init__(payload)

    def rule_subject(self) -> tuple[str, str, str | None]:
        args = self._payload["args"]
        path = args.get("path") if isinstance(args.get("path"), str) else None
        return (self._payload["tool"], path or "", path)


class MMAApprovalDialog(PendingDialog):
    """A step an MMA worker proposes for a ticket."""

    kind = PendingKind.MMA_STEP
    editable: ClassVar[Mapping[str, type]] = {"payload": str}

    def __init__(self, ticket_id: str, payload: str) -> None:
        super().__init__({"ticket_id": ticket_id, "payload": payload})

    def rule_subject(self) -> tuple[str, str, str | None]:
        return ("mma_step", self._payload["payload"], None)


class MMASpawnApprovalDialog(PendingDialog):
    """A worker about to start on a ticket; ``abort`` stops the whole track."""

    kind = PendingKind.MMA_SPAWN
    editable: ClassVar[Mapping[str, type]] = {"prompt": str, "context_md": str}

    def __init__(self, ticket_id: str, role: str, prompt: str, context_md: str) -> None:
        super().__init__({"ticket_id": ticket_id, "role": role, "prompt": prompt, "context_md": context_md})

    def rule_subject(self) -> tuple[str, str, str | None]:
        return ("mma_spawn", self._payload["role"], None)


class AskDialog(PendingDialog):
    """A question from outside (e.g. the Gemini CLI bridge) asking to use a tool."""

    kind = PendingKind.ASK
    editable: ClassVar[Mapping[str, type]] = {"args": dict, "answer": str}

    def __init__(self, question: str, tool: str = "", args: dict[str, Any] | None = None) -> None:
        super().__init__({"question": question, "tool": tool, "args": dict(args or {})})

    def rule_subject(self) -> tuple[str, str, str | None]:
        args = self._payload["args"]
        # our tools name it "path"; the Gemini CLI's file tools "file_path" or "dir_path"
        paths = [args[k] for k in ("path", "file_path", "dir_path") if isinstance(args.get(k), str)]
        path = paths[0] if paths else None
        text = args.get("command") if isinstance(args.get("command"), str) else self._payload["question"]
        return (self._payload["tool"] or "ask", text, path)


class RecoveryDialog(PendingDialog):
    """A ticket whose recovery strategies ran out (governance.recovery): approve with a
    ``choice`` — retry, skip, edit (with the edited ``description``) or abort the track;
    reject leaves the ticket blocked."""

    kind = PendingKind.RECOVERY
    editable: ClassVar[Mapping[str, type]] = {"choice": str, "description": str}
    CHOICES: ClassVar[tuple[str, ...]] = ("retry", "skip", "edit", "abort")

    def __init__(
        self,
        ticket_id: str,
        track_id: str,
        failure: str,
        severity: str,
        error: str,
        tried: list[str],
        description: str,
    ) -> None:
        super().__init__(
            {
                "ticket_id": ticket_id,
                "track_id": track_id,
                "failure": failure,
                "severity": severity,
                "error": error,
                "tried": list(tried),
                "choices": list(self.CHOICES),
                "choice": "retry",
                "description": description,
            }
        )

    def merged_payload(self, edits: Mapping[str, Any] | None) -> tuple[dict[str, Any], bool, str]:
        final, edited, reason = super().merged_payload(edits)
        if final["choice"] not in self.CHOICES:
            raise DialogPayloadError(
                f"choice: expected one of {', '.join(self.CHOICES)}, got {final['choice']!r}"
            )
        if final["choice"] == "edit" and not final["description"].strip():
            raise DialogPayloadError("description: the edited ticket needs a description")
        return final, edited, reason

    def rule_subject(self) -> tuple[str, str, str | None]:
        return ("recovery", self._payload["error"], None)
class ToolResultDialog(PendingDialog):
    """A tool's result held back by an ``after_tool`` or ``on_error`` rule until a human lets the
    model see it (the edited ``result`` is what it sees)."""

    kind = PendingKind.TOOL_RESULT
    editable: ClassVar[Mapping[str, type]] = {"result": str}

    def __init__(self, tool: str, args: dict[str, Any], status: str, result: str) -> None:
        super().__init__({"tool": tool, "args": args, "status": status, "result": result})

    def rule_subject(self) -> tuple[str, str, str | None]:
        path = self._payload["args"].get("path")
        return (self._payload["tool"], self._payload["result"], path if isinstance(path, str) else None)


class CostDialog(PendingDialog):
    """A running track's spend crossed ``cost_over`` thresholds or ``usage.*`` budgets (those
    above ``since_usd``, the spend when the run last asked; ``threshold_usd`` is the highest);
    approving resumes it."""

    kind = PendingKind.COST_CHECK

    def __init__(
        self,
        track_id: str,
        spent_usd: float,
        since_usd: float,
        threshold_usd: float,
        message: str,
        budget: str = "",
        unknown_calls: int = 0,
    ) -> None:
        super().__init__(
            {
                "track_id": track_id,
                "spent_usd": spent_usd,
                "since_usd": since_usd,
                "threshold_usd": threshold_usd,
                "message": message,
                "budget": budget,  # the usage.* budgets crossed ('' = rules only): they ask by default
                "unknown_calls": unknown_calls,  # calls at unknown price, not in spent_usd
            }
        )

    def rule_subject(self) -> tuple[str, str, str | None]:
        return ("cost_check", self._payload["message"], None)


_BY_KIND: dict[PendingKind, type[PendingDialog]] = {
    cls.kind: cls
    for cls in (
        ConfirmDialog,
        ToolApprovalDialog,
        MMAApprovalDialog,
        MMASpawnApprovalDialog,
        AskDialog,
        RecoveryDialog,
        ToolResultDialog,
        CostDialog,
    )
}


def dialog_from_kind(kind: str) -> type[PendingDialog]:
    """The dialog class for a kind name; KeyError for unknown kinds."""
    return _BY_KIND[PendingKind(kind)]
