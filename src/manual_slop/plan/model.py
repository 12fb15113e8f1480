"""Plans and subtasks: the records of a ``/plan`` run and their file shape.

A :class:`Plan` is what the planner proposed for one goal, after validation
(:mod:`manual_slop.plan.validate`): subtasks in numbered parallel groups, each run by
one agent on one engine, plus the strategy for merging their results. Groups run in
order; the subtasks of one group run side by side. A plan is saved as
``<plans dir>/<plan_file_name(goal, now)>`` and its id is that file's stem.

File shape (``Plan.to_dict``; ``Plan.from_dict`` reads it back)::

    {"id": "20250118-142305_build-rest-api", "status": "proposed",
     "subtasks": [{"id": "S1", "title": ..., "objective": ..., "agent_key": ...,
                   "engine": ..., "parallel_group": 1, "depends_on": [], ...}],
     "merge": {"strategy": "..."},
     "metadata": {"goal": "Build REST API", "created_at": "2025-01-18T14:23:05", ...}}

Errors::

    ValueError
    └── PlanError          a plan or subtask record is malformed (the message names the key)
        └── PlanInvalid    a planner's reply broke validation rules (see plan.validate)
"""

from __future__ import annotations

import copy
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, TypeVar

from manual_slop.mma.errors import TicketError
from manual_slop.mma.models import check_id

__all__ = [
    "SLUG_MAX",
    "Plan",
    "PlanError",
    "PlanStatus",
    "Subtask",
    "SubtaskStatus",
    "plan_file_name",
    "plan_slug",
]

# 15 characters of timestamp + "_" + 48 keeps a plan file's stem within an MMA id's 64 characters
SLUG_MAX = 48
_USAGE_KEYS = ("input_tokens", "output_tokens")
_E = TypeVar("_E", bound=StrEnum)


class PlanError(ValueError):
    """A plan or subtask record is malformed; the message names the key that is wrong."""


class SubtaskStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    KILLED = "killed"


class PlanStatus(StrEnum):
    PLANNING = "planning"  # the planner is writing it (no subtasks yet)
    PROPOSED = "proposed"  # validated, waiting for the user's approval
    RUNNING = "running"  # groups of subtasks are being run
    PAUSED = "paused"
    MERGING = "merging"  # every subtask done; results being merged
    JUDGING = "judging"  # the merged result is being scored
    DONE = "done"
    FAILED = "failed"
    ABORTED = "aborted"  # stopped by the user while running
    REJECTED = "rejected"  # the user declined the proposal
    INVALID = "invalid"  # the planner's reply stayed invalid after its retry


def _zero_usage() -> dict[str, int]:
    return dict.fromkeys(_USAGE_KEYS, 0)


# -- reading dicts: each helper raises PlanError naming ``where.key`` --------------------------
def _id(value: object, what: str) -> str:
    try:
        return check_id(value, what)
    except TicketError as exc:
        raise PlanError(str(exc)) from None


def _table(data: object, where: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise PlanError(f"{where}: expected an object, got {type(data).__name__}")
    return data


def _text(data: Mapping[str, Any], key: str, where: str, *, required: bool = False) -> str:
    value = data.get(key)
    if value is None:
        if required:
            raise PlanError(f"{where}.{key}: missing")
        return ""
    if not isinstance(value, str):
        raise PlanError(f"{where}.{key}: expected a string, got {type(value).__name__}")
    if required and not value.strip():
        raise PlanError(f"{where}.{key}: must not be empty")
    return value


def _opt_text(data: Mapping[str, Any], key: str, where: str) -> str | None:
    return _text(data, key, where) if data.get(key) is not None else None


def _str_list(data: Mapping[str, Any], key: str, where: str) -> list[str]:
    value = data.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PlanError(f"{where}.{key}: expected a list of strings, got {value!r}")
    return list(value)


def _count(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PlanError(f"{where}: expected a non-negative integer, got {value!r}")
    return value


def _time(data: Mapping[str, Any], key: str, where: str) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PlanError(f"{where}.{key}: expected a number of seconds, got {value!r}")
    return float(value)


def _enum(cls: type[_E], data: Mapping[str, Any], key: str, where: str, default: _E) -> _E:
    value = data.get(key)
    if value is None:
        return default
    try:
        return cls(value)
    except ValueError:
        allowed = ", ".join(member.value for member in cls)
        raise PlanError(f"{where}.{key}: expected one of {allowed}, got {value!r}") from None


def _usage(value: object, where: str) -> dict[str, int]:
    if value is None:
        return _zero_usage()
    table = _table(value, where)
    unknown = sorted(set(table) - set(_USAGE_KEYS))
    if unknown:
        raise PlanError(f"{where}: unknown keys {unknown}; allowed: {list(_USAGE_KEYS)}")
    return {key: _count(table.get(key, 0), f"{where}.{key}") for key in _USAGE_KEYS}


@dataclass(slots=True)
class Subtask:
    """One piece of a plan: an objective given to one agent running on one engine."""

    id: str
    title: str
    objective: str
    agent_key: str
    engine: str
    parallel_group: int
    depends_on: list[str]
    tools: list[str] | None = None  # None: the agent's own tool set
    notes: str = ""
    files: list[str] = field(default_factory=list)  # project files it is about (the aider engine edits them)
    status: SubtaskStatus = SubtaskStatus.PENDING
    result_path: str | None = None
    error: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    usage: dict[str, int] = field(default_factory=_zero_usage)
    attempts: int = 0

    def __post_init__(self) -> None:
        _id(self.id, "subtask id")
        self.status = SubtaskStatus(self.status)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict, keys in field order."""
        return {
            "id": self.id,
            "title": self.title,
            "objective": self.objective,
            "agent_key": self.agent_key,
            "engine": self.engine,
            "parallel_group": self.parallel_group,
            "depends_on": list(self.depends_on),
            "tools": None if self.tools is None else list(self.tools),
            "notes": self.notes,
            "files": list(self.files),
            "status": str(self.status),
            "result_path": self.result_path,
            "error": self.error,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "usage": dict(self.usage),
            "attempts": self.attempts,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "subtask") -> Subtask:
        """Build from a dict; PlanError names the key that is wrong. Unknown keys are ignored."""
        data = _table(data, where)
        sid = _id(data.get("id"), f"{where}.id")
        where = f"{where} {sid}"
        group = data.get("parallel_group")
        if isinstance(group, bool) or not isinstance(group, int) or group < 1:
            raise PlanError(f"{where}.parallel_group: expected an integer >= 1, got {group!r}")
        depends_on = _str_list(data, "depends_on", where)
        for dep in depends_on:
            _id(dep, f"{where}.depends_on")
        return cls(
            id=sid,
            title=_text(data, "title", where, required=True),
            objective=_text(data, "objective", where, required=True),
            agent_key=_text(data, "agent_key", where, required=True),
            engine=_text(data, "engine", where, required=True),
            parallel_group=group,
            depends_on=depends_on,
            tools=None if data.get("tools") is None else _str_list(data, "tools", where),
            notes=_text(data, "notes", where),
            files=_str_list(data, "files", where) if data.get("files") is not None else [],
            status=_enum(SubtaskStatus, data, "status", where, SubtaskStatus.PENDING),
            result_path=_opt_text(data, "result_path", where),
            error=_opt_text(data, "error", where),
            started_at=_time(data, "started_at", where),
            finished_at=_time(data, "finished_at", where),
            usage=_usage(data.get("usage"), f"{where}.usage"),
            attempts=_count(data.get("attempts", 0), f"{where}.attempts"),
        )


@dataclass(slots=True)
class Plan:
    """A validated plan for one goal; ``id`` is the stem of the file it is saved in."""

    id: str
    goal: str
    subtasks: list[Subtask]
    merge_strategy: str
    status: PlanStatus = PlanStatus.PROPOSED
    # goal, created_at (ISO), planner_provider, planner_model, merge_result_path,
    # judge ({score, verdict, reasons}) or judge_error, replan_count, ...
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _id(self.id, "plan id")
        self.status = PlanStatus(self.status)

    def subtask(self, subtask_id: str) -> Subtask:
        for subtask in self.subtasks:
            if subtask.id == subtask_id:
                return subtask
        raise PlanError(f"plan {self.id} has no subtask {subtask_id!r}")

    def groups(self) -> list[tuple[int, list[Subtask]]]:
        """``(group number, its subtasks in plan order)`` in the order the groups run."""
        by_group: dict[int, list[Subtask]] = {}
        for subtask in self.subtasks:
            by_group.setdefault(subtask.parallel_group, []).append(subtask)
        return sorted(by_group.items())

    def counts(self) -> dict[str, int]:
        """Number of subtasks per status (every status present, zero when none)."""
        counts = dict.fromkeys((str(s) for s in SubtaskStatus), 0)
        for subtask in self.subtasks:
            counts[str(subtask.status)] += 1
        return counts

    def summary(self) -> dict[str, Any]:
        """The plan without its subtasks' details (lists, the dashboard)."""
        judge = self.metadata.get("judge")
        return {
            "id": self.id,
            "goal": self.goal,
            "status": str(self.status),
            "subtask_count": len(self.subtasks),
            "counts": self.counts(),
            "groups": [[s.id for s in members] for _group, members in self.groups()],
            "score": judge.get("score") if isinstance(judge, dict) else None,
            "created_at": self.metadata.get("created_at", ""),
        }

    def to_dict(self) -> dict[str, Any]:
        """The plan file's content (JSON-able; ``metadata.goal`` is always :attr:`goal`)."""
        metadata = {key: value for key, value in self.metadata.items() if key != "goal"}
        return {
            "id": self.id,
            "status": str(self.status),
            "subtasks": [s.to_dict() for s in self.subtasks],
            "merge": {"strategy": self.merge_strategy},
            "metadata": {"goal": self.goal, **copy.deepcopy(metadata)},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "plan") -> Plan:
        """Read a plan file's content back; PlanError names the key that is wrong."""
        data = _table(data, where)
        pid = _id(data.get("id"), f"{where}.id")
        where = f"{where} {pid}"
        metadata = _table(data.get("metadata"), f"{where}.metadata")
        goal = _text(metadata, "goal", f"{where}.metadata", required=True)
        merge = _table(data.get("merge"), f"{where}.merge")
        if not isinstance(merge.get("strategy"), str):
            raise PlanError(f"{where}.merge.strategy: expected a string, got {merge.get('strategy')!r}")
        raw = data.get("subtasks")
        if not isinstance(raw, list):
            raise PlanError(f"{where}.subtasks: expected a list, got {type(raw).__name__}")
        subtasks = [Subtask.from_dict(item, f"{where}.subtasks[{i}]") for i, item in enumerate(raw)]
        seen: set[str] = set()
        for subtask in subtasks:
            if subtask.id in seen:
                raise PlanError(f"{where}.subtasks: the id {subtask.id!r} is used twice")
            seen.add(subtask.id)
        return cls(
            id=pid,
            goal=goal,
            subtasks=subtasks,
            merge_strategy=merge["strategy"],
            status=_enum(PlanStatus, data, "status", where, PlanStatus.PROPOSED),
            metadata=copy.deepcopy(dict(metadata)),
        )


def plan_slug(goal: str) -> str:
    """Lowercase ASCII words of ``goal`` joined by '-', at most SLUG_MAX characters; never empty."""
    ascii_text = unicodedata.normalize("NFKD", goal).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    if len(slug) > SLUG_MAX:
        head = slug[:SLUG_MAX]
        # cut at the last whole word when there is one, rather than mid-word
        if slug[SLUG_MAX] != "-" and "-" in head:
            head = head.rsplit("-", 1)[0]
        slug = head.rstrip("-")
    return slug or "plan"


def plan_file_name(goal: str, now: datetime) -> str:
    """``20250118-142305_build-rest-api.json``: sortable by time, readable by goal."""
    return f"{now:%Y%m%d-%H%M%S}_{plan_slug(goal)}.json"
