"""Tickets and tracks: the records the MMA tiers plan, run and persist.

A :class:`Track` is one deliverable of an epic (Tier 1 proposes tracks); its
:class:`Ticket` list is the DAG Tier 2 plans and Tier 3 workers execute. Ticket
status follows one lifecycle, enforced by :meth:`Ticket.transition`::

    todo ──► in_progress ──► completed
     │  ▲        │  │
     │  └────────┘  └──► blocked / killed
     ├──► blocked ──► todo (unblocked)
     └──► killed  ──► todo (track restarted)

:class:`TierUsage` accumulates tokens per tier under a lock (workers report from
their own threads). Everything converts to and from plain dicts (``to_dict`` /
``from_dict``) for the Hook API, the GUI and the files under ``conductor/tracks``.
"""

from __future__ import annotations

import copy
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from manual_slop.mma.errors import InvalidTransition, TicketError

__all__ = [
    "ID_PATTERN",
    "TIERS",
    "TRACK_KINDS",
    "Priority",
    "Ticket",
    "TicketStatus",
    "TierUsage",
    "Track",
    "TrackStatus",
]

ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}"
TIERS: tuple[str, ...] = ("Tier 1", "Tier 2", "Tier 3", "Tier 4")
TRACK_KINDS: tuple[str, ...] = ("epic", "plan")  # a track of an epic (Tier 2's tickets), or a /plan run
RESULT_LIMIT = 100_000  # characters of a worker's answer kept on the ticket


class TicketStatus(StrEnum):
    TODO = "todo"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    BLOCKED = "blocked"
    KILLED = "killed"


class Priority(StrEnum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"

    @property
    def rank(self) -> int:
        return _PRIORITY_RANK[self]


_PRIORITY_RANK = {Priority.HIGH: 0, Priority.MEDIUM: 1, Priority.LOW: 2}


class TrackStatus(StrEnum):
    PLANNED = "planned"
    RUNNING = "running"
    PAUSED = "paused"
    DONE = "done"
    BLOCKED = "blocked"
    ABORTED = "aborted"


_ALLOWED: dict[TicketStatus, frozenset[TicketStatus]] = {
    TicketStatus.TODO: frozenset({TicketStatus.IN_PROGRESS, TicketStatus.BLOCKED, TicketStatus.KILLED}),
    TicketStatus.IN_PROGRESS: frozenset(
        {TicketStatus.COMPLETED, TicketStatus.BLOCKED, TicketStatus.KILLED, TicketStatus.TODO}
    ),
    TicketStatus.BLOCKED: frozenset({TicketStatus.TODO, TicketStatus.KILLED}),
    TicketStatus.KILLED: frozenset({TicketStatus.TODO}),
    TicketStatus.COMPLETED: frozenset(),
}


def check_id(value: object, what: str) -> str:
    """``value`` as an id, or TicketError naming what was wrong."""
    if not isinstance(value, str) or not re.fullmatch(ID_PATTERN, value):
        raise TicketError(
            f"{what}: expected an id of 1-64 letters, digits, '_', '.', ':' or '-' "
            f"(starting with a letter or digit), got {value!r}"
        )
    return value


def _str(data: Mapping[str, Any], key: str, where: str, default: str = "") -> str:
    value = data.get(key, default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise TicketError(f"{where}.{key}: expected string, got {type(value).__name__}")
    return value


def _str_list(data: Mapping[str, Any], key: str, where: str) -> list[str]:
    value = data.get(key) or []
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise TicketError(f"{where}.{key}: expected a list of strings, got {value!r}")
    return list(value)


def _int(data: Mapping[str, Any], key: str, where: str) -> int:
    value = data.get(key, 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TicketError(f"{where}.{key}: expected a non-negative integer, got {value!r}")
    return value


def _float(data: Mapping[str, Any], key: str, where: str, default: float = 0.0) -> float:
    value = data.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TicketError(f"{where}.{key}: expected a number, got {value!r}")
    return float(value)


def _bool(data: Mapping[str, Any], key: str, where: str) -> bool:
    value = data.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise TicketError(f"{where}.{key}: expected true or false, got {value!r}")
    return value


def _enum(cls: type[StrEnum], data: Mapping[str, Any], key: str, where: str, default: StrEnum) -> Any:
    value = data.get(key, default)
    if value is None:
        return default
    try:
        return cls(value)
    except ValueError:
        allowed = ", ".join(m.value for m in cls)  # type: ignore[attr-defined]
        raise TicketError(f"{where}.{key}: expected one of {allowed}, got {value!r}") from None


def _opt(text: str) -> str | None:
    return text or None


def _opt_ts(ts: float) -> float | None:
    return ts or None


@dataclass(slots=True)
class Ticket:
    """One unit of work for a stateless Tier 3 worker."""

    id: str
    description: str
    status: TicketStatus = TicketStatus.TODO
    depends_on: list[str] = field(default_factory=list)
    assigned_to: str = ""
    blocked_reason: str = ""
    blocked_by: str = ""  # the dependency whose block cascaded here ('' = blocked on its own)
    retry_count: int = 0
    manual_block: bool = False
    model_override: str = ""
    priority: Priority = Priority.MEDIUM
    target_files: list[str] = field(default_factory=list)
    critical: bool = False  # one failure is enough to ask Tier 2 for a replan
    result: str = ""
    worktree: str = ""  # the scratch tree kept for inspection after the ticket failed ('' = none)
    created_at: float = field(default_factory=time.time)
    updated_at: float = 0.0
    started_at: float = 0.0
    finished_at: float = 0.0

    def __post_init__(self) -> None:
        check_id(self.id, "ticket id")
        self.status = TicketStatus(self.status)
        self.priority = Priority(self.priority)
        if not self.updated_at:
            self.updated_at = self.created_at

    # -- lifecycle ----------------------------------------------------------------
    def can_transition(self, new: TicketStatus) -> bool:
        return new in _ALLOWED[self.status]

    def transition(self, new: TicketStatus, *, now: float | None = None) -> None:
        """Change status along the lifecycle; InvalidTransition otherwise."""
        if new.__class__ is not TicketStatus:
            new = TicketStatus(new)
        if new not in _ALLOWED[self.status]:
            raise InvalidTransition(f"ticket {self.id}: cannot go from {self.status} to {new}")
        self.status = new
        self.updated_at = now if now is not None else time.time()

    def set_result(self, text: str) -> None:
        self.result = text if len(text) <= RESULT_LIMIT else text[:RESULT_LIMIT] + "\n[... truncated]"

    # -- conversion ---------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain dict (``None`` for unset optional fields) for the API, the GUI and TOML."""
        return {
            "id": self.id,
            "description": self.description,
            "status": str(self.status),
            "depends_on": list(self.depends_on),
            "assigned_to": _opt(self.assigned_to),
            "blocked_reason": _opt(self.blocked_reason),
            "blocked_by": _opt(self.blocked_by),
            "retry_count": self.retry_count,
            "manual_block": self.manual_block,
            "model_override": _opt(self.model_override),
            "priority": str(self.priority),
            "target_files": list(self.target_files),
            "critical": self.critical,
            "result": _opt(self.result),
            "worktree": _opt(self.worktree),
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "started_at": _opt_ts(self.started_at),
            "finished_at": _opt_ts(self.finished_at),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "ticket") -> Ticket:
        """Build from a dict; TicketError names the key that is wrong."""
        if not isinstance(data, Mapping):
            raise TicketError(f"{where}: expected a table, got {type(data).__name__}")
        tid = check_id(data.get("id"), f"{where}.id")
        where = f"{where} {tid}"
        description = _str(data, "description", where)
        if not description.strip():
            raise TicketError(f"{where}.description: must not be empty")
        depends_on = _str_list(data, "depends_on", where)
        for dep in depends_on:
            check_id(dep, f"{where}.depends_on")
        created = _float(data, "created_at", where, time.time())
        return cls(
            id=tid,
            description=description,
            status=_enum(TicketStatus, data, "status", where, TicketStatus.TODO),
            depends_on=depends_on,
            assigned_to=_str(data, "assigned_to", where),
            blocked_reason=_str(data, "blocked_reason", where),
            blocked_by=_str(data, "blocked_by", where),
            retry_count=_int(data, "retry_count", where),
            manual_block=_bool(data, "manual_block", where),
            model_override=_str(data, "model_override", where),
            priority=_enum(Priority, data, "priority", where, Priority.MEDIUM),
            target_files=_str_list(data, "target_files", where),
            critical=_bool(data, "critical", where),
            result=_str(data, "result", where),
            worktree=_str(data, "worktree", where),
            created_at=created,
            updated_at=_float(data, "updated_at", where, created),
            started_at=_float(data, "started_at", where),
            finished_at=_float(data, "finished_at", where),
        )

    def copy(self) -> Ticket:
        return copy.deepcopy(self)


@dataclass(slots=True)
class Track:
    """A deliverable of an epic with its ticket DAG."""

    id: str
    title: str
    description: str = ""
    priority: Priority = Priority.MEDIUM
    status: TrackStatus = TrackStatus.PLANNED
    tickets: list[Ticket] = field(default_factory=list)
    replan_count: int = 0
    created_at: float = field(default_factory=time.time)
    updated_at: float = 0.0
    kind: str = "epic"

    def __post_init__(self) -> None:
        check_id(self.id, "track id")
        if self.kind not in TRACK_KINDS:
            raise TicketError(f"track {self.id}: kind {self.kind!r} is not one of {', '.join(TRACK_KINDS)}")
        self.priority = Priority(self.priority)
        self.status = TrackStatus(self.status)
        if not self.updated_at:
            self.updated_at = self.created_at

    def ticket(self, ticket_id: str) -> Ticket:
        for ticket in self.tickets:
            if ticket.id == ticket_id:
                return ticket
        raise TicketError(f"track {self.id} has no ticket {ticket_id!r}")

    def counts(self) -> dict[str, int]:
        """Number of tickets per status (every status present, zero when none)."""
        counts = dict.fromkeys((str(s) for s in TicketStatus), 0)
        for ticket in self.tickets:
            counts[str(ticket.status)] += 1
        return counts

    def touch(self) -> None:
        self.updated_at = time.time()

    def prepare_for_run(self) -> list[str]:
        """Before a (re)start: in-progress and killed tickets go back to ``todo``, cascaded
        blocks are lifted (the engine recomputes them). Returns the ids that changed."""
        changed = []
        for ticket in self.tickets:
            if ticket.status in (TicketStatus.IN_PROGRESS, TicketStatus.KILLED) or (
                ticket.status is TicketStatus.BLOCKED and ticket.blocked_by
            ):
                ticket.status = TicketStatus.TODO
                ticket.assigned_to = ticket.blocked_reason = ticket.blocked_by = ""
                ticket.updated_at = time.time()
                changed.append(ticket.id)
        return changed

    def summary(self) -> dict[str, Any]:
        """The track without its tickets, plus counts (the GUI's tracks list, ``active_track``)."""
        return {
            "id": self.id,
            "title": self.title,
            "description": self.description,
            "priority": str(self.priority),
            "status": str(self.status),
            "replan_count": self.replan_count,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "ticket_count": len(self.tickets),
            "counts": self.counts(),
            "kind": self.kind,
        }

    def to_dict(self) -> dict[str, Any]:
        out = self.summary()
        del out["ticket_count"], out["counts"]
        out["tickets"] = [t.to_dict() for t in self.tickets]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "track") -> Track:
        if not isinstance(data, Mapping):
            raise TicketError(f"{where}: expected a table, got {type(data).__name__}")
        tid = check_id(data.get("id"), f"{where}.id")
        where = f"{where} {tid}"
        title = _str(data, "title", where)
        if not title.strip():
            raise TicketError(f"{where}.title: must not be empty")
        raw_tickets = data.get("tickets") or []
        if not isinstance(raw_tickets, list):
            raise TicketError(f"{where}.tickets: expected a list")
        created = _float(data, "created_at", where, time.time())
        return cls(
            id=tid,
            title=title,
            description=_str(data, "description", where),
            priority=_enum(Priority, data, "priority", where, Priority.MEDIUM),
            status=_enum(TrackStatus, data, "status", where, TrackStatus.PLANNED),
            tickets=[Ticket.from_dict(t, f"{where}.tickets[{i}]") for i, t in enumerate(raw_tickets)],
            replan_count=_int(data, "replan_count", where),
            created_at=created,
            updated_at=_float(data, "updated_at", where, created),
            kind=_str(data, "kind", where, "epic") or "epic",
        )


class TierUsage:
    """Tokens per tier (``input``, ``output``, ``model``), safe to update from any thread."""

    def __init__(self, models: Mapping[str, str] | None = None) -> None:
        self._lock = threading.Lock()
        self._usage: dict[str, dict[str, Any]] = {
            tier: {"input": 0, "output": 0, "model": (models or {}).get(tier, "")} for tier in TIERS
        }

    def add(self, tier: str, input_tokens: int, output_tokens: int, model: str = "") -> None:
        with self._lock:
            entry = self._usage.setdefault(tier, {"input": 0, "output": 0, "model": ""})
            entry["input"] += max(0, int(input_tokens))
            entry["output"] += max(0, int(output_tokens))
            if model:
                entry["model"] = model

    def snapshot(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return copy.deepcopy(self._usage)
