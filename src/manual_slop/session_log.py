"""The per-session audit folder: ``logs/sessions/<YYYYMMDD_HHMMSS>/``.

Files (all JSON-L, one object per line):

- ``comms.log``     every request, response, tool call and tool result
- ``toolcalls.log`` every executed tool call (tier, args, duration, status, size)
- ``apihooks.log``  every Hook API request (method, path, status, ms)
- ``clicalls.log``  every CLI subprocess call (command, stdin, stdout, stderr, latency)
- ``audit.log``     every Execution Clutch decision (who, when, final payload)
- ``scripts/``      every script that passed the clutch, saved before it runs
- ``runs/``         one run log per agent run (written by ``governance.run_log``)
- ``approvals.jsonl`` every dialog that waited, and its decision (``governance.journal``)
- ``session.json``  id, pid, version, start and end times, and ``markers``: counts of what the
  session did that makes it worth keeping (e.g. ``project_created``; see
  :meth:`SessionLog.mark` and ``manual_slop.sessions``)

The folder is ``0700`` and every file in it ``0600``: other users of the machine read none of it.

Each entry is written with one ``write`` to a file opened for appending and is
on disk (in the OS cache) when the call returns, so a crash loses at most the
entry being written. Every value passes the app's :class:`~manual_slop.redaction.Redactor`
before it is written: known secrets become ``[REDACTED:<name>]``.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from manual_slop import __version__
from manual_slop.atomic_io import atomic_write_text
from manual_slop.redaction import Redactor

__all__ = ["LOG_STREAMS", "SessionLog"]

LOG_STREAMS: tuple[str, ...] = ("comms", "toolcalls", "apihooks", "clicalls", "audit")


class SessionLog:
    """Thread-safe appenders for one session's log folder."""

    def __init__(self, log_dir: Path, redactor: Redactor | None = None) -> None:
        self.redactor = redactor or Redactor()
        self.root = self._claim_folder(log_dir / "sessions")
        self.session_id = self.root.name
        self.scripts_dir = self.root / "scripts"
        self.scripts_dir.mkdir(mode=0o700)
        self._locks = {name: threading.Lock() for name in LOG_STREAMS}
        self._script_seq = itertools.count(1)
        self._script_lock = threading.Lock()
        self._started = time.time()
        self._closed = False
        self._meta_lock = threading.Lock()
        self._markers: dict[str, int] = {}
        self._summary: dict[str, Any] = {}
        self._ended: float | None = None
        for name in LOG_STREAMS:
            self.path(name).touch(mode=0o600)  # the user's conversation: no other user reads it
        self._write_meta(ended=None)

    @staticmethod
    def _claim_folder(sessions: Path) -> Path:
        sessions.mkdir(parents=True, exist_ok=True)
        base = time.strftime("%Y%m%d_%H%M%S")
        for attempt in itertools.count(1):
            candidate = sessions / (base if attempt == 1 else f"{base}_{attempt}")
            try:
                candidate.mkdir(mode=0o700)  # atomic claim: two apps in one second get two folders
            except FileExistsError:
                continue
            return candidate
        raise AssertionError("unreachable")

    def path(self, stream: str) -> Path:
        if stream not in self._locks:
            raise KeyError(f"unknown log stream {stream!r}; known: {', '.join(LOG_STREAMS)}")
        return self.root / f"{stream}.log"

    def append(self, stream: str, entry: Mapping[str, Any]) -> None:
        """Append one JSON object to ``<stream>.log``."""
        record = dict(entry)
        record.setdefault("local_ts", time.time())
        # Redacted as values, not as a line: a mark never lands inside JSON syntax.
        redact = self.redactor.redact
        record = self.redactor.redact_obj(record, copy=False)  # only read by json.dumps below
        line = json.dumps(record, ensure_ascii=False, default=lambda value: redact(str(value))) + "\n"
        data = line.encode("utf-8")
        path = self.path(stream)
        with self._locks[stream]:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)

    def append_comms(self, entry: Mapping[str, Any]) -> None:
        self.append("comms", entry)

    def append_tool_call(self, entry: Mapping[str, Any]) -> None:
        self.append("toolcalls", entry)

    def append_api_hook(self, entry: Mapping[str, Any]) -> None:
        self.append("apihooks", entry)

    def append_cli_call(self, entry: Mapping[str, Any]) -> None:
        self.append("clicalls", entry)

    def append_audit(self, entry: Mapping[str, Any]) -> None:
        self.append("audit", entry)

    def save_script(self, text: str, suffix: str = ".sh") -> Path:
        """Save a script about to run as ``scripts/<HHMMSS>_<seq><suffix>``; returns its path."""
        with self._script_lock:
            seq = next(self._script_seq)
        target = self.scripts_dir / f"{time.strftime('%H%M%S')}_{seq:04d}{suffix}"
        atomic_write_text(target, self.redactor.redact(text))
        return target

    def read(self, stream: str) -> list[dict[str, Any]]:
        """All complete entries of a stream (a torn last line is skipped)."""
        entries: list[dict[str, Any]] = []
        for line in self.path(stream).read_text(encoding="utf-8").splitlines():
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return entries

    def close(self, **summary: Any) -> None:
        """Record the end time and ``summary`` (e.g. frames run); appending still works afterwards."""
        if not self._closed:
            self._closed = True
            self._write_meta(ended=time.time(), **summary)

    def mark(self, marker: str) -> None:
        """Count ``marker`` (e.g. ``project_created``) in ``session.json``: start-up pruning keeps
        a session that did such a thing (any thread)."""
        with self._meta_lock:
            self._markers[marker] = self._markers.get(marker, 0) + 1
        self._write_meta(ended=self._ended, **self._summary)

    def _write_meta(self, ended: float | None, **summary: Any) -> None:
        with self._meta_lock:
            self._ended, self._summary = ended, dict(summary)
            meta = {
                **summary,
                "session_id": self.session_id,
                "pid": os.getpid(),
                "version": __version__,
                "started": self._started,
                "ended": ended,
                "markers": dict(self._markers),
            }
            atomic_write_text(self.root / "session.json", json.dumps(meta, indent=2) + "\n")
