"""Durable approvals: dialogs left undecided by a crash come back, with their ids, after a restart.

At start-up (:meth:`DurableApprovals.restore`, from the controller) every dialog some earlier
session journaled and nobody decided (:func:`~manual_slop.governance.journal.scan_sessions`)
is rebuilt with its original id, created time and payload and registered on the clutch as
pending (:meth:`~manual_slop.clutch.ExecutionClutch.adopt`): it shows in ``/api/pending`` and
the GUI like any other dialog, and is journaled again in this session. What approving it does
depends on what it belongs to (its ``resume`` descriptor, written by :func:`describer` when it
was first asked; the table is :data:`RESUME`):

- an MMA spawn or step of a track (an epic's or a plan's): the track is started again at the
  first frame; when its worker reaches the same spawn or step (same ticket; a step with the same
  proposed call) it waits on the restored dialog instead of asking again
  (:func:`claim_restored`, called by ``ConductorEngine.ask``). A ticket whose step was pending had
  its spawn approved before the crash: that journaled approval is used again, not asked again;
- a chat tool call (``tool_approval`` / ``confirm_script`` asked during a discussion's send):
  approved, the call runs with the approved arguments and its result is appended to the
  discussion as a ``System`` entry with a note; the interrupted send itself is not continued;
- anything else (an ``ask`` from the Gemini CLI bridge, a ``recovery`` dialog, a Tier 4 patch):
  the decision is audited and a notification names the dialog and says why its work cannot be
  resumed. Nothing is dropped silently.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable
from typing import Any

from manual_slop.dialogs import Decision, DialogPayloadError, PendingDialog, PendingKind, dialog_from_kind
from manual_slop.governance.correlation import correlation
from manual_slop.governance.journal import ApprovalJournal, Undecided, scan_sessions

# the app controller is typed as Any here: naming its class would import the controller back
# (it builds DurableApprovals at start-up), and the import graph stays without cycles
AppController = Any

__all__ = ["RESUME", "DurableApprovals", "claim_restored", "describer"]

log = logging.getLogger(__name__)

# dialog kind -> what approving it after a restart does (docs/guide_governance.md shows this)
RESUME: dict[str, str] = {
    PendingKind.MMA_SPAWN: "the track starts again; the ticket's worker starts with the approved prompt",
    PendingKind.MMA_STEP: "the track starts again; the worker's same step runs with the approved call",
    PendingKind.TOOL_APPROVAL: "a chat call runs and its result is appended to the discussion; else noted",
    PendingKind.CONFIRM_SCRIPT: "a chat script runs and its output is appended to the discussion; else noted",
    PendingKind.ASK: "recorded; a notification says the asking tool is gone",
    PendingKind.RECOVERY: "recorded; a notification says the failed attempt is gone (start the track again)",
    PendingKind.TOOL_RESULT: "recorded; a notification says the request that held the result is gone",
    PendingKind.COST_CHECK: "recorded; a notification says the paused run is gone (start the track again)",
}

MMA_TYPES = (PendingKind.MMA_SPAWN, PendingKind.MMA_STEP)
CHAT_TYPES = (PendingKind.TOOL_APPROVAL, PendingKind.CONFIRM_SCRIPT)


def describer(ctrl: AppController) -> Callable[[PendingDialog], dict[str, Any]]:
    """What a dialog belongs to, read on the asking thread when it is journaled."""

    def describe(dialog: PendingDialog) -> dict[str, Any]:
        kind = dialog.kind
        ids = correlation()  # the run asking, when a run asks
        conductor = getattr(getattr(ctrl, "mma", None), "conductor", None)
        if dialog.source_tier in ("Tier 2", "Tier 3") and conductor is not None:
            track = conductor.track
            kind_type = str(kind) if kind in MMA_TYPES else "none"
            return {
                "type": kind_type,
                "track_id": track.id,
                "track_kind": track.kind,
                "ticket_id": str(dialog.payload.get("ticket_id") or ids.get("ticket", "")),
                **({} if kind_type != "none" else {"why": f"a {kind} dialog of a track's worker"}),
            }
        conversation = ids.get("conversation", "")
        if kind in CHAT_TYPES and conversation.startswith("discussion:"):
            return {
                "type": "tool_call",
                "conversation": conversation,
                "discussion": conversation.removeprefix("discussion:"),
                "run_id": ids.get("run_id", ""),
                "call_id": ids.get("call_id", ""),
            }
        return {"type": "none", "why": f"a {kind} dialog asked outside a track or a discussion"}

    return describe


def claim_restored(host: Any, track_id: str, dialog: PendingDialog) -> PendingDialog | Decision | None:
    """For ``ConductorEngine.ask``: the restored dialog (or the journaled decision) standing in
    for ``dialog``; None when it is asked afresh."""
    durable = getattr(host, "durable", None)
    return durable.claim(track_id, dialog) if isinstance(durable, DurableApprovals) else None


class DurableApprovals:
    """Restores undecided dialogs at start-up and hands them to the work they belong to."""

    def __init__(self, ctrl: AppController) -> None:
        self.ctrl = ctrl
        self.journal = ApprovalJournal(
            ctrl.session_log.root / "approvals.jsonl", describer(ctrl), ctrl.redactor.redact_obj
        )
        self._lock = threading.Lock()
        self._mma: dict[tuple[str, str, str], list[PendingDialog]] = {}
        self._spawns: dict[tuple[str, str], Decision] = {}  # (track, ticket) -> approved before the crash
        self._cannot: dict[str, str] = {}  # uid -> why its work cannot be resumed
        self.restored: list[str] = []  # ids, oldest first

    # -- start-up ------------------------------------------------------------------------------
    def restore(self) -> list[str]:
        """Re-register every undecided dialog of earlier sessions; returns their ids."""
        ctrl = self.ctrl
        scan = scan_sessions(ctrl.session_log.root.parent, exclude=ctrl.session_log.root)
        for warning in scan.warnings:
            ctrl.notify("warning", f"approval journal: {warning}")
        tracks: dict[str, float] = {}
        for item in scan.undecided:
            dialog = self._rebuild(item)
            if dialog is None:
                continue
            resume = item.resume
            self.journal.carry(dialog.uid, resume)
            if resume.get("type") in MMA_TYPES and resume.get("track_id"):
                key = (str(resume["track_id"]), str(resume["type"]), str(resume.get("ticket_id", "")))
                self._mma.setdefault(key, []).append(dialog)
                tracks[key[0]] = max(tracks.get(key[0], 0.0), dialog.created)
            dialog.on_resolved(lambda d, decision, r=resume: self._decided(d, decision, r))
            if ctrl.clutch.adopt(dialog):
                self.restored.append(dialog.uid)
        if not self.restored:
            return []
        self._reuse_spawns(scan.decided)
        ctrl.notify(
            "info", f"{len(self.restored)} approval(s) left pending by an earlier session are pending again"
        )
        if tracks:
            newest = max(tracks, key=tracks.__getitem__)
            for track_id in tracks:
                if track_id != newest:
                    self._give_up(track_id, f"track {newest} was resumed instead; start {track_id} again")
            ctrl.post_gui_task({"action": "custom_callback", "callback": lambda: self._start_track(newest)})
        return list(self.restored)

    def _rebuild(self, item: Undecided) -> PendingDialog | None:
        record = item.record
        try:
            cls = dialog_from_kind(item.kind)
            dialog = cls.restore(item.uid, float(record["created"]), record["payload"])
        except (KeyError, ValueError, TypeError, DialogPayloadError) as exc:
            self.ctrl.notify(
                "error",
                f"approval {item.uid} ({item.kind}) of session {item.session} cannot be restored: {exc}",
            )
            return None
        tier = record.get("source_tier")
        dialog.source_tier = tier if isinstance(tier, str) else None
        return dialog

    def _reuse_spawns(self, decided: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
        """A ticket with a restored step was approved to start before the crash: keep that."""
        steps = {(t, ticket) for (t, kind, ticket) in self._mma if kind == PendingKind.MMA_STEP}
        for pending, mark in decided:
            resume = pending.get("resume") or {}
            key = (str(resume.get("track_id", "")), str(resume.get("ticket_id", "")))
            if pending.get("kind") == PendingKind.MMA_SPAWN and key in steps and mark.get("approved"):
                self._spawns[key] = Decision(
                    approved=True,
                    payload=dict(mark.get("payload") or pending.get("payload") or {}),
                    decider=str(mark.get("decider", "")),
                    decided_at=float(mark.get("decided_at", 0.0)),
                    rule="approved before a restart",
                )

    def _start_track(self, track_id: str) -> None:
        """Main thread, first frame: run the track the restored MMA dialogs belong to."""
        runtime = getattr(self.ctrl, "mma", None)
        if runtime is None:
            self._give_up(track_id, "the MMA feature is not loaded")
            return
        try:
            runtime.start_track(track_id)
        except Exception as exc:  # InvalidValue and friends: the reason is the message
            self._give_up(track_id, f"track {track_id} cannot start again: {exc}")
            return
        self.ctrl.notify("info", f"track {track_id} started again to resume its pending approvals")

    def _give_up(self, track_id: str, why: str) -> None:
        with self._lock:
            for key in [k for k in self._mma if k[0] == track_id]:
                for dialog in self._mma.pop(key):
                    self._cannot[dialog.uid] = why
            for key in [k for k in self._spawns if k[0] == track_id]:
                del self._spawns[key]

    # -- the conductor's side ------------------------------------------------------------------
    def claim(self, track_id: str, dialog: PendingDialog) -> PendingDialog | Decision | None:
        kind = str(dialog.kind)
        ticket = str(dialog.payload.get("ticket_id", ""))
        with self._lock:
            if kind == PendingKind.MMA_SPAWN and (track_id, ticket) in self._spawns:
                return self._spawns.pop((track_id, ticket))
            queue = self._mma.get((track_id, kind, ticket))
            if not queue:
                return None
            restored = queue.pop(0)
            proposed = dialog.payload.get("payload")
            if kind == PendingKind.MMA_STEP and restored.payload.get("payload") != proposed:
                why = "after the restart the worker proposed a different step, which is asked anew"
                self._cannot[restored.uid] = why
                if restored.done:
                    self.ctrl.notify("warning", f"restored approval {restored.uid}: {why}")
                return None
        return restored

    # -- decisions ------------------------------------------------------------------------------
    def _decided(self, dialog: PendingDialog, decision: Decision, resume: dict[str, Any]) -> None:
        kind = resume.get("type")
        if kind == "tool_call":
            if decision.approved:
                self.ctrl.run_in_background(lambda: self._run_chat_call(dialog, decision, resume))
            return
        if kind in MMA_TYPES:
            with self._lock:
                why = self._cannot.get(dialog.uid)
            if why is None:
                return  # the restarted track's worker waits on it (or will claim it)
        else:
            why = str(resume.get("why") or "nothing waits for it after the restart")
        verdict = "approved" if decision.approved else "rejected"
        self.ctrl.notify(
            "warning",
            f"restored {dialog.kind} approval {dialog.uid} was {verdict}, but its work cannot resume: {why}",
        )

    def _run_chat_call(self, dialog: PendingDialog, decision: Decision, resume: dict[str, Any]) -> None:
        """Worker thread: run an approved chat call and append its result to the discussion."""
        from manual_slop.tools.approval import build_execution_context
        from manual_slop.tools.registry import default_registry
        from manual_slop.tools.tool import ApprovalResult, ToolCall

        payload = decision.payload
        if dialog.kind is PendingKind.CONFIRM_SCRIPT:
            name, args = "run_shell", {"script": payload["script"]}
        else:
            name, args = str(payload["tool"]), dict(payload["args"])
        ctx = build_execution_context(self.ctrl)
        ctx = dataclasses.replace(ctx, pre_tool_callback=lambda request: ApprovalResult(True, dict(args)))
        call = ToolCall(str(resume.get("call_id") or f"restored_{dialog.uid[:12]}"), name, args)
        result = default_registry().execute(call, ctx)
        note = (
            f"[{name} approved after a restart (approval {dialog.uid}); it ran now, the interrupted"
            f" send did not continue]\n{result.content}"
        )
        self.ctrl.add_history_entry("System", note, str(resume.get("discussion") or "") or None)
        self.ctrl.notify("info", f"restored {name} call {dialog.uid} ran: {result.status}")
