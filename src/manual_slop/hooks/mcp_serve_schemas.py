"""JSON Schemas of the MCP-serving endpoints (:mod:`.mcp_serve_api`); part of ``hooks.schemas``
and so of the served OpenAPI document."""

from __future__ import annotations

from typing import Any

from manual_slop.hooks.schema_kit import STR as _STR
from manual_slop.hooks.schema_kit import obj as _obj

__all__ = ["REQUESTS", "RESPONSES"]

REQUESTS: dict[str, Any] = {
    "McpServeRequest": _obj(
        {},
        {
            "address": {
                "type": "string",
                "maxLength": 300,
                "description": "HOST:PORT (default mcp.serve_http, else 127.0.0.1:0: a free port)",
            }
        },
    ),
}

RESPONSES: dict[str, Any] = {
    "McpServe": _obj(
        {"running": {"type": "boolean"}, "url": {"type": "string", "description": "'' when not running"}},
        {"address": _STR, "error": _STR},
    ),
}
