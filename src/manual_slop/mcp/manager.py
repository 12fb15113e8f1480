"""Every external MCP server of one app: one background asyncio loop that owns their sessions,
and their tools kept in step with the tool registry.

Threads: the loop runs on its own daemon thread (``slop-mcp``), started with the first server.
Other threads never touch a session: they submit coroutines with ``run_coroutine_threadsafe``
and wait with a timeout (:meth:`McpManager.call`, :meth:`McpManager.prepare`). The loop itself
never blocks -- a registry update takes the registry's lock for a moment, a snapshot this
manager's. What the panel and the Hook API show is :meth:`McpManager.snapshot` (any thread);
``on_change`` tells the app that it changed.

Servers start lazily: :meth:`prepare` (before a send) starts every enabled server that has
not listed its tools yet and waits for them within a bound; a call starts its server too.
:meth:`close` stops them all (the SDK closes stdin, then kills the process group) and kills any
process tree that is still there, so the app leaves no child behind.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import threading
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, TypeVar

from mcp import types

from manual_slop.mcp.client import ServerConnection, ServerState, describe_error
from manual_slop.mcp.config import ServerConfig
from manual_slop.mcp.errors import CallTimedOut, McpClientError, ServerUnavailable
from manual_slop.mcp.tools import SEPARATOR, build_tools
from manual_slop.process_tree import kill_pid_tree
from manual_slop.schema import Problem
from manual_slop.tools.errors import ToolDefinitionError, ToolFailure, ToolTimeout, ToolUnavailable
from manual_slop.tools.registry import ToolRegistry

__all__ = ["McpManager"]

log = logging.getLogger(__name__)

T = TypeVar("T")
PREPARE_TIMEOUT_S = 20.0  # the longest a send waits for servers that are still starting
CALL_GRACE_S = 2.0  # beyond a call's own timeout, for the loop to hand the answer over
CLOSE_TIMEOUT_S = 6.0  # the SDK's stdin close (2 s) + SIGTERM (2 s) + reaping


class McpManager:
    """The configured servers, their loop and their tools in ``registry``."""

    def __init__(
        self,
        configs: Mapping[str, ServerConfig],
        registry: Callable[[], ToolRegistry | None],
        *,
        on_change: Callable[[], None] | None = None,
        log_dir: Path | None = None,
        problems: list[Problem] | None = None,
    ) -> None:
        self._configs = dict(configs)
        self._registry = registry
        self._on_change = on_change
        self._log_dir = log_dir
        self._lock = threading.Lock()
        self._tools_lock = threading.Lock()  # the registered names and the registry changes together
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        self._connections: dict[str, ServerConnection] = {}
        self._registered: dict[str, set[str]] = {}  # server -> its tool names in the registry
        self._tool_problems: dict[str, list[str]] = {}
        self._config_problems = [str(p) for p in problems or ()]
        self._views: dict[str, dict[str, Any]] = {
            name: self._view_of(cfg) for name, cfg in self._configs.items()
        }
        self._pids: set[int] = set()  # every pid a server had: checked once more at close

    # -- the loop ------------------------------------------------------------------------------
    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise ServerUnavailable("the app is shutting down; MCP servers are stopped")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=self._run_loop, args=(loop,), name="slop-mcp", daemon=True)
                self._loop, self._thread = loop, thread
                thread.start()
            return self._loop

    @staticmethod
    def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()

    def _submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        try:
            loop = self._ensure_loop()
        except ServerUnavailable:
            coro.close()
            raise
        return asyncio.run_coroutine_threadsafe(coro, loop)

    def _wait(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        future = self._submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise

    def _connection(self, name: str) -> ServerConnection:
        """(loop) The connection of ``name``, made on first use."""
        config = self._configs.get(name)
        if config is None:
            raise ServerUnavailable(
                f"no MCP server named {name!r} (servers: {', '.join(self.names()) or 'none'})"
            )
        conn = self._connections.get(name)
        if conn is None:
            errlog = self._log_dir / f"mcp-{name}.stderr.log" if self._log_dir is not None else None
            conn = ServerConnection(config, self._changed, errlog)
            self._connections[name] = conn
        return conn

    # -- any thread ----------------------------------------------------------------------------
    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._configs)

    def config(self, name: str) -> ServerConfig | None:
        with self._lock:
            return self._configs.get(name)

    def snapshot(self) -> dict[str, Any]:
        """``{"servers": [...], "problems": [...]}`` for the panel and the Hook API (no secrets)."""
        with self._lock:
            servers = [
                dict(self._views[name], tools=list(self._views[name]["tools"]))
                for name in sorted(self._views)
            ]
            return {"servers": servers, "problems": list(self._config_problems)}

    def prepare(self, timeout: float = PREPARE_TIMEOUT_S) -> None:
        """Start every enabled server whose tools were never listed and wait (at most ``timeout``)
        until each runs or failed: a send then offers their tools. Blocks; not on the main thread."""
        with self._lock:
            waiting = [n for n, c in self._configs.items() if c.enabled and not self._views[n]["listed"]]
        if not waiting or self._closed:
            return

        async def start_all() -> None:
            async def one(name: str) -> None:
                with contextlib.suppress(McpClientError):
                    await self._connection(name).ensure_running(timeout)

            await asyncio.gather(*(one(n) for n in waiting))

        with contextlib.suppress(concurrent.futures.TimeoutError, ServerUnavailable):
            self._wait(start_all(), timeout + CALL_GRACE_S)

    def call(self, server: str, tool: str, args: dict[str, Any], timeout: float) -> types.CallToolResult:
        """Call ``tool`` of ``server`` (blocks up to ``timeout`` s); raises the registry's tool errors:
        ToolFailure when the server died (it restarts), ToolTimeout, ToolUnavailable."""

        async def run() -> types.CallToolResult:
            return await self._connection(server).call(tool, args, timeout)

        try:
            return self._wait(run(), timeout + CALL_GRACE_S)
        except concurrent.futures.TimeoutError:
            raise ToolTimeout(f"MCP server '{server}' did not answer '{tool}' within {timeout:g} s") from None
        except ServerUnavailable as exc:
            raise ToolUnavailable(str(exc)) from None
        except CallTimedOut as exc:
            raise ToolTimeout(str(exc)) from None
        except McpClientError as exc:  # ServerExited: it is restarting
            raise ToolFailure(str(exc)) from None
        except Exception as exc:  # the server's protocol-level error answer (MCPError) and the like
            raise ToolFailure(f"MCP server '{server}' failed on '{tool}': {describe_error(exc)}") from None

    def restart(self, name: str) -> None:
        """Stop and start ``name`` again (in the background); it is started even if it failed."""
        self._require(name)

        async def run() -> None:
            await self._connection(name).restart()

        self._submit(run())

    def set_enabled(self, name: str, enabled: bool) -> None:
        """Enable (started at the next send or call) or disable (stopped, its tools withdrawn)."""
        config = self._require(name)
        from dataclasses import replace

        self.configure({**self._configs, name: replace(config, enabled=enabled)}, None)

    def configure(self, configs: Mapping[str, ServerConfig], problems: list[Problem] | None) -> None:
        """Adopt another set of servers (another project opened, one enabled or disabled): servers
        gone, disabled or changed are stopped; their tools leave the registry until listed again."""
        with self._lock:
            old = self._configs
            self._configs = dict(configs)
            if problems is not None:
                self._config_problems = [str(p) for p in problems]
            changed = [n for n, c in old.items() if n not in configs or configs[n].identity() != c.identity()
                       or not configs[n].enabled]  # fmt: skip
            for name, config in self._configs.items():
                view = self._views.get(name)
                self._views[name] = self._view_of(config, view if name not in changed else None)
            for name in [n for n in self._views if n not in self._configs]:
                del self._views[name]
            running = self._loop is not None
        refilter = [n for n, c in self._configs.items() if n not in changed and n in old and old[n] != c]
        for name in changed:
            self._withdraw(name)  # at once: a disabled server's tools are gone when this returns

        async def apply() -> None:
            for name in changed:
                conn = self._connections.pop(name, None)
                if conn is not None:
                    await conn.stop()
            for name in refilter:
                conn = self._connections.get(name)
                if conn is not None:  # trust or filters changed: the same process, other tools
                    conn.config = self._configs[name]
                    self._sync_tools(name, conn)
            self._notify()

        if running:  # the loop owns the connections (never waited for here)
            with contextlib.suppress(ServerUnavailable):
                self._submit(apply())
        self._notify()

    def close(self, timeout: float = CLOSE_TIMEOUT_S) -> None:
        """Stop every server and the loop; kill what is left of any server's process tree."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread = self._loop, self._thread

        if loop is not None and thread is not None:

            async def stop_all() -> None:
                await asyncio.gather(*(c.stop() for c in self._connections.values()), return_exceptions=True)

            future = asyncio.run_coroutine_threadsafe(stop_all(), loop)
            with contextlib.suppress(Exception):
                future.result(timeout)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=2.0)
        for pid in sorted(self._pids):
            if _our_child(pid):  # a server that ignored stdin close and SIGTERM, or outlived the loop
                kill_pid_tree(pid)

    # -- loop callbacks ------------------------------------------------------------------------
    def _changed(self, conn: ServerConnection) -> None:
        """(loop) A connection's state or tools changed: registry and snapshot follow."""
        name = conn.config.name
        if conn.pid is not None:
            self._pids.add(conn.pid)
        with self._lock:
            view = self._views.get(name)
            if view is None or self._connections.get(name) is not conn:
                return  # a connection that was replaced (its server was reconfigured)
            view.update(
                state=str(conn.state),
                pid=conn.pid if conn.state is not ServerState.STOPPED else None,
                last_error=conn.last_error,
                restarts=conn.restarts,
                listed=conn.listed,
            )
        if conn.listed:
            self._sync_tools(name, conn)
        self._notify()

    def _sync_tools(self, name: str, conn: ServerConnection) -> None:
        """Put ``name``'s listed tools into the registry: new ones added, changed ones replaced,
        vanished ones removed (a restart may bring another list). Only for the connection of the
        current config: a reconfigured server's old connection registers nothing."""
        registry = self._registry()
        config = conn.config
        if registry is None or not conn.listed:
            return
        tools, problems = build_tools(config, conn.tools, self.call)
        notes = [p.message for p in problems]
        wanted = {t.name: t for t in tools}
        with self._tools_lock:
            if self.config(name) is not config or not config.enabled:
                return
            have = self._registered.setdefault(name, set())
            for gone in sorted(have - set(wanted)):
                registry.unregister(gone)
                have.discard(gone)
            for tool in tools:
                try:
                    if tool.name in have:
                        registry.replace(tool)
                    else:
                        registry.register(tool)
                        have.add(tool.name)
                except ToolDefinitionError as exc:
                    notes.append(f"tool {tool.name} is not offered: {exc}")
            offered = [
                {"name": t.name, "tool": wanted_original(t.name, conn.tools, name), "asks": t.mutating}
                for t in tools
                if t.name in have
            ]
        with self._lock:
            view = self._views.get(name)
            if view is not None:
                view.update(tools=offered, problems=notes)

    def _withdraw(self, name: str) -> None:
        registry = self._registry()
        with self._tools_lock:
            for tool in sorted(self._registered.pop(name, set())):
                if registry is not None:
                    registry.unregister(tool)
        with self._lock:
            view = self._views.get(name)
            if view is not None:
                view.update(tools=[], listed=False, state=str(ServerState.STOPPED), pid=None)

    def _notify(self) -> None:
        if self._on_change is not None:
            try:
                self._on_change()
            except Exception:
                log.exception("MCP change callback failed")

    def _require(self, name: str) -> ServerConfig:
        config = self.config(name)
        if config is None:
            raise ServerUnavailable(
                f"no MCP server named {name!r} (servers: {', '.join(self.names()) or 'none'})"
            )
        return config

    @staticmethod
    def _view_of(config: ServerConfig, previous: dict[str, Any] | None = None) -> dict[str, Any]:
        view = {"state": "stopped", "pid": None, "last_error": "", "restarts": 0, "listed": False}
        view.update(tools=[], problems=[])
        if previous is not None:
            view.update({k: previous[k] for k in view if k in previous})
        return {**view, **config.describe()}


def _our_child(pid: int) -> bool:
    """Whether ``pid`` is still a child of this process (alive or not yet reaped): only then is
    it safe to kill by number -- a reaped pid may belong to someone else by now."""
    try:
        import psutil

        return bool(psutil.Process(pid).ppid() == os.getpid())
    except Exception:
        return False


def wanted_original(exposed: str, listed: tuple[types.Tool, ...], server: str) -> str:
    """The server's own name of the exposed tool ``exposed``."""
    from manual_slop.mcp.tools import exposed_name

    for tool in listed:
        if exposed_name(server, tool.name) == exposed:
            return tool.name
    return exposed.split(SEPARATOR, 1)[-1]
