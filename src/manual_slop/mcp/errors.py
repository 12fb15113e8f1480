"""Why an external MCP server could not serve a call. The SDK's own exceptions (``MCPError``,
transport errors) are translated into these at :mod:`~manual_slop.mcp.client`'s boundary::

    McpClientError
    ├── ServerUnavailable   disabled, failed to start, or not running within the wait
    ├── ServerExited        the process died (or the connection closed) while a call ran
    └── CallTimedOut        the call did not answer within its timeout (it was cancelled)
"""

from __future__ import annotations

__all__ = ["CallTimedOut", "McpClientError", "ServerExited", "ServerUnavailable"]


class McpClientError(Exception):
    """Base of every error of an external MCP server; the message names server and tool."""


class ServerUnavailable(McpClientError):
    """The server is disabled, failed to start or is not running (yet)."""


class ServerExited(McpClientError):
    """The server's process ended, or its connection closed, while a call was running."""


class CallTimedOut(McpClientError):
    """A call took longer than the server's ``timeout_s``."""
