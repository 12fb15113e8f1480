"""JSON Schemas of the external MCP server endpoints' replies (:mod:`.mcp_api`); part of
``hooks.schemas`` and so of the served OpenAPI document. No env or header value is ever in a
reply: only their names (``env_keys``, ``header_keys``)."""

from __future__ import annotations

from typing import Any

from manual_slop.hooks.schema_kit import INT as _INT
from manual_slop.hooks.schema_kit import NUM as _NUM
from manual_slop.hooks.schema_kit import STR as _STR
from manual_slop.hooks.schema_kit import obj as _obj

__all__ = ["REQUESTS", "RESPONSES"]

_STRINGS = {"type": "array", "items": _STR}
_TOOL = _obj(
    {
        "name": {**_STR, "description": "the name in our registry: <server>__<tool>"},
        "tool": {**_STR, "description": "the server's own name of the tool"},
        "asks": {"type": "boolean", "description": "a call waits in the Execution Clutch"},
    }
)
_SERVER = _obj(
    {
        "name": _STR,
        "transport": {"enum": ["stdio", "http"]},
        "target": {**_STR, "description": "the command line or the URL"},
        "env_keys": _STRINGS,
        "header_keys": _STRINGS,
        "enabled": {"type": "boolean"},
        "trust": {"enum": ["ask", "read_only_auto"]},
        "tools_allow": _STRINGS,
        "tools_deny": _STRINGS,
        "timeout_s": _NUM,
        "scope": {"enum": ["global", "project"]},
        "state": {"enum": ["stopped", "starting", "running", "failed"]},
        "pid": {"type": ["integer", "null"]},
        "last_error": _STR,
        "restarts": _INT,
        "listed": {"type": "boolean", "description": "its tools were listed at least once"},
        "tools": {"type": "array", "items": _TOOL},
        "problems": {**_STRINGS, "description": "tools that could not be offered, and why"},
    }
)

REQUESTS: dict[str, Any] = {}

RESPONSES: dict[str, Any] = {
    "McpServers": _obj(
        {
            "servers": {"type": "array", "items": _SERVER},
            "problems": {**_STRINGS, "description": "[mcp.servers] entries left out, and why"},
        }
    ),
    "McpServer": _obj({"server": _SERVER}),
}
