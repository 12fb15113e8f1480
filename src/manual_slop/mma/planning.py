"""Tier 1 and Tier 2: epic → tracks, track → tickets, and replanning after failures.

Each planner asks its tier for one JSON object, finds it in the answer (inside a
markdown fence or surrounded by prose), and validates it completely — shape,
types, ids, dependencies, cycles — before anything is built. An invalid answer is
sent back once with the exact error; a second invalid answer raises
:class:`~manual_slop.mma.errors.PlanningError` and nothing is applied.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from manual_slop.mma.client import TierCaller
from manual_slop.mma.dag import TrackDAG
from manual_slop.mma.errors import DagError, PlanningError, TicketError
from manual_slop.mma.models import Priority, Ticket, Track
from manual_slop.mma.prompts import tier1_epic_prompt, tier2_replan_prompt, tier2_track_prompt
from manual_slop.mma.schemas import tickets_schema, tracks_schema

__all__ = [
    "MAX_REPLANS",
    "find_json_object",
    "new_track_id",
    "parse_tickets",
    "parse_tracks",
    "plan_epic",
    "plan_track",
    "replan_track",
]

MAX_REPLANS = 3  # per track
_T = TypeVar("_T")
_TICKET_KEYS = {"id", "description", "depends_on", "priority", "target_files", "model_override", "critical"}


def find_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text`` (fenced or in prose); ValueError says why there is none."""
    decoder = json.JSONDecoder()
    fenced = re.findall(r"```(?:json)?\s*\n(.*?)```", text, re.DOTALL)
    first_error = ""
    for candidate in [*fenced, text]:
        for match in re.finditer(r"\{", candidate):
            try:
                value, _ = decoder.raw_decode(candidate, match.start())
            except json.JSONDecodeError as exc:
                first_error = first_error or f"{exc.msg} at line {exc.lineno} column {exc.colno}"
                continue
            if isinstance(value, dict):
                return value
    if first_error:
        raise ValueError(f"no valid JSON object found (first attempt failed: {first_error})")
    raise ValueError("no JSON object found in the answer")


def _priority(value: object, where: str) -> Priority:
    if value is None:
        return Priority.MEDIUM
    try:
        return Priority(value)
    except ValueError:
        raise ValueError(f"{where}.priority: expected 'high', 'medium' or 'low', got {value!r}") from None


def new_track_id(title: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", title.lower()).strip("_")[:40] or "track"
    return f"{slug}_{secrets.token_hex(3)}"


def _objects(data: Mapping[str, Any], key: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """``(where, item)`` for each object of the non-empty list ``data[key]``; ValueError otherwise."""
    raw = data.get(key)
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"'{key}' must be a non-empty list")
    for index, item in enumerate(raw):
        where = f"{key}[{index}]"
        if not isinstance(item, Mapping):
            raise ValueError(f"{where}: expected an object, got {type(item).__name__}")
        yield where, item


def parse_tracks(data: Mapping[str, Any]) -> list[Track]:
    """Tracks from ``{"tracks": [{"title", "description", "priority"}]}``; ValueError names the problem."""
    tracks: list[Track] = []
    for where, item in _objects(data, "tracks"):
        title, description = item.get("title"), item.get("description")
        if not isinstance(title, str) or not title.strip():
            raise ValueError(f"{where}.title: expected a non-empty string")
        if not isinstance(description, str):
            raise ValueError(f"{where}.description: expected a string")
        if any(t.title.casefold() == title.strip().casefold() for t in tracks):
            continue  # the same track twice (small models repeat themselves): planned once
        tracks.append(
            Track(
                id=new_track_id(title),
                title=title.strip(),
                description=description,
                priority=_priority(item.get("priority"), where),
            )
        )
    return tracks


def parse_tickets(data: Mapping[str, Any], known_done: Iterable[str] = ()) -> list[Ticket]:
    """Validated tickets from ``{"tickets": [...]}``: shape, ids, dependencies and cycles."""
    tickets = []
    for where, item in _objects(data, "tickets"):
        unknown = set(item) - _TICKET_KEYS
        if unknown:
            raise ValueError(f"{where}: unknown keys {sorted(unknown)}; allowed: {sorted(_TICKET_KEYS)}")
        for key in ("id", "description", "depends_on"):
            if key not in item:
                raise ValueError(f"{where}: missing key {key!r}")
        record = dict(item)
        record["priority"] = str(_priority(item.get("priority"), where))
        try:
            tickets.append(Ticket.from_dict(record, where))
        except TicketError as exc:
            raise ValueError(str(exc)) from exc
    known = set(known_done)
    clashes = sorted(t.id for t in tickets if t.id in known)
    if clashes:
        raise ValueError(f"ticket ids already used by completed or running tickets: {', '.join(clashes)}")
    try:
        TrackDAG(tickets).validate(known)
    except DagError as exc:
        raise ValueError(str(exc)) from exc
    return tickets


def _ask(
    caller: TierCaller,
    tier: str,
    md_content: str,
    message: str,
    parse: Callable[[dict[str, Any]], _T],
    *,
    model: str,
    abort: threading.Event | None,
    schema: dict[str, Any],
) -> _T:
    answer = caller.call(tier, md_content, message, model=model, abort=abort, answer_schema=schema)
    try:
        return parse(find_json_object(answer))
    except ValueError as exc:
        first = str(exc)
    correction = (
        f"{message}\n\nYour previous answer was invalid: {first}\n"
        f"Previous answer:\n{answer[:4000]}\n\nAnswer again with only the corrected JSON object."
    )
    answer = caller.call(tier, md_content, correction, model=model, abort=abort, answer_schema=schema)
    try:
        return parse(find_json_object(answer))
    except ValueError as exc:
        raise PlanningError(f"{tier} gave an invalid plan twice: first {first}; then {exc}") from exc


def plan_epic(
    caller: TierCaller,
    epic: str,
    *,
    context_md: str = "",
    model: str = "",
    abort: threading.Event | None = None,
) -> list[Track]:
    """Tier 1: the tracks of an epic."""
    if not epic.strip():
        raise PlanningError("the epic is empty")
    return _ask(
        caller,
        "Tier 1",
        context_md,
        tier1_epic_prompt(epic),
        parse_tracks,
        model=model,
        abort=abort,
        schema=tracks_schema(),
    )


def plan_track(
    caller: TierCaller,
    track: Track,
    *,
    context_md: str = "",
    model: str = "",
    abort: threading.Event | None = None,
) -> list[Ticket]:
    """Tier 2: the validated ticket DAG of a track."""
    return _ask(
        caller,
        "Tier 2",
        context_md,
        tier2_track_prompt(track),
        parse_tickets,
        model=model,
        abort=abort,
        schema=tickets_schema(),
    )


def replan_track(
    caller: TierCaller,
    track: Track,
    failed: Ticket,
    error: str,
    remaining: Sequence[Ticket],
    kept_ids: Iterable[str],
    *,
    context_md: str = "",
    model: str = "",
    abort: threading.Event | None = None,
) -> list[Ticket]:
    """Tier 2: new tickets replacing ``remaining`` after ``failed``; may depend on ``kept_ids``."""
    kept = set(kept_ids)
    return _ask(
        caller,
        "Tier 2",
        context_md,
        tier2_replan_prompt(track, failed, error, remaining),
        lambda data: parse_tickets(data, kept),
        model=model,
        abort=abort,
        schema=tickets_schema(taken=[t.id for t in track.tickets], kept=kept),
    )
