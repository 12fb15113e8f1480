"""One external MCP server's session on the official SDK, kept alive on the MCP loop.

A :class:`ServerConnection` belongs to the :class:`~manual_slop.mcp.manager.McpManager`'s asyncio
loop: every coroutine here runs there, and one long-lived task (:meth:`ServerConnection._run`)
enters and leaves the SDK's context managers (``stdio_client`` or ``streamable_http_client``,
then ``ClientSession``), as anyio requires. Its life::

    stopped --ensure_running()--> starting --initialized, tools listed--> running
    running --process died / connection closed--> starting (after a backoff) --> running ...
    starting --MAX_START_FAILURES failed starts in a row--> failed (until restart())
    any --stop()--> stopped

A call that was running when the server died fails with :class:`~manual_slop.mcp.errors.ServerExited`
("MCP server 'x' exited while running 'y' (exit code -9); restarting") and the runner starts the
server again; a call arriving meanwhile waits for it. The SDK keeps the child process private;
:func:`_install_spawn_hook` wraps its spawn function once so that the connection that started a
process learns its pid and exit code (a context variable says which connection is asking).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from enum import StrEnum
from pathlib import Path
from typing import Any, TextIO

import mcp.client.stdio as sdk_stdio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from manual_slop.mcp.config import ServerConfig, child_environment
from manual_slop.mcp.errors import CallTimedOut, ServerExited, ServerUnavailable

__all__ = ["ServerConnection", "ServerState"]

log = logging.getLogger(__name__)

START_TIMEOUT_S = 30.0  # initialize + the first tools/list
WATCH_S = 0.1  # how often a running server's process is checked for an exit
BACKOFF_FIRST_S = 0.25  # the first restart after a death; doubled per failure in a row
BACKOFF_MAX_S = 30.0
STABLE_S = 30.0  # a server up this long has its failure count reset
MAX_START_FAILURES = 4  # failed starts in a row before the server is left failed
EXIT_SETTLE_S = 1.0  # how long a call that lost its connection waits for the exit code
STDERR_TAIL = 600  # characters of the server's stderr quoted in a start failure

_SPAWN_SINK: contextvars.ContextVar[Callable[[Any], None] | None] = contextvars.ContextVar(
    "slop_mcp_spawn_sink", default=None
)
_HOOK_LOCK = threading.Lock()


class ServerState(StrEnum):
    STOPPED = "stopped"
    STARTING = "starting"
    RUNNING = "running"
    FAILED = "failed"


def _install_spawn_hook() -> None:
    """Wrap the SDK's process spawn (once, idempotent) to hand the process to the asking connection."""
    with _HOOK_LOCK:
        original = getattr(sdk_stdio, "_create_platform_compatible_process", None)
        if original is None or getattr(original, "slop_spawn_hook", False):
            return  # an SDK without it: servers run, only pid and exit code stay unknown

        async def spawn(*args: Any, **kwargs: Any) -> Any:
            process = await original(*args, **kwargs)
            sink = _SPAWN_SINK.get()
            if sink is not None:
                sink(process)
            return process

        spawn.slop_spawn_hook = True  # type: ignore[attr-defined]
        sdk_stdio._create_platform_compatible_process = spawn


def describe_error(exc: BaseException) -> str:
    """One line for the user: the first real error inside anyio's exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return f"MCP error {exc.code}: {exc.message}"
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return "no answer in time"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class ServerConnection:
    """One configured server: its session, process, tools and state (loop-owned)."""

    def __init__(
        self, config: ServerConfig, on_change: Callable[[ServerConnection], None], errlog: Path | None = None
    ) -> None:
        self.config = config
        self.state = ServerState.STOPPED
        self.last_error = ""
        self.pid: int | None = None
        self.exit_code: int | None = None
        self.tools: tuple[types.Tool, ...] = ()
        self.listed = False  # the tools were listed at least once (they may be empty)
        self.restarts = 0
        self._on_change = on_change
        self._errlog_path = errlog
        self._session: ClientSession | None = None
        self._process: Any = None
        self._runner: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._wake = asyncio.Event()  # stop, a broken connection or a tool-list change
        self._settled = asyncio.Event()  # set while running or failed: waiting callers may go on
        self._broken = False
        self._relist = False
        self._given_up_at = 0.0

    # -- control ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the runner unless it is running (a failed server is tried again)."""
        if self._runner is not None and not self._runner.done():
            return
        self._stop = asyncio.Event()
        self._settled.clear()
        _install_spawn_hook()
        self._runner = asyncio.get_running_loop().create_task(self._run(), name=f"mcp-{self.config.name}")

    async def stop(self) -> None:
        """Stop the server and wait for its runner (the SDK closes stdin, then kills the tree)."""
        self._stop.set()
        self._wake.set()
        runner = self._runner
        if runner is not None and not runner.done():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await runner
        self._runner = None
        self._set(ServerState.STOPPED)

    async def restart(self) -> None:
        await self.stop()
        self.last_error = ""
        self.start()

    async def ensure_running(self, timeout: float) -> ClientSession:
        """The live session, starting the server if needed; ServerUnavailable when it is not up in time."""
        name = self.config.name
        if not self.config.enabled:
            raise ServerUnavailable(f"MCP server '{name}' is disabled")
        if self.state is ServerState.FAILED and time.monotonic() - self._given_up_at < BACKOFF_MAX_S:
            raise ServerUnavailable(f"MCP server '{name}' failed to start: {self.last_error}")
        self.start()
        try:
            await asyncio.wait_for(self._settled.wait(), timeout)
        except TimeoutError:
            raise ServerUnavailable(
                f"MCP server '{name}' did not start within {timeout:g} s" + self._error_note()
            ) from None
        if self._session is None:
            raise ServerUnavailable(f"MCP server '{name}' is not running" + self._error_note())
        return self._session

    async def call(self, tool: str, args: dict[str, Any], timeout: float) -> types.CallToolResult:
        """Call ``tool`` with ``args``; the SDK's errors translated (see :mod:`.errors`)."""
        deadline = time.monotonic() + timeout
        session = await self.ensure_running(max(0.1, timeout))
        process = self._process
        try:
            return await asyncio.wait_for(
                session.call_tool(tool, args), max(0.1, deadline - time.monotonic())
            )
        except TimeoutError:
            raise CallTimedOut(
                f"MCP server '{self.config.name}' did not answer '{tool}' within {timeout:g} s"
            ) from None
        except MCPError as exc:
            if exc.code != types.CONNECTION_CLOSED:
                raise  # the server's answer: the tool turns it into an error result
            raise await self._lost(tool, process) from None
        except (OSError, EOFError) as exc:  # the HTTP transport or a pipe under the session
            raise await self._lost(tool, process, describe_error(exc)) from None

    async def _lost(self, tool: str, process: Any, detail: str = "") -> ServerExited:
        """The error for a call whose connection went away; the runner is told to restart."""
        code = None
        if process is not None:
            deadline = time.monotonic() + EXIT_SETTLE_S
            while process.returncode is None and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            code = process.returncode
        self._broken = True
        self._wake.set()
        what = f"exit code {code}" if code is not None else (detail or "connection closed")
        verb = "exited" if code is not None else "closed its connection"
        return ServerExited(
            f"MCP server '{self.config.name}' {verb} while running '{tool}' ({what}); restarting"
        )

    # -- the runner ------------------------------------------------------------------------------
    async def _run(self) -> None:
        _SPAWN_SINK.set(self._adopt_process)
        failures = 0  # in a row, without a stable run between
        while not self._stop.is_set():
            self._set(ServerState.STARTING)
            up_since: float | None = None
            try:
                async with (
                    self._transport() as streams,
                    ClientSession(*streams, message_handler=self._on_message) as session,
                ):
                    await asyncio.wait_for(session.initialize(), START_TIMEOUT_S)
                    await asyncio.wait_for(self._list(session), START_TIMEOUT_S)
                    self._session, up_since = session, time.monotonic()
                    self.last_error = ""
                    self._set(ServerState.RUNNING)
                    await self._watch(session)
            except Exception as exc:
                if not self._stop.is_set():
                    self.last_error = self._failure(exc, up_since is not None)
            finally:
                self._session = None
            if self._stop.is_set():
                break
            if up_since is not None and not self.last_error:
                self.last_error = self._failure(None, True)
            stable = up_since is not None and time.monotonic() - up_since >= STABLE_S
            failures = 1 if stable else failures + 1
            if up_since is None and failures >= MAX_START_FAILURES:
                self._given_up_at = time.monotonic()
                self._set(ServerState.FAILED)
                return
            self.restarts += 1
            self._set(ServerState.STARTING)  # callers wait for the next attempt
            delay = min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** (failures - 1))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), delay)
        self._set(ServerState.STOPPED)

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[Any]:
        self._broken, self._process, self.pid, self.exit_code = False, None, None, None
        config = self.config
        if config.url:
            import httpx2  # the SDK's HTTP client, only for HTTP servers
            from mcp.client.streamable_http import streamable_http_client

            timeout = httpx2.Timeout(30.0, read=max(300.0, config.timeout_s))
            http = httpx2.AsyncClient(headers=dict(config.headers), timeout=timeout)
            async with http, streamable_http_client(config.url, http_client=http) as streams:
                yield streams
            return
        params = StdioServerParameters(
            command=config.command,
            args=list(config.args),
            env=child_environment(config.env),
            cwd=config.cwd or None,
            encoding_error_handler="replace",
        )
        with self._errlog() as errlog:
            async with stdio_client(params, errlog=errlog) as streams:
                yield streams

    @contextlib.contextmanager
    def _errlog(self) -> Any:
        """Where the server's stderr goes: its log file in the session folder (or nowhere)."""
        import os

        path = self._errlog_path
        handle: TextIO = open(path if path is not None else os.devnull, "a", encoding="utf-8")  # noqa: SIM115
        try:
            yield handle
        finally:
            handle.close()

    def _adopt_process(self, process: Any) -> None:
        self._process = process
        self.pid = getattr(process, "pid", None)

    async def _list(self, session: ClientSession) -> None:
        tools: list[types.Tool] = []
        cursor: str | None = None
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        self.tools, self.listed = tuple(tools), True
        self._on_change(self)

    async def _watch(self, session: ClientSession) -> None:
        """Until stop, a process exit or a broken connection; re-lists tools when they change."""
        while not self._stop.is_set() and not self._broken:
            process = self._process
            if process is not None and process.returncode is not None:
                return
            if self._relist:
                self._relist = False
                await asyncio.wait_for(self._list(session), START_TIMEOUT_S)
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), WATCH_S)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._relist = True
            self._wake.set()

    def _failure(self, exc: BaseException | None, was_running: bool) -> str:
        process = self._process
        code = process.returncode if process is not None else None
        self.exit_code = code
        if was_running:
            ended = f"exited (exit code {code})" if code is not None else "closed its connection"
            return f"{ended}; restarting" + (
                f": {describe_error(exc)}" if exc is not None and code is None else ""
            )
        reason = describe_error(exc) if exc is not None else "unknown"
        if code is not None:
            reason = f"exited during start-up (exit code {code})"
        tail = self._stderr_tail()
        return f"{reason}{': ' + tail if tail else ''}"

    def _stderr_tail(self) -> str:
        path = self._errlog_path
        if path is None or not path.is_file():
            return ""
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return " ".join(text[-STDERR_TAIL:].split())

    def _error_note(self) -> str:
        return f" (last error: {self.last_error})" if self.last_error else ""

    def _set(self, state: ServerState) -> None:
        self.state = state
        if state in (ServerState.RUNNING, ServerState.FAILED, ServerState.STOPPED):
            self._settled.set()
        else:
            self._settled.clear()
        self._on_change(self)
