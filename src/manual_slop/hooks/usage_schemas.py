"""JSON Schema of ``GET /api/usage`` (:mod:`.usage_api`); part of ``hooks.schemas`` and so of the
served OpenAPI document."""

from __future__ import annotations

from typing import Any

from manual_slop.hooks.schema_kit import STR as _STR
from manual_slop.hooks.schema_kit import obj as _obj
from manual_slop.usage.ledger import DIMENSIONS

__all__ = ["RESPONSES", "TALLY"]

_COUNT = {"type": "integer", "minimum": 0}
TALLY: dict[str, Any] = _obj(
    {
        "calls": _COUNT,
        "input_tokens": _COUNT,
        "output_tokens": _COUNT,
        "cache_read_tokens": _COUNT,
        "cache_write_tokens": _COUNT,
        "usd": {
            "type": ["number", "null"],
            "description": "dollars of the calls with a known price; null when no call's price is known",
        },
        "unknown_calls": {**_COUNT, "description": "calls at unknown price (not in usd)"},
    }
)
_ROWS = {"type": "object", "additionalProperties": TALLY}

RESPONSES: dict[str, Any] = {
    "Usage": _obj(
        {
            "total": TALLY,
            **{f"by_{name}": _ROWS for name in DIMENSIONS},
            "track": {**_STR, "description": "the track whose MMA calls are counted now ('' = none)"},
            "price_overrides": {"type": "array", "items": _STR},
            "budget_usd": {"type": "number", "minimum": 0},
            "track_budget_usd": {"type": "number", "minimum": 0},
        }
    ),
}
