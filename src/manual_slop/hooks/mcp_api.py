"""The Hook API's external MCP server endpoints: list the servers, restart, enable or disable one.

Each runs on the main thread through the controller's ``McpBinding`` (the same code as the MCP
panel's buttons and the ``btn_mcp_*`` actions). A restart, enable or disable is started, not
awaited: the reply shows the server as it is now; ``GET /api/mcp/servers`` follows its state
(``starting``, then ``running`` or ``failed`` with ``last_error``). Schemas: :mod:`.mcp_schemas`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from manual_slop.automation import AutomationError
from manual_slop.hooks.errors import Conflict, NotFound
from manual_slop.hooks.routes import Call, Route

if TYPE_CHECKING:
    from manual_slop.controller import AppController
    from manual_slop.mcp.bindings import McpBinding

__all__ = ["mcp_routes"]


class McpApi:
    """Handlers bound to one controller."""

    def __init__(self, ctrl: AppController, on_main: Callable[[Callable[[], Any]], Any]) -> None:
        self.ctrl = ctrl
        self.on_main = on_main

    def _binding(self) -> McpBinding:
        binding = getattr(self.ctrl, "mcp", None)
        if binding is None:
            raise Conflict("external MCP servers are not available in this app")
        return binding

    def servers(self, call: Call) -> dict[str, Any]:
        binding = self._binding()

        def read() -> dict[str, Any]:
            binding.refresh()
            return {"servers": binding.servers(), "problems": list(binding.view["problems"])}

        return self.on_main(read)

    def _change(self, call: Call, change: Callable[[McpBinding, str], None]) -> dict[str, Any]:
        binding, name = self._binding(), call.params["name"]

        def apply() -> dict[str, Any] | None:
            if name not in binding.configs:
                return None
            change(binding, name)
            binding.refresh()
            return next(s for s in binding.servers() if s["name"] == name)

        try:
            server = self.on_main(apply)
        except AutomationError as exc:  # e.g. restarting a disabled server
            raise Conflict(str(exc)) from None
        if server is None:
            raise NotFound(f"no MCP server {name[:70]!r}; GET /api/mcp/servers lists them")
        return {"server": server}

    def restart(self, call: Call) -> dict[str, Any]:
        return self._change(call, lambda binding, name: binding.restart(name))

    def enable(self, call: Call) -> dict[str, Any]:
        return self._change(call, lambda binding, name: binding.set_enabled(name, True))

    def disable(self, call: Call) -> dict[str, Any]:
        return self._change(call, lambda binding, name: binding.set_enabled(name, False))


def mcp_routes(ctrl: AppController, on_main: Callable[[Callable[[], Any]], Any]) -> tuple[Route, ...]:
    api = McpApi(ctrl, on_main)
    return (
        Route("GET", "/api/mcp/servers", "getMcpServers",
              "External MCP servers: state, pid, tools, last error; entries left out with the reason",
              api.servers, "McpServers", errors=(408, 409)),
        Route("POST", "/api/mcp/servers/{name}/restart", "restartMcpServer",
              "Restart an external MCP server (a failed one is tried again)",
              api.restart, "McpServer", errors=(404, 408, 409)),
        Route("POST", "/api/mcp/servers/{name}/enable", "enableMcpServer",
              "Enable an external MCP server (saved); it starts with the next send",
              api.enable, "McpServer", errors=(404, 408, 409)),
        Route("POST", "/api/mcp/servers/{name}/disable", "disableMcpServer",
              "Disable an external MCP server (saved): stopped, its tools withdrawn",
              api.disable, "McpServer", errors=(404, 408, 409)),
    )  # fmt: skip
