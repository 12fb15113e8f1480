"""Fabricated session folders as SessionLog writes them (session.json plus JSON-L streams)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

HOUR = 3600.0


def session_id(at: float) -> str:
    return time.strftime("%Y%m%d_%H%M%S", time.localtime(at))


def make_session(
    log_dir: Path,
    age_hours: float,
    *,
    now: float,
    comms: list[dict[str, Any]] = (),  # type: ignore[assignment]
    toolcalls: list[dict[str, Any]] = (),  # type: ignore[assignment]
    markers: dict[str, int] | None = None,
    pad_kb: int = 0,
    ended: bool = True,
    pid: int = 0,
) -> str:
    """A closed session started ``age_hours`` before ``now``; its id."""
    started = now - age_hours * HOUR
    sid = session_id(started)
    folder = log_dir / "sessions" / sid
    folder.mkdir(parents=True)
    meta = {"session_id": sid, "pid": pid, "version": "test", "started": started,
            "ended": started + 60 if ended else None, "markers": markers or {}}  # fmt: skip
    (folder / "session.json").write_text(json.dumps(meta), encoding="utf-8")
    for name, entries in (("comms", comms), ("toolcalls", toolcalls)):
        lines = "".join(json.dumps(e) + "\n" for e in entries)
        (folder / f"{name}.log").write_text(lines, encoding="utf-8")
    if pad_kb:
        (folder / "clicalls.log").write_text("x" * pad_kb * 1024, encoding="utf-8")
    return sid


def chat(turns: int) -> list[dict[str, Any]]:
    """``turns`` request/response pairs as the tool loop logs them."""
    entries: list[dict[str, Any]] = []
    for n in range(turns):
        entries.append(
            {"ts": "10:00:00", "direction": "OUT", "kind": "request", "payload": {"message": f"q{n}"}}
        )
        entries.append(
            {"ts": "10:00:01", "direction": "IN", "kind": "response", "payload": {"text": f"a{n}"}}
        )
    return entries
