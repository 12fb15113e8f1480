"""The two ways a client reaches :func:`~manual_slop.mcp.server.build_server`: stdio and
streamable HTTP, both the official SDK's transports.

- :func:`serve_stdio` serves one client over a pair of file descriptors until the client
  closes its end (``sloppy mcp serve``). The caller hands over the wire descriptors and points
  fd 1 elsewhere first, so nothing else the process prints can corrupt the protocol.
- :class:`HttpMcpServer` serves streamable HTTP at ``http://HOST:PORT/mcp`` from a uvicorn
  server on its own thread, with the Hook API's rules: loopback unless a token the user
  configured is set; every request needs ``Authorization: Bearer <token>`` when a token is
  required; a foreign ``Host`` or ``Origin`` is refused (the SDK's DNS-rebinding guard).
"""

from __future__ import annotations

import contextlib
import hmac
import io
import json
import logging
import os
import threading
import time
from collections.abc import Sequence
from typing import Any

import anyio

from manual_slop.hooks.guard import is_loopback

__all__ = [
    "HttpMcpServer",
    "McpStartError",
    "close_quietly",
    "http_binding_refusal",
    "parse_address",
    "serve_stdio",
]

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"
START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 5.0


class McpStartError(RuntimeError):
    """The MCP server cannot start as asked (bad address, port in use, unsafe binding)."""


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) -> (host, port); ValueError naming the problem."""
    host, sep, port_text = text.strip().rpartition(":")
    host = host.strip("[]")
    if not sep or not host:
        raise ValueError(f"{text!r} is not HOST:PORT (e.g. 127.0.0.1:8765; port 0 picks a free one)")
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"{text!r}: the port {port_text!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"{text!r}: the port must be 0-65535")
    return host, port


def http_binding_refusal(host: str, token: str | None, configured: bool) -> str | None:
    """Why serving MCP over HTTP on ``host`` is refused (one line), or None: the Hook API's rule,
    a non-loopback address needs a token the user configured (a generated one no remote client
    could know; none at all is loopback only)."""
    if is_loopback(host):
        return None
    if not token:
        return f"MCP over HTTP on {host!r} needs a token (hook.require_token = true); use 127.0.0.1"
    if not configured:
        return (
            f"MCP over HTTP on {host!r} (not a loopback address) needs a token you configured: "
            "set SLOP_HOOK_TOKEN or hook.token in config.toml, or use 127.0.0.1"
        )
    return None


def serve_stdio(server: Any, stdin_fd: int, stdout_fd: int) -> None:
    """Serve ``server`` over the two descriptors until the client closes stdin (blocking)."""
    from mcp.server.stdio import stdio_server

    # closefd=False: the caller owns the descriptors (and closes them)
    reader = io.TextIOWrapper(io.FileIO(stdin_fd, "rb", closefd=False), encoding="utf-8", errors="replace")
    writer = io.TextIOWrapper(io.FileIO(stdout_fd, "wb", closefd=False), encoding="utf-8", write_through=True)

    async def main() -> None:
        async with stdio_server(anyio.wrap_file(reader), anyio.wrap_file(writer)) as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


class _BearerGuard:
    """ASGI middleware: no request reaches MCP without the token (constant-time compare)."""

    def __init__(self, app: Any, token: str | None) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode() if token else None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and self.expected is not None:
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                body = json.dumps(
                    {
                        "error": {
                            "code": 401,
                            "message": "missing or wrong bearer token (Authorization header)",
                        }
                    }
                ).encode()
                headers = [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]
                await send({"type": "http.response.start", "status": 401, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


class HttpMcpServer:
    """Streamable HTTP MCP on a uvicorn thread; ``start()`` returns once it listens."""

    def __init__(
        self,
        server: Any,
        host: str,
        port: int,
        token: str | None,
        *,
        allowed_hosts: Sequence[str] = (),
    ) -> None:
        self.server = server
        self.host = host
        self.requested_port = port
        self.token = token
        self.allowed_hosts = tuple(allowed_hosts)
        self.port = 0
        self._uvicorn: Any = None
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{MCP_PATH}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _app(self) -> Any:
        from mcp.server.transport_security import TransportSecuritySettings

        hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*", *(f"{h}:*" for h in self.allowed_hosts)]
        if not is_loopback(self.host):
            hosts.append(f"{self.host}:*")
        origins = [f"http://{h}" for h in hosts]
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
        )
        app = self.server.streamable_http_app(
            streamable_http_path=MCP_PATH, transport_security=security, host=self.host
        )
        return _BearerGuard(app, self.token)

    def start(self) -> HttpMcpServer:
        import uvicorn

        config = uvicorn.Config(
            self._app(),
            host=self.host,
            port=self.requested_port,
            log_level="warning",
            lifespan="on",
            access_log=False,
            timeout_graceful_shutdown=1,
        )
        self._uvicorn = uvicorn.Server(config)

        def run() -> None:
            try:
                self._uvicorn.run()
            except BaseException as exc:  # reported by start(); uvicorn logs the details
                self._failure = exc

        self._thread = threading.Thread(target=run, name="mcp-http", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._uvicorn.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                reason = self._failure or "it did not start listening"
                raise McpStartError(f"MCP over HTTP on {self.host}:{self.requested_port}: {reason}")
            time.sleep(0.02)
        sockets = [s for server in self._uvicorn.servers for s in server.sockets]
        self.port = sockets[0].getsockname()[1] if sockets else self.requested_port
        log.info("MCP server listening on %s", self.url)
        return self

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> list[str]:
        """Stop serving; the names of threads still alive after ``timeout`` (none normally)."""
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)
            if thread.is_alive():
                self._uvicorn.force_exit = True
                thread.join(1.0)
                if thread.is_alive():
                    return [thread.name]
        return []


def close_quietly(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
