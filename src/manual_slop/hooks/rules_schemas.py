"""JSON Schemas of the approval-rule endpoints' bodies (:mod:`.rules_api`); part of
``hooks.schemas`` and so of the served OpenAPI document. A rule's keys are checked by the rule
engine (:mod:`manual_slop.governance.rules`), which names every problem; the request schema
only asks for a list of objects."""

from __future__ import annotations

from typing import Any

from manual_slop.governance.rules import MAX_RULES, Action, ApprovalPolicy, OnTimeout, Trigger
from manual_slop.hooks.schema_kit import INT as _INT
from manual_slop.hooks.schema_kit import NUM as _NUM
from manual_slop.hooks.schema_kit import STR as _STR
from manual_slop.hooks.schema_kit import obj as _obj

__all__ = ["REQUESTS", "RESPONSES"]

_STRINGS = {"type": "array", "items": _STR}
_RULE = _obj(
    {"name": _STR, "trigger": {"enum": list(Trigger)}, "action": {"enum": list(Action)}, "priority": _INT},
    {
        "tool": _STR,
        "path_glob": _STR,
        "pattern": _STR,
        "threshold_usd": _NUM,
        "timeout_s": _NUM,
        "on_timeout": {"enum": list(OnTimeout)},
    },
)
_PROBLEM = _obj({"index": _INT, "name": _STR, "key": _STR, "message": _STR})
_BUILTIN = _obj(
    {
        "name": _STR,
        "action": {"enum": list(Action)},
        "triggers": _STRINGS,
        "policies": _STRINGS,
        "meaning": _STR,
    }
)

REQUESTS: dict[str, Any] = {
    "ApprovalRulesRequest": _obj(
        {
            "rules": {
                "type": "array",
                "maxItems": MAX_RULES,
                "items": {"type": "object"},
                "description": "the whole list, in order; each {name, trigger, action, priority?, tool?, "
                "path_glob?, pattern?, threshold_usd?, timeout_s?, on_timeout?} (or a first-format "
                "allow-list rule {tool, pattern?, path_glob?})",
            }
        }
    ),
}

RESPONSES: dict[str, Any] = {
    "ApprovalRules": _obj(
        {
            "policy": {"enum": list(ApprovalPolicy)},
            "rules": {"type": "array", "items": _RULE},
            "inactive": {**_STRINGS, "description": "names of rules the policy leaves out"},
            "problems": {"type": "array", "items": _PROBLEM},
            "defaults": {"type": "array", "items": _BUILTIN},
        }
    ),
}
