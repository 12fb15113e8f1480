"""JSON Schemas of the run log endpoints' replies (:mod:`.runs_api`); part of ``hooks.schemas``
and so of the served OpenAPI document."""

from __future__ import annotations

from typing import Any

from manual_slop.governance.run_log import RUN_ID, RecordType, RunKind, RunOutcome
from manual_slop.hooks.schema_kit import ANY as _ANY
from manual_slop.hooks.schema_kit import INT as _INT
from manual_slop.hooks.schema_kit import NUM as _NUM
from manual_slop.hooks.schema_kit import STR as _STR
from manual_slop.hooks.schema_kit import obj as _obj

__all__ = ["REQUESTS", "RESPONSES"]

_RUN_ID = {"type": "string", "pattern": f"^{RUN_ID.pattern}$"}
_RECORD = _obj(
    {"type": {"enum": [str(t) for t in RecordType]}, "seq": _INT, "ts": _NUM, "run_id": _RUN_ID},
    closed=False,
)
_SUMMARY = _obj(
    {
        "id": _RUN_ID,
        "kind": {"enum": [str(k) for k in RunKind]},
        "started": _NUM,
        "ended": {"type": ["number", "null"]},
        "outcome": {"enum": [*(str(o) for o in RunOutcome), None]},
        "error_kind": _STR,
        "conversation": _STR,
        "ticket": _STR,
        "tier": _STR,
        "provider": _STR,
        "model": _STR,
        "requests": _INT,
        "tool_calls": _INT,
        "decisions": _INT,
        "bytes": _INT,
        "truncated": {"type": "boolean"},
    }
)
_SECTION = _obj({"name": _STR, "text": _STR, "tokens": _INT})

REQUESTS: dict[str, Any] = {}

RESPONSES: dict[str, Any] = {
    "RunList": _obj({"session": _STR, "runs": {"type": "array", "items": _SUMMARY}}),
    "RunPage": _obj(
        {
            "run": _SUMMARY,
            "records": {"type": "array", "items": _RECORD},
            "offset": _INT,
            "next": {"type": ["integer", "null"], "description": "offset of the next page; null at the end"},
            "total": _INT,
        }
    ),
    "RunRequest": _obj(
        {
            "run_id": _RUN_ID,
            "n": _INT,
            "round": _INT,
            "tool_choice": _STR,
            "answer_schema": _ANY,
            "sections": {"type": "array", "items": _SECTION},
            "tokens": {"type": "integer", "description": "estimated tokens of the whole request"},
            "response": {"oneOf": [_RECORD, {"type": "null"}]},
            "failures": {"type": "array", "items": _RECORD},
        }
    ),
}
