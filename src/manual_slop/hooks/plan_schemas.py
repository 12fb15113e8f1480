"""JSON Schemas of the plan endpoints' bodies (:mod:`.plan_api`); part of ``hooks.schemas``
and so of the served OpenAPI document."""

from __future__ import annotations

from typing import Any

from manual_slop.hooks.schema_kit import INT as _INT
from manual_slop.hooks.schema_kit import OBJECT as _OBJECT
from manual_slop.hooks.schema_kit import STR as _STR
from manual_slop.hooks.schema_kit import obj as _obj
from manual_slop.mma.models import ID_PATTERN
from manual_slop.plan.runtime import MAX_GOAL_CHARS

__all__ = ["REQUESTS", "RESPONSES"]

_IDS = {"type": "array", "items": {"type": "string", "pattern": f"^{ID_PATTERN}$"}, "maxItems": 500}
_NULLABLE_NUM = {"type": ["number", "null"]}
_SUMMARY = _obj(
    {
        "id": _STR,
        "goal": _STR,
        "status": _STR,
        "subtask_count": _INT,
        "counts": {"type": "object", "additionalProperties": _INT},
        "groups": {"type": "array", "items": {"type": "array", "items": _STR}},
        "score": _NULLABLE_NUM,
        "created_at": _STR,
    }
)

REQUESTS: dict[str, Any] = {
    "PlanRequest": _obj({"goal": {"type": "string", "minLength": 1, "maxLength": MAX_GOAL_CHARS}}),
    "DependsOnRequest": {
        **_obj(
            {},
            {
                "depends_on": _IDS,
                "add": _IDS,
                "remove": _IDS,
                "track_id": {"type": "string", "pattern": f"^{ID_PATTERN}$"},
            },
        ),
        # either the whole list or add/remove
        "x-error": "give either depends_on (the whole list) or add and/or remove, not both",
        "oneOf": [
            {"required": ["depends_on"], "not": {"anyOf": [{"required": ["add"]}, {"required": ["remove"]}]}},
            {"anyOf": [{"required": ["add"]}, {"required": ["remove"]}], "not": {"required": ["depends_on"]}},
        ],
    },
}

RESPONSES: dict[str, Any] = {
    "PlanStarted": _obj({"plan_id": _STR}),
    "PlanList": _obj({"plans": {"type": "array", "items": _SUMMARY}}),
    "PlanFile": _obj(
        {
            "plan": _obj(
                {
                    "id": _STR,
                    "status": _STR,
                    "subtasks": {"type": "array", "items": _OBJECT},
                    "merge": _OBJECT,
                    "metadata": _OBJECT,
                },
                {"merge_result": _STR},
            )
        }
    ),
    "TicketEdited": _obj({"track_id": _STR, "ticket": _OBJECT}),
}
