"""JSON Schemas of the skill endpoints' bodies (:mod:`.skills_api`); part of ``hooks.schemas``
and so of the served OpenAPI document."""

from __future__ import annotations

from typing import Any

from manual_slop.hooks.schema_kit import STR as _STR
from manual_slop.hooks.schema_kit import obj as _obj
from manual_slop.skills.loader import SCOPES, ProblemKind

__all__ = ["REQUESTS", "RESPONSES"]

_SKILL = _obj(
    {
        "name": _STR,
        "description": _STR,
        "scope": {"enum": list(SCOPES)},
        "path": _STR,
        "files": {"type": "array", "items": _STR},
        "enabled": {"type": "boolean"},
    }
)
_PROBLEM = _obj(
    {
        "name": _STR,
        "scope": {"enum": list(SCOPES)},
        "path": _STR,
        "kind": {"enum": [str(kind) for kind in ProblemKind]},
        "reason": _STR,
    }
)

REQUESTS: dict[str, Any] = {
    "SkillSwitch": _obj({"enabled": {"type": "boolean"}}),
}

RESPONSES: dict[str, Any] = {
    "SkillList": _obj(
        {"skills": {"type": "array", "items": _SKILL}, "problems": {"type": "array", "items": _PROBLEM}}
    ),
    "SkillSwitched": _obj({"skill": _SKILL}),
}
