"""The Hook API's endpoints for the app's own MCP server (:mod:`manual_slop.mcp.serve_binding`):
read its state, start it at an address, stop it. Starting and stopping block this request's
thread (never the main thread) until the server listens or has stopped. Schemas are in
:mod:`.mcp_serve_schemas`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from manual_slop.hooks.errors import BadRequest, Conflict
from manual_slop.hooks.routes import Call, Route

if TYPE_CHECKING:
    from manual_slop.controller import AppController
    from manual_slop.mcp.serve_binding import McpServeBinding

__all__ = ["mcp_serve_routes"]


class McpServeApi:
    def __init__(self, ctrl: AppController) -> None:
        self.ctrl = ctrl

    def _binding(self) -> McpServeBinding:
        binding = getattr(self.ctrl, "mcp_serve", None)
        if binding is None:
            raise Conflict("MCP serving is not available in this app")
        return binding

    def status(self, call: Call) -> dict[str, Any]:
        return self._binding().status()

    def start(self, call: Call) -> dict[str, Any]:
        from manual_slop.mcp.transports import McpStartError

        address = str(call.body.get("address") or self.ctrl.setting("mcp.serve_http") or "127.0.0.1:0")
        try:
            return self._binding().start(address)
        except ValueError as exc:
            raise BadRequest(f"body.address: {exc}") from None
        except McpStartError as exc:
            raise Conflict(str(exc)) from None

    def stop(self, call: Call) -> dict[str, Any]:
        return self._binding().stop()


def mcp_serve_routes(ctrl: AppController, on_main: Callable[[Callable[[], Any]], Any]) -> tuple[Route, ...]:
    api = McpServeApi(ctrl)
    return (
        Route("GET", "/api/mcp/serve", "getMcpServe", "The app's own MCP server: running and its URL",
              api.status, "McpServe"),
        Route("POST", "/api/mcp/serve", "startMcpServe",
              "Serve the app's tools over MCP (streamable HTTP) at an address; the token is this API's",
              api.start, "McpServe", request="McpServeRequest", errors=(409,)),
        Route("DELETE", "/api/mcp/serve", "stopMcpServe", "Stop the app's MCP server", api.stop, "McpServe"),
    )  # fmt: skip
