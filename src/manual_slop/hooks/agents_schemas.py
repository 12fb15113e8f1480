"""JSON Schemas of the agent endpoints' bodies (:mod:`.agents_api`); part of ``hooks.schemas``
and so of the served OpenAPI document."""

from __future__ import annotations

from typing import Any

from manual_slop.agents.profiles import MAX_FILE_BYTES, SCOPES
from manual_slop.hooks.schema_kit import STR as _STR
from manual_slop.hooks.schema_kit import obj as _obj
from manual_slop.token_profiles import PROFILES

__all__ = ["REQUESTS", "RESPONSES"]

_NULLABLE = {"type": ["string", "null"]}
_STRINGS = {"type": "array", "items": {"type": "string", "maxLength": 200}, "maxItems": 500}
_SUMMARY = _obj(
    {
        "key": _STR,
        "description": _STR,
        "scope": {"enum": list(SCOPES)},
        "provider": _NULLABLE,
        "model": _NULLABLE,
        "tools": {"type": ["array", "null"], "items": _STR},
        "token_profile": _NULLABLE,
        "memory_categories": {"type": "array", "items": _STR},
        "workspace_slug": _STR,
    }
)
_PROBLEM = _obj({"key": _STR, "scope": {"enum": list(SCOPES)}, "path": _STR, "reason": _STR})

REQUESTS: dict[str, Any] = {
    "AgentRequest": _obj(
        {"system_prompt": {"type": "string", "minLength": 1, "maxLength": MAX_FILE_BYTES}},
        {
            "description": {"type": "string", "maxLength": 2000},
            "memory_categories": _STRINGS,
            "workspace_slug": {"type": "string", "maxLength": 200},
            "provider": {"type": "string", "maxLength": 64},
            "model": {"type": "string", "maxLength": 200},
            "tools": {**_STRINGS, "type": ["array", "null"]},
            "token_profile": {"enum": ["", *PROFILES]},
            "scope": {"enum": list(SCOPES)},
        },
    ),
}

RESPONSES: dict[str, Any] = {
    "AgentList": _obj(
        {
            "agents": {"type": "array", "items": _SUMMARY},
            "problems": {"type": "array", "items": _PROBLEM},
            "active": _STR,
        }
    ),
    "Agent": _obj({"agent": _obj({**_SUMMARY["properties"], "system_prompt": _STR, "path": _STR})}),
    "AgentDeleted": _obj({"deleted": _STR, "moved_to": _STR}),
}
