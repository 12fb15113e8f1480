"""The approval journal: every dialog that waits for a human, on disk before anyone sees it.

One JSON object a line in ``logs/sessions/<ts>/approvals.jsonl``. The clutch appends a
``pending`` line (fsync'd) before a dialog is registered and announced, and a ``decided`` line
right after the decision is audited. A dialog's life is therefore: journal → show → decide →
audit → journal. After a crash, :func:`scan_sessions` reads every session's journal and
returns the dialogs that were shown but never decided (see :mod:`manual_slop.governance.durable`
for what the app does with them).

Reading is forgiving only where a crash can explain the damage: a last line without its newline
(``kill -9`` in the middle of a write) is skipped with a warning. Anything else that does not
parse means the file was damaged some other way: it is moved aside (``*.corrupt-<ts>``) and
reported, never overwritten or silently trusted.

A decision is recorded in ``audit.log`` first and in the journal second; a crash between the
two leaves a journal that looks undecided, so :func:`scan_sessions` also reads the audit log of
every session that mentions the id and counts an audited decision as made — ``audit.log`` holds
exactly one decision per dialog id across restarts.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from manual_slop.atomic_io import move_aside

if TYPE_CHECKING:
    from manual_slop.dialogs import Decision, PendingDialog

__all__ = [
    "EVENT_FIELDS",
    "JOURNAL_NAME",
    "ApprovalJournal",
    "JournalError",
    "JournalRead",
    "Undecided",
    "read_journal",
    "scan_sessions",
]

log = logging.getLogger(__name__)

JOURNAL_NAME = "approvals.jsonl"

# event -> the fields of its line (besides "event" and "ts"); docs/guide_governance.md shows this
EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    "pending": ("id", "kind", "created", "payload", "source_tier", "resume"),
    "decided": ("id", "approved", "abort", "decider", "decided_at", "payload"),
}

Describe = Callable[["PendingDialog"], dict[str, Any]]


class JournalError(OSError):
    """The journal could not be written (the dialog is then not shown: it is rejected)."""


@dataclass(slots=True)
class JournalRead:
    """What one journal file holds: ``pending`` lines by id (first wins), ``decided`` lines by
    id, and what was wrong with the file (``warnings``; ``moved_to`` when it was moved aside)."""

    path: Path
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)
    decided: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    moved_to: Path | None = None


@dataclass(frozen=True, slots=True)
class Undecided:
    """A dialog some session showed and nobody decided: its ``pending`` line and the session
    it was last journaled in."""

    record: dict[str, Any]
    session: str

    @property
    def uid(self) -> str:
        return str(self.record["id"])

    @property
    def kind(self) -> str:
        return str(self.record["kind"])

    @property
    def resume(self) -> dict[str, Any]:
        resume = self.record.get("resume")
        return dict(resume) if isinstance(resume, dict) else {"type": "none"}


def _valid(record: Any) -> str | None:
    """Why ``record`` is not a journal line (None when it is one)."""
    if not isinstance(record, dict):
        return "not a JSON object"
    event = record.get("event")
    if event not in EVENT_FIELDS:
        return f"unknown event {event!r}"
    missing = [f for f in EVENT_FIELDS[event] if f not in record]
    if missing:
        return f"{event} line lacks {', '.join(missing)}"
    if not isinstance(record["id"], str) or not record["id"]:
        return "id must be a non-empty string"
    return None


def read_journal(path: Path) -> JournalRead:
    """Read ``path``; a torn last line is skipped with a warning, any other bad line moves the
    file aside (the returned read is then empty and names where it went)."""
    result = JournalRead(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return result
    except OSError as exc:
        result.warnings.append(f"{path} cannot be read: {exc}")
        return result
    lines = data.split(b"\n")
    torn = lines.pop()  # b"" when the file ends with a newline, as every complete write does
    if torn.strip():
        result.warnings.append(f"{path}: ignored an incomplete last line (the app stopped mid-write)")
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw.decode("utf-8"))
            problem = _valid(record)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            problem = f"not JSON ({exc})"
        if problem is not None:
            try:
                result.moved_to = move_aside(path, "corrupt")
            except OSError as exc:
                result.warnings.append(f"{path} line {number}: {problem}; it could not be moved aside: {exc}")
            else:
                result.warnings.append(
                    f"{path} line {number}: {problem}; the journal was moved aside to {result.moved_to.name}"
                )
            result.pending.clear()
            result.decided.clear()
            return result
        target = result.pending if record["event"] == "pending" else result.decided
        target.setdefault(record["id"], record)
    return result


def _audited_ids(audit_path: Path) -> set[str]:
    """Ids with a decision in an ``audit.log`` (a torn line is skipped)."""
    ids: set[str] = set()
    try:
        text = audit_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ids
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(entry, dict) and entry.get("event") == "decision" and isinstance(entry.get("id"), str):
            ids.add(entry["id"])
    return ids


@dataclass(slots=True)
class SessionScan:
    """Every undecided dialog across sessions, the decided lines (to find earlier approvals of
    a track's tickets), and what was wrong with the files read."""

    undecided: list[Undecided] = field(default_factory=list)
    decided: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)  # (pending, decided)
    warnings: list[str] = field(default_factory=list)
    audited_late: list[str] = field(default_factory=list)  # ids decided in audit.log, not journaled


def scan_sessions(sessions_dir: Path, exclude: Path | None = None, limit: int = 200) -> SessionScan:
    """The undecided dialogs of the newest ``limit`` session folders under ``sessions_dir``
    (``exclude``: the current session). An id counts as decided when any journal has its
    ``decided`` line or any audit log of a session that journaled it has its decision; an id
    journaled by several sessions (carried over by a restart) is listed once, from the newest."""
    scan = SessionScan()
    try:
        folders = sorted(p for p in sessions_dir.iterdir() if p.is_dir() and p != exclude)
    except OSError:
        return scan
    reads: list[tuple[Path, JournalRead]] = []
    for folder in folders[-limit:]:
        path = folder / JOURNAL_NAME
        if path.exists():
            read = read_journal(path)
            scan.warnings += read.warnings
            reads.append((folder, read))
    decided: dict[str, dict[str, Any]] = {}
    for _, read in reads:
        decided.update(read.decided)
    pending: dict[str, tuple[dict[str, Any], str]] = {}
    for folder, read in reads:  # oldest first: the newest carry of an id wins
        for uid, record in read.pending.items():
            pending[uid] = (record, folder.name)
    open_ids = {uid for uid in pending if uid not in decided}
    if open_ids:
        audited: set[str] = set()
        for folder, read in reads:
            if open_ids & set(read.pending):
                audited |= _audited_ids(folder / "audit.log")
        scan.audited_late = sorted(open_ids & audited)
        open_ids -= audited
    for uid, (record, session) in sorted(pending.items(), key=lambda kv: kv[1][0].get("created", 0.0)):
        if uid in open_ids:
            scan.undecided.append(Undecided(record, session))
        elif uid in decided:
            scan.decided.append((record, decided[uid]))
    return scan


class ApprovalJournal:
    """Appends ``pending`` and ``decided`` lines to one session's journal (any thread).

    ``describe(dialog)`` says what a dialog belongs to (its ``resume`` descriptor); a dialog
    restored from an earlier session keeps the descriptor it was first journaled with
    (:meth:`carry`). ``redact`` passes every line through the app's redactor, like every other
    file of the session folder: a payload quoting a known secret comes back with its mark.
    """

    def __init__(
        self,
        path: Path,
        describe: Describe | None = None,
        redact: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self.path = path
        self._describe = describe or (lambda dialog: {"type": "none"})
        self._redact = redact or (lambda record: record)  # known secrets stay out of the session folder
        self._lock = threading.Lock()
        self._carried: dict[str, dict[str, Any]] = {}
        self._journaled: set[str] = set()

    def carry(self, uid: str, resume: Mapping[str, Any]) -> None:
        """The next ``pending`` line of ``uid`` keeps ``resume`` (a dialog restored after a restart)."""
        with self._lock:
            self._carried[uid] = dict(resume)

    def record_pending(self, dialog: PendingDialog) -> None:
        """Journal ``dialog`` as pending; raises JournalError when it cannot be made durable."""
        with self._lock:
            resume = self._carried.pop(dialog.uid, None)
        if resume is None:
            try:
                resume = self._describe(dialog)
            except Exception as exc:  # a descriptor bug must not lose the dialog
                log.exception("describing dialog %s failed", dialog.uid)
                resume = {"type": "none", "why": f"describing it failed: {exc}"}
        self._append(
            {
                "event": "pending",
                "id": dialog.uid,
                "kind": str(dialog.kind),
                "created": dialog.created,
                "payload": dialog.payload,
                "source_tier": dialog.source_tier,
                "resume": resume,
            }
        )
        with self._lock:
            self._journaled.add(dialog.uid)

    def record_decided(self, dialog: PendingDialog, decision: Decision) -> None:
        """Mark ``dialog`` decided (after its audit line); ids never journaled are skipped."""
        with self._lock:
            if dialog.uid not in self._journaled:
                return
            self._journaled.discard(dialog.uid)
        try:
            self._append(
                {
                    "event": "decided",
                    "id": dialog.uid,
                    "approved": decision.approved,
                    "abort": decision.abort,
                    "decider": decision.decider,
                    "decided_at": decision.decided_at,
                    "payload": decision.payload,
                }
            )
        except JournalError as exc:  # the audit line already holds it: a restart will see it there
            log.error("%s", exc)

    def _append(self, record: dict[str, Any]) -> None:
        record = self._redact(record)
        record = {**record, "ts": time.time()}
        data = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        with self._lock:
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    written = 0
                    while written < len(data):  # a short write is finished, not dropped
                        written += os.write(fd, data[written:])
                    os.fsync(fd)
                finally:
                    os.close(fd)
            except OSError as exc:
                raise JournalError(f"the approval journal {self.path} cannot be written: {exc}") from exc
