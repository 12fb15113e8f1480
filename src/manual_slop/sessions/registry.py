"""``logs/log_registry.toml``: one record per session folder, what it holds and what the user set.

A record is built from the folder itself by :func:`scan_session` (start and end from
``session.json``, messages and errors from ``comms.log`` and ``toolcalls.log``, the size of
every file) and carries what only the user decides: a label and a star. The
:class:`LogRegistry` keeps the records in memory behind a lock (any thread may read or
change them) and writes the whole file atomically. A registry file that does not parse is
moved aside (``log_registry.toml.corrupt-<ts>``) and rebuilt from the folders; labels and
stars of that file are then lost, the sessions are not.

Auto-whitelisting (a session pruning must keep) is decided here from the scan, so the
registry shows why a session is kept:

- ``errors``: a comms ``error`` entry, or a tool call whose status is ``error``/``timeout``;
- ``messages``: more than :data:`MANY_MESSAGES` comms ``request``/``response`` entries;
- ``new project``: ``session.json`` ``markers.project_created`` (written by
  ``SessionLog.mark`` when the session created a project file);
- ``track``: a comms entry tagged ``Tier 1`` or ``Tier 2`` (epic planning proposes tracks,
  Tier 2 turns an accepted track into tickets), or ``markers.track_created`` (written when
  Tier 2's track is saved).
"""

from __future__ import annotations

import json
import re
import threading
import time
import tomllib
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from manual_slop.atomic_io import atomic_write_bytes, move_aside
from manual_slop.config import dump_toml

__all__ = [
    "MANY_MESSAGES",
    "REGISTRY_NAME",
    "SESSION_ID",
    "LogRegistry",
    "SessionError",
    "SessionRecord",
    "scan_session",
]

REGISTRY_NAME = "log_registry.toml"
SESSION_ID = re.compile(r"\d{8}_\d{6}(?:_\d{1,4})?")  # SessionLog's folder names, nothing else
MANY_MESSAGES = 10  # more than this many messages: the session is kept
MAX_LABEL = 200
_TRACK_TIERS = ("Tier 1", "Tier 2")
_FAILED_TOOL = ("error", "timeout")


class SessionError(ValueError):
    """A session that does not exist, or a change the registry refuses (the message says which)."""


@dataclass(slots=True)
class SessionRecord:
    """One session folder as the registry knows it (``end`` 0.0: never closed, or still running)."""

    session_id: str
    start: float = 0.0
    end: float = 0.0
    pid: int = 0
    label: str = ""
    messages: int = 0
    errors: int = 0
    size_bytes: int = 0
    starred: bool = False
    whitelisted: bool = False
    whitelist_reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, session_id: str, raw: dict[str, Any]) -> SessionRecord:
        """A record from the registry file; SessionError naming the key that has the wrong type."""
        record = cls(session_id)
        for spec in fields(cls):
            if spec.name == "session_id" or spec.name not in raw:
                continue
            value, default = raw[spec.name], getattr(record, spec.name)
            if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if type(value) is not type(default):
                raise SessionError(
                    f"session {session_id}: {spec.name} should be {type(default).__name__}, "
                    f"got {type(value).__name__}"
                )
            setattr(record, spec.name, value)
        return record


def _json_lines(path: Path) -> Iterator[dict[str, Any]]:
    try:
        handle = path.open(encoding="utf-8", errors="replace")
    except OSError:
        return
    with handle:
        for line in handle:
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a torn last line
            if isinstance(entry, dict):
                yield entry


def _folder_size(folder: Path) -> int:
    total = 0
    for path in folder.rglob("*"):
        try:
            if path.is_file():
                total += path.stat().st_size
        except OSError:
            continue
    return total


def _start_from_name(session_id: str) -> float:
    try:
        return time.mktime(time.strptime(session_id[:15], "%Y%m%d_%H%M%S"))
    except ValueError:
        return 0.0


def scan_session(folder: Path) -> SessionRecord:
    """What a session folder holds (label and star are the registry's, not the folder's)."""
    record = SessionRecord(folder.name, start=_start_from_name(folder.name))
    try:
        meta = json.loads((folder / "session.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        meta = {}
    if isinstance(meta, dict):
        record.start = float(meta.get("started") or record.start)
        record.end = float(meta.get("ended") or 0.0)
        record.pid = int(meta.get("pid") or 0)
    markers = meta.get("markers") if isinstance(meta, dict) else None
    markers = markers if isinstance(markers, dict) else {}
    track_work = bool(markers.get("track_created"))
    for entry in _json_lines(folder / "comms.log"):
        kind = entry.get("kind")
        if kind in ("request", "response"):
            record.messages += 1
        elif kind == "error":
            record.errors += 1
        track_work = track_work or entry.get("source_tier") in _TRACK_TIERS
    for entry in _json_lines(folder / "toolcalls.log"):
        if entry.get("status") in _FAILED_TOOL:
            record.errors += 1
    record.size_bytes = _folder_size(folder)
    reasons = []
    if record.errors:
        reasons.append(f"{record.errors} error(s)")
    if record.messages > MANY_MESSAGES:
        reasons.append(f"{record.messages} messages")
    if markers.get("project_created"):
        reasons.append("created a project")
    if track_work:
        reasons.append("MMA track planning")
    record.whitelisted = bool(reasons)
    record.whitelist_reason = ", ".join(reasons)
    return record


def _table(record: SessionRecord) -> dict[str, Any]:
    return {key: value for key, value in record.to_dict().items() if key != "session_id"}


class LogRegistry:
    """The records of every session folder under ``<log_dir>/sessions`` (thread-safe)."""

    def __init__(self, log_dir: Path) -> None:
        self.path = log_dir / REGISTRY_NAME
        self.sessions_dir = log_dir / "sessions"
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()  # one writer at a time; each writes the newest records
        self._records: dict[str, SessionRecord] = {}
        self._version = 0  # counts changes, so a view can tell when to copy the records again
        self.problem = ""  # what was wrong with the file at the last load ('' = nothing)

    # -- the file ---------------------------------------------------------------------
    def load(self) -> None:
        """Read the file; a file that does not parse is moved aside and the registry starts empty
        (:meth:`sync` then rebuilds it from the folders)."""
        records: dict[str, SessionRecord] = {}
        self.problem = ""
        try:
            data = tomllib.loads(self.path.read_text(encoding="utf-8"))
            sessions = data.get("sessions", {})
            if not isinstance(sessions, dict):
                raise SessionError("'sessions' should be a table")
            for session_id, raw in sessions.items():
                if not SESSION_ID.fullmatch(session_id) or not isinstance(raw, dict):
                    raise SessionError(f"{session_id[:40]!r} is not a session table")
                records[session_id] = SessionRecord.from_dict(session_id, raw)
        except FileNotFoundError:
            pass
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, SessionError, ValueError) as exc:
            moved = move_aside(self.path) if self.path.exists() else None
            self.problem = (
                f"{self.path.name} was unreadable ({exc}); moved to {moved}, rebuilt from the folders"
            )
            records = {}
        with self._lock:
            self._records = records
            self._version += 1

    @property
    def version(self) -> int:
        return self._version

    def save(self) -> None:
        """Write every record atomically (``end`` etc. are plain numbers: TOML has no null)."""
        with self._write_lock:
            with self._lock:
                tables = {sid: _table(record) for sid, record in sorted(self._records.items())}
            atomic_write_bytes(self.path, dump_toml({"version": 1, "sessions": tables}), mode=0o600)

    # -- the folders ------------------------------------------------------------------
    def folder(self, session_id: str) -> Path:
        """The folder of ``session_id``; SessionError for a name that is no session id."""
        if not isinstance(session_id, str) or not SESSION_ID.fullmatch(session_id):
            raise SessionError(f"{str(session_id)[:60]!r} is not a session id (YYYYMMDD_HHMMSS)")
        return self.sessions_dir / session_id

    def sync(self, rescan: tuple[str, ...] = ()) -> list[SessionRecord]:
        """Add folders the registry lacks, scan again those that changed size (and ``rescan``),
        drop records whose folder is gone, save; the records, newest first."""
        found = []
        if self.sessions_dir.is_dir():
            found = sorted(
                p.name for p in self.sessions_dir.iterdir() if p.is_dir() and SESSION_ID.fullmatch(p.name)
            )
        with self._lock:
            known = dict(self._records)
        scanned: dict[str, SessionRecord] = {}
        for session_id in found:
            old = known.get(session_id)
            folder = self.sessions_dir / session_id
            if (
                old is not None
                and session_id not in rescan
                and old.end
                and _folder_size(folder) == old.size_bytes
            ):
                continue  # closed and unchanged: the record stands
            scanned[session_id] = scan_session(folder)
        with self._lock:  # label and star as they are now: the user may have changed them meanwhile
            merged: dict[str, SessionRecord] = {}
            for session_id in found:
                current = self._records.get(session_id) or known.get(session_id)
                record = scanned.get(session_id) or current
                if record is None:
                    continue
                if current is not None:
                    record.label, record.starred = current.label, current.starred
                merged[session_id] = record
            self._records = merged
            self._version += 1
        self.save()
        return self.records()

    # -- reading and changing ---------------------------------------------------------
    def records(self) -> list[SessionRecord]:
        """Copies of every record, newest first."""
        with self._lock:
            return [replace(self._records[sid]) for sid in sorted(self._records, reverse=True)]

    def get(self, session_id: str) -> SessionRecord:
        self.folder(session_id)
        with self._lock:
            record = self._records.get(session_id)
            if record is None:
                raise SessionError(f"no session {session_id} in the registry")
            return replace(record)

    def update(
        self, session_id: str, *, label: str | None = None, starred: bool | None = None
    ) -> SessionRecord:
        """Set the label and/or the star (kept in memory; call :meth:`save` to write it)."""
        if label is not None and (not isinstance(label, str) or len(label) > MAX_LABEL or "\n" in label):
            raise SessionError(f"a label is one line of at most {MAX_LABEL} characters")
        if starred is not None and not isinstance(starred, bool):
            raise SessionError("starred must be true or false")
        self.folder(session_id)
        with self._lock:
            record = self._records.get(session_id)
            if record is None:
                raise SessionError(f"no session {session_id} in the registry")
            if label is not None:
                record.label = label.strip()
            if starred is not None:
                record.starred = starred
            self._version += 1
            return replace(record)

    def put(self, record: SessionRecord) -> None:
        """Add or replace a record as scanned, keeping the label and star the registry has."""
        with self._lock:
            old = self._records.get(record.session_id)
            if old is not None:
                record.label, record.starred = old.label, old.starred
            self._records[record.session_id] = record
            self._version += 1

    def forget(self, session_id: str) -> None:
        with self._lock:
            self._records.pop(session_id, None)
            self._version += 1
