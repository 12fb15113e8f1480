"""The JSON schemas of Tier 1 and Tier 2 answers, for models whose output can be held to one.

The prompts (:mod:`manual_slop.mma.prompts`) describe the same shapes in words; a provider
that can constrain its output (the local model, through a grammar: :mod:`manual_slop.ai.grammar`)
is also given these, so its answer is valid by construction. They are stricter than the
parsers, never looser: what they allow, :func:`~manual_slop.mma.planning.parse_tracks` and
:func:`~manual_slop.mma.planning.parse_tickets` accept.

The tickets schema also makes the plan a DAG by construction: the i-th ticket's id is fixed
(``T<i>``, skipping ids already taken) and it may depend only on earlier tickets and on the
ids the replan keeps. Strings have bounds: a small model loops inside an unbounded one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["MAX_TICKETS", "MAX_TRACKS", "tickets_schema", "tracks_schema"]

MAX_TRACKS = 3
MAX_TICKETS = 5
_PRIORITY = {"enum": ["high", "medium", "low"]}
_PATH = {"type": "string", "pattern": r"^[A-Za-z0-9_][A-Za-z0-9_./-]*$", "maxLength": 120}


def _text(low: int, high: int) -> dict[str, Any]:
    return {"type": "string", "minLength": low, "maxLength": high}


def tracks_schema(max_tracks: int = MAX_TRACKS) -> dict[str, Any]:
    """``{"tracks": [{title, description, priority}]}`` with 1..``max_tracks`` tracks."""
    track = {
        "type": "object",
        "properties": {"title": _text(3, 80), "description": _text(10, 400), "priority": _PRIORITY},
        "required": ["title", "description", "priority"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"tracks": {"type": "array", "items": track, "minItems": 1, "maxItems": max_tracks}},
        "required": ["tracks"],
        "additionalProperties": False,
    }


def tickets_schema(
    max_tickets: int = MAX_TICKETS, taken: Iterable[str] = (), kept: Iterable[str] = ()
) -> dict[str, Any]:
    """``{"tickets": [...]}``: 1..``max_tickets`` tickets with fixed ids (none of ``taken``), each
    depending only on earlier ones and on ``kept`` ids."""
    used = set(taken)
    kept_ids = sorted(set(kept))
    ids: list[str] = []
    number = 1
    while len(ids) < max_tickets:
        if f"T{number}" not in used:
            ids.append(f"T{number}")
        number += 1
    items = []
    for index, ticket_id in enumerate(ids):
        allowed = kept_ids + ids[:index]
        depends_on: dict[str, Any] = (
            {"type": "array", "items": {"enum": allowed}, "maxItems": min(3, len(allowed))}
            if allowed
            else {"type": "array", "maxItems": 0}
        )
        items.append(
            {
                "type": "object",
                "properties": {
                    "id": {"const": ticket_id},
                    "description": _text(10, 400),
                    "depends_on": depends_on,
                    "priority": _PRIORITY,
                    "target_files": {"type": "array", "items": _PATH, "maxItems": 3},
                },
                "required": ["id", "description", "depends_on", "priority", "target_files"],
                "additionalProperties": False,
            }
        )
    tickets = {"type": "array", "prefixItems": items, "minItems": 1, "maxItems": max_tickets}
    return {
        "type": "object",
        "properties": {"tickets": tickets},
        "required": ["tickets"],
        "additionalProperties": False,
    }
