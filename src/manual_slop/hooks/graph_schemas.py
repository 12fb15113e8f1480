"""JSON Schema of the graph endpoint's reply (:mod:`.graph_api`); part of ``hooks.schemas`` and
so of the served OpenAPI document."""

from __future__ import annotations

from typing import Any

from manual_slop.hooks.schema_kit import OBJECT as _OBJECT
from manual_slop.hooks.schema_kit import STR as _STR
from manual_slop.hooks.schema_kit import obj as _obj
from manual_slop.mma.models import TicketStatus

__all__ = ["GRAPH_FORMATS", "RESPONSES"]

GRAPH_FORMATS: tuple[str, ...] = ("json", "mermaid")

_STRS = {"type": "array", "items": _STR}
_NODE = _obj(
    {
        "id": _STR,
        "node": {"type": "string", "description": "the node's id in the Mermaid text"},
        "title": _STR,
        "status": {
            "enum": [*(str(s) for s in TicketStatus), None],
            "description": "null: a dependency outside the track",
        },
        "depends_on": _STRS,
    }
)

RESPONSES: dict[str, Any] = {
    "MmaGraph": _obj(
        {"track": _OBJECT, "format": {"enum": list(GRAPH_FORMATS)}},
        {
            "nodes": {"type": "array", "items": _NODE},
            "edges": {"type": "array", "items": _obj({"from": _STR, "to": _STR})},
            "mermaid": {"type": "string", "description": "a Mermaid flowchart (format=mermaid)"},
        },
    ),
}
