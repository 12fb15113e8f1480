"""A prior session read back for the read-only replay view: what its logs contain.

:func:`load_replay` reads a session folder (blocking: off the main thread) into a
:class:`Replay`: its ``session.json``, the discussion as the provider saw it (comms
``request`` messages and ``response`` texts), the comms log, the tool calls, the approval
journal and the MMA state the comms entries show (per tier and per ticket). Nothing in a
Replay can act: it is data for a view.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from manual_slop.session_log import LOG_STREAMS

__all__ = ["MAX_LINES_PER_STREAM", "Replay", "load_replay", "read_stream"]

MAX_LINES_PER_STREAM = 20_000


def read_stream(path: Path, limit: int = MAX_LINES_PER_STREAM) -> list[dict[str, Any]]:
    """The last ``limit`` JSON objects of a JSON-L file, each with ``_line`` (torn lines skipped)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()[-limit:]
    except OSError:
        return []
    entries: list[dict[str, Any]] = []
    for number, line in enumerate(lines, 1):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            entry.setdefault("_line", number)
            entries.append(entry)
    return entries


@dataclass(slots=True)
class Replay:
    """One prior session, read-only."""

    session_id: str
    folder: str
    meta: dict[str, Any] = field(default_factory=dict)
    discussion: list[dict[str, Any]] = field(default_factory=list)  # {role, text, tier, ts}
    streams: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # every LOG_STREAMS entry
    approvals: list[dict[str, Any]] = field(default_factory=list)
    tiers: dict[str, dict[str, int]] = field(default_factory=dict)  # tier -> requests/responses/errors
    tickets: list[dict[str, Any]] = field(default_factory=list)  # {ticket, tier, requests, errors, last}

    @property
    def comms(self) -> list[dict[str, Any]]:
        return self.streams.get("comms", [])

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return self.streams.get("toolcalls", [])


def _payload(entry: dict[str, Any]) -> dict[str, Any]:
    payload = entry.get("payload")
    return payload if isinstance(payload, dict) else {}


def _discussion(comms: list[dict[str, Any]]) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    for entry in comms:
        kind, payload = entry.get("kind"), _payload(entry)
        tier = str(entry.get("source_tier") or "")
        if kind == "request" and isinstance(payload.get("message"), str):  # a list: a tool round
            turns.append(
                {"role": "User", "text": payload["message"], "tier": tier, "ts": entry.get("ts", "")}
            )
        elif kind == "response" and str(payload.get("text") or "").strip():
            turns.append(
                {"role": "AI", "text": str(payload["text"]), "tier": tier, "ts": entry.get("ts", "")}
            )
        elif kind == "error":
            text = f"error ({payload.get('kind', '?')}): {payload.get('error', '')}"
            turns.append({"role": "Error", "text": text, "tier": tier, "ts": entry.get("ts", "")})
    return turns


def _mma(comms: list[dict[str, Any]]) -> tuple[dict[str, dict[str, int]], list[dict[str, Any]]]:
    tiers: dict[str, dict[str, int]] = {}
    tickets: dict[str, dict[str, Any]] = {}
    for entry in comms:
        kind = entry.get("kind")
        if kind not in ("request", "response", "error"):
            continue
        column = {"request": "requests", "response": "responses", "error": "errors"}[kind]
        tier = str(entry.get("source_tier") or "")
        if tier:
            counts = tiers.setdefault(tier, {"requests": 0, "responses": 0, "errors": 0})
            counts[column] += 1
        ticket = entry.get("ticket")
        if ticket:
            row = tickets.setdefault(
                str(ticket),
                {"ticket": str(ticket), "tier": tier, "requests": 0, "responses": 0, "errors": 0, "last": ""},
            )
            row[column] += 1
            if kind == "response":
                row["last"] = str(_payload(entry).get("text") or "")[:200]
    return tiers, list(tickets.values())


def load_replay(folder: Path) -> Replay:
    """Read a session folder (blocking); FileNotFoundError when it is not there."""
    if not folder.is_dir():
        raise FileNotFoundError(f"no session folder {folder}")
    try:
        meta = json.loads((folder / "session.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        meta = {}
    streams = {stream: read_stream(folder / f"{stream}.log") for stream in LOG_STREAMS}
    tiers, tickets = _mma(streams["comms"])
    return Replay(
        session_id=folder.name,
        folder=str(folder),
        meta=meta if isinstance(meta, dict) else {},
        discussion=_discussion(streams["comms"]),
        streams=streams,
        approvals=read_stream(folder / "approvals.jsonl"),
        tiers=tiers,
        tickets=tickets,
    )
