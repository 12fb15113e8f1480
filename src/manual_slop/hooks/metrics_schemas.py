"""JSON Schema of the run metrics in ``GET /api/diagnostics`` (its ``metrics`` key, from
:mod:`manual_slop.governance.metrics`); part of ``hooks.schemas`` and so of the served OpenAPI
document."""

from __future__ import annotations

from typing import Any

from manual_slop.hooks.schema_kit import STR as _STR
from manual_slop.hooks.schema_kit import obj as _obj

__all__ = ["METRICS"]

_COUNT = {"type": "integer", "minimum": 0}
_COUNTS = {"type": "object", "additionalProperties": _COUNT}
_RATE = {"type": "number", "minimum": 0, "maximum": 1}
_MS = {"type": ["number", "null"], "minimum": 0, "description": "null before the first sample"}
_LATENCY = {"p50_ms": _MS, "p95_ms": _MS, "samples": _COUNT}

METRICS: dict[str, Any] = _obj(
    {
        "since": {"type": "number", "description": "when counting started (epoch seconds)"},
        "window": {"type": "integer", "description": "latencies kept per provider and per tool"},
        "providers": {
            "type": "array",
            "items": _obj(
                {
                    "provider": _STR,
                    "model": _STR,
                    "requests": _COUNT,
                    "ok": _COUNT,
                    "failures": _COUNT,
                    "failure_rate": _RATE,
                    "failures_by_kind": _COUNTS,
                    **_LATENCY,
                }
            ),
        },
        "tools": {
            "type": "array",
            "items": _obj(
                {
                    "tool": _STR,
                    "calls": _COUNT,
                    "errors": _COUNT,
                    "failure_rate": _RATE,
                    "by_status": _COUNTS,
                    "guard_trips": _COUNT,
                    **_LATENCY,
                }
            ),
        },
        "guard_trips": _obj({"total": _COUNT, "by_kind": _COUNTS}),
    }
)
