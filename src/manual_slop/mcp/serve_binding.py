"""MCP served from the running app, so external clients share its clutch: the dialog a client's
mutating call raises is the one the window (or ``/api/pending``) shows.

``ctrl.mcp_serve`` is an :class:`McpServeBinding`. It starts the streamable-HTTP server when
``mcp.serve_http`` (config.toml, ``HOST:PORT``) is set, and on ``btn_mcp_serve_start``
``{address}`` / ``btn_mcp_serve_stop`` (the MCP panel, ``/api/gui``) or
``POST``/``DELETE /api/mcp/serve``. The bearer token is the Hook API's. The server is stopped
at shutdown. Starting takes a moment, so it runs on a short-lived thread; the field
``mcp_serve`` (``{running, url, address, error}``) is written on the main thread only.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from manual_slop.automation import ActionCall, InvalidValue
from manual_slop.schema import Field

if TYPE_CHECKING:
    from manual_slop.controller import AppController
    from manual_slop.mcp.transports import HttpMcpServer

__all__ = ["McpServeBinding", "register"]

log = logging.getLogger(__name__)

TASK = "mcp_serve_changed"


class McpServeBinding:
    """One optional HTTP MCP server for this app."""

    def __init__(self, ctrl: AppController) -> None:
        self.ctrl = ctrl
        self._lock = threading.Lock()  # one start/stop at a time
        self._http: HttpMcpServer | None = None
        self.view: dict[str, Any] = {"running": False, "url": "", "address": "", "error": ""}  # main thread

    def start(self, address: str) -> dict[str, Any]:
        """Serve at ``address`` (``HOST:PORT``), replacing a server already running; blocking,
        never on the main thread. Raises ValueError (bad address, refused binding) or
        McpStartError (cannot listen)."""
        from manual_slop.mcp.server import build_server
        from manual_slop.mcp.transports import HttpMcpServer, http_binding_refusal, parse_address

        host, port = parse_address(address)
        auth = self.ctrl.hook_auth
        refusal = http_binding_refusal(host, auth.token, auth.configured)
        if refusal is not None:
            raise ValueError(refusal)
        with self._lock:
            self._stop_locked()
            try:
                allowed = tuple(self.ctrl.setting("hook.allowed_hosts") or ())
                http = HttpMcpServer(build_server(self.ctrl), host, port, auth.token, allowed_hosts=allowed)
                self._http = http.start()
            except Exception as exc:
                self._publish({"running": False, "url": "", "address": address, "error": str(exc)})
                raise
            status = {"running": True, "url": http.url, "address": address, "error": ""}
        self._publish(status)
        return status

    def stop(self) -> dict[str, Any]:
        """Stop serving (nothing to do when not running); blocking, never on the main thread."""
        with self._lock:
            self._stop_locked()
        status = {"running": False, "url": "", "address": "", "error": ""}
        self._publish(status)
        return status

    def status(self) -> dict[str, Any]:
        with self._lock:
            http = self._http
            return {"running": bool(http and http.running), "url": http.url if http else ""}

    def shutdown(self) -> None:
        with self._lock:
            self._stop_locked()

    def _stop_locked(self) -> None:
        http, self._http = self._http, None
        if http is not None:
            left = http.stop()
            if left:
                log.warning("MCP server threads still alive: %s", ", ".join(left))

    def _publish(self, status: dict[str, Any]) -> None:
        self.ctrl.post_gui_task({"action": TASK, "status": dict(status)})

    def start_in_background(self, address: str) -> None:
        def run() -> None:
            try:
                self.start(address)
            except Exception as exc:
                self.ctrl.post_gui_task({"action": TASK, "status": {**self.view, "error": str(exc)}})
                self.ctrl.notify("error", f"MCP server: {exc}")

        threading.Thread(target=run, name="mcp-serve-start", daemon=True).start()


def register(ctrl: AppController) -> None:
    binding = McpServeBinding(ctrl)
    ctrl.mcp_serve = binding  # type: ignore[attr-defined]

    def changed(task: dict[str, Any]) -> None:
        binding.view = dict(task["status"])

    ctrl.register_task_handler(TASK, changed)
    ctrl.fields.register(
        "mcp_serve",
        Field(dict, {}, "The app's own MCP server over HTTP: running, url, address, error (read-only)"),
        lambda: dict(binding.view),
    )

    def start(call: ActionCall) -> None:
        address = str(call.user_data or ctrl.setting("mcp.serve_http") or "127.0.0.1:0").strip()
        from manual_slop.mcp.transports import parse_address

        try:
            parse_address(address)
        except ValueError as exc:
            raise InvalidValue(str(exc)) from None
        binding.start_in_background(address)

    ctrl.actions.register(
        "btn_mcp_serve_start",
        start,
        "Serve the app's tools over MCP (streamable HTTP) at HOST:PORT (default mcp.serve_http, else "
        "127.0.0.1:0); the Hook API's token is the bearer token",
        Field(str, ""),
    )
    ctrl.actions.register(
        "btn_mcp_serve_stop",
        lambda call: threading.Thread(target=binding.stop, name="mcp-serve-stop", daemon=True).start(),
        "Stop the app's MCP server",
    )
    ctrl.on_shutdown(binding.shutdown)
    configured = str(ctrl.setting("mcp.serve_http") or "").strip()
    if configured:
        binding.start_in_background(configured)
