"""HookServer: the Hook API over HTTP/1.1 (``ThreadingHTTPServer``, one thread per connection).

Per request: the request line and headers (an HTTP version, at most 64 KiB of headers) →
the :class:`~manual_slop.hooks.guard.RequestGuard` (Host, Origin, bearer token: 403 / 401)
→ route (404 / 405) → content type (415) → read the body (at most 1 MiB, else 413; nesting
depth, JSON, schema: 400) → run the handler (:mod:`.api`) → append
``{method, path, status, ms}`` to ``apihooks.log`` → reply JSON, every string in it run
through the app's redactor. A request refused before its body was read closes its
connection. Any exception a handler did not turn into an error reply becomes a 500
``internal`` with the traceback in ``app.log``.

While it listens, the token is in the per-user runtime file of its port
(:mod:`.token`), so local clients find it without being told.

Lifetime: :meth:`HookServer.start` binds and serves on the ``slop-hook-server`` thread;
:meth:`HookServer.stop` stops accepting, wakes long polls, rejects asks still waiting,
lets in-flight replies finish, closes idle keep-alive connections and joins every
thread it started.

Started before its app (headless start, :mod:`manual_slop.cli`): ``HookServer(None, ...,
token=...)`` listens at once and :meth:`HookServer.attach` hands it the controller once that
is built. Until then it answers ``GET /status`` itself (liveness: the same body, no secrets in
it) when the request passes the guard, and every other request waits for the app (at most
:data:`START_WAIT_S`, then 408; 409 when the app stops before it finished starting), so a
client that saw the first 200 never gets an answer the built app would not give. The
``apihooks.log`` entries of those early requests are written when the app attaches.
"""

from __future__ import annotations

import contextlib
import http.client
import itertools
import json
import socket
import socketserver
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from manual_slop import __version__
from manual_slop.hooks.errors import (
    BadRequest,
    Conflict,
    HeadersTooLarge,
    HookApiError,
    HookStartError,
    InternalError,
    MethodNotAllowed,
    PayloadTooLarge,
    RequestTimedOut,
)
from manual_slop.hooks.guard import MAX_HEADER_BYTES, RequestGuard, is_loopback
from manual_slop.hooks.status import status_body
from manual_slop.hooks.token import remove_token_file, runtime_token_path, write_token_file

if TYPE_CHECKING:
    import logging

    from manual_slop.controller import AppController
    from manual_slop.hooks.api import HookApi
    from manual_slop.hooks.routes import Reply, Route, Router

__all__ = ["MAX_BODY_BYTES", "HookServer"]


def _log() -> logging.Logger:
    """This module's logger; logging is imported on the first message (not to start serving)."""
    import logging

    return logging.getLogger(__name__)


MAX_BODY_BYTES = 1024 * 1024
IDLE_TIMEOUT_S = 60.0  # a keep-alive connection silent this long is closed
LOGGED_PATH_CHARS = 200
START_WAIT_S = 60.0  # before attach: how long a request waits for the app to finish starting
DRAIN_LIMIT_BYTES = 16 * 1024 * 1024  # an oversize body up to this is read and dropped


def _discard(stream: Any, length: int) -> bool:
    """Read and drop ``length`` bytes; False when the stream ends first."""
    while length > 0:
        chunk = stream.read(min(length, 256 * 1024))
        if not chunk:
            return False
        length -= len(chunk)
    return True


class HookServer:
    """The Hook API for one controller. ``port=0`` picks a free port (see :attr:`port`)."""

    def __init__(
        self,
        controller: AppController | None,
        host: str = "127.0.0.1",
        port: int = 8999,
        token: str | None = None,
        *,
        allowed_hosts: tuple[str, ...] = (),
        main_timeout: float = 5.0,
        max_body: int = MAX_BODY_BYTES,
        runtime_token_file: bool = True,
        mode: str = "headless",
        started_at: float | None = None,
    ) -> None:
        """``token=None`` takes the controller's (``hook_auth``); ``''`` serves without one.
        ``controller=None`` starts the server before its app (see :meth:`attach`); it then needs
        ``token``, and ``mode`` and ``started_at`` (``time.time()``) for ``/status``."""
        if controller is None and token is None:
            raise ValueError("a HookServer started before its app needs the token (token='' for none)")
        self.controller: AppController | None = None
        self.host = host
        self._requested_port = port
        self.token = controller.hook_auth.token if token is None and controller is not None else token or ""
        self.allowed_hosts = tuple(allowed_hosts)
        self.max_body = max_body
        self.main_timeout = main_timeout
        self.start_wait = START_WAIT_S
        self.api: HookApi | None = None
        self.router: Router | None = None
        self.guard = RequestGuard(self.token, 0)
        self._runtime_token_file = runtime_token_file
        self.token_file: Path | None = None  # the runtime file while serving
        self._redact: Any = None
        self._httpd: _HttpServer | None = None
        self._thread: threading.Thread | None = None
        self._mode = mode
        self._started_at = time.time() if started_at is None else started_at
        self._attached = threading.Event()  # set by attach, and by stop (the app will not come)
        self._log_lock = threading.Lock()
        self._early_log: list[dict[str, Any]] = []  # apihooks.log entries from before attach
        if controller is not None:
            self.attach(controller)

    def attach(self, controller: AppController) -> HookServer:
        """Serve ``controller``'s API from now on (requests waiting for it go ahead)."""
        from manual_slop.hooks.api import HookApi
        from manual_slop.hooks.openapi import build_openapi
        from manual_slop.hooks.routes import Router

        if self.controller is not None:
            raise RuntimeError("the hook server already serves an app")
        api = HookApi(controller, main_timeout=self.main_timeout)
        self.router = Router(api.routes())
        api.openapi = build_openapi(self.router.routes, __version__)
        self.api = api
        self._redact = controller.redactor.redact_obj
        with self._log_lock:  # the early entries first, in their order
            self.controller = controller
            early, self._early_log = self._early_log, []
            for entry in early:
                self._append_log(controller, entry)
        if self._httpd is not None:
            controller.hook_api = (self.url, self.token)  # the Gemini CLI bridge asks here
        self._attached.set()
        return self

    # -- lifetime ------------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the hook server is not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> HookServer:
        """Bind and serve; HookStartError when the address cannot be used."""
        if self._httpd is not None:
            raise RuntimeError("the hook server is already started")
        if not self.token and not is_loopback(self.host):
            raise HookStartError(
                f"refusing to serve the Hook API on non-loopback host {self.host!r} without a token; "
                "set hook.token in config.toml or SLOP_HOOK_TOKEN, or use hook.host = '127.0.0.1'"
            )
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        try:
            self._httpd = _HttpServer((self.host.strip("[]"), self._requested_port), self, family)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise HookStartError(f"cannot listen on {self.host}:{self._requested_port} ({reason})") from exc
        self.guard = RequestGuard(self.token, self.port, self.allowed_hosts, self.host)
        if self.token and self._runtime_token_file:
            try:
                self.token_file = write_token_file(
                    runtime_token_path(self.port), self.token, private_folder=True
                )
            except HookStartError:
                self._httpd.server_close()
                self._httpd = None
                raise
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.1},
            name="slop-hook-server",
            daemon=True,
        )
        self._thread.start()
        if self.controller is not None:
            self.controller.hook_api = (self.url, self.token)  # the Gemini CLI bridge asks here
        return self

    def stop(self, timeout: float = 2.0) -> list[str]:
        """Stop serving and join every thread; returns the names of threads still alive."""
        from manual_slop.threads import join_all  # (concurrent.futures) not needed to start

        httpd, thread = self._httpd, self._thread
        if httpd is None or thread is None:
            return []
        deadline = time.monotonic() + timeout
        controller = self.controller
        if controller is not None and controller.hook_api is not None and controller.hook_api[0] == self.url:
            controller.hook_api = None
        if self.api is not None:
            self.api.close()
        self._attached.set()  # requests still waiting for an app that will not come: 409
        httpd.shutdown()
        left = join_all([thread], max(0.0, deadline - time.monotonic()))
        # Idle keep-alive connections are closed at once; replies in flight (woken long
        # polls, rejected asks) get until the deadline to reach their clients.
        httpd.close_connections(idle_only=True)
        httpd.wait_until_idle(max(0.0, deadline - time.monotonic()))
        httpd.close_connections()
        left += join_all(httpd.connection_threads(), max(0.0, deadline - time.monotonic()))
        httpd.server_close()
        self._thread = None
        if self.token_file is not None:
            remove_token_file(self.token_file, self.token)
            self.token_file = None
        return [t.name for t in left]

    def __enter__(self) -> HookServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- one request -----------------------------------------------------------------------
    def handle(self, request: _Handler) -> None:
        started = time.perf_counter()
        method = request.command
        raw_path = urlsplit(request.path).path
        headers: dict[str, str] = {}
        after = None
        request.slop_body_read = False
        redact = self._redact
        try:
            early = self._early_status(request) if self.controller is None else None
            if early is not None:
                status, body = 200, early  # liveness only: nothing secret to redact
            else:
                redact = self._redact  # attached by now
                route, reply = self._dispatch(request)
                status = reply.status or route.status
                body = reply.body
                after = reply.after
        except HookApiError as exc:
            status, body = exc.status, exc.to_body()
            if isinstance(exc, MethodNotAllowed):
                headers["Allow"] = ", ".join(exc.allowed)
        except Exception as exc:
            from manual_slop.automation import AutomationError  # loaded with the app

            if isinstance(exc, AutomationError):
                from manual_slop.hooks.api import automation_error

                error = automation_error(exc)
            else:
                _log().exception("hook %s %s failed", method, raw_path[:LOGGED_PATH_CHARS])
                error = InternalError(f"internal error ({type(exc).__name__}); the traceback is in app.log")
            status, body = error.status, error.to_body()
        if not request.slop_body_read and (
            request.headers.get("Content-Length", "0").strip() not in ("", "0")
            or request.headers.get("Transfer-Encoding")
        ):
            request.close_connection = True  # refused before its body was read: the stream is unusable
        entry: dict[str, Any] = {
            "method": method,
            "path": raw_path[:LOGGED_PATH_CHARS],
            "status": status,
            "ms": round((time.perf_counter() - started) * 1000.0, 3),
        }
        if status >= 400:
            entry["error"] = body["error"]["code"]
        # Logged before the reply leaves, so a client holding its reply finds the entry.
        self.log_request(entry)
        try:
            self._reply(request, status, body if redact is None else redact(body), headers)
        except OSError:  # the client went away
            request.close_connection = True
        if after is not None:
            after()

    def log_request(self, entry: dict[str, Any]) -> None:
        """Append ``entry`` to ``apihooks.log`` (kept until :meth:`attach` before the app exists)."""
        with self._log_lock:
            controller = self.controller
            if controller is None:
                self._early_log.append(entry)
                return
        self._append_log(controller, entry)

    @staticmethod
    def _append_log(controller: AppController, entry: dict[str, Any]) -> None:
        try:
            controller.session_log.append_api_hook(entry)
        except OSError as exc:  # a full disk must not cost the client its reply
            _log().warning("apihooks.log: %s", exc)

    def _early_status(self, request: _Handler) -> dict[str, Any] | None:
        """Before attach: the ``/status`` body for a plain ``GET /status`` that passes the guard;
        any other request waits here for the app (None once it is attached)."""
        split = urlsplit(request.path)
        plain = (
            request.command == "GET"
            and split.path == "/status"
            and not split.query
            and request.headers.get("Content-Length", "0").strip() in ("", "0")
            and not request.headers.get("Transfer-Encoding")
        )
        if plain:
            try:
                self.guard.check_request("GET", "/status", request.headers)
            except HookApiError:
                plain = False  # answered by the app, through the redactor, like every refusal
        if plain and self.controller is None:
            request.slop_body_read = True
            return status_body(self._mode, self._started_at, ready=False)
        self.wait_attached()
        return None

    def wait_attached(self) -> None:
        """Block until the app is attached; 408 after :attr:`start_wait`, 409 if it never comes."""
        if not self._attached.wait(self.start_wait):
            raise RequestTimedOut(f"the app is still starting after {self.start_wait:.0f} s; try again")
        if self.controller is None:
            raise Conflict("the app stopped before it finished starting")

    def _dispatch(self, request: _Handler) -> tuple[Route, Reply]:
        from manual_slop.hooks.routes import Reply

        assert self.router is not None  # attached (see handle)
        split = urlsplit(request.path)
        try:
            path = unquote(split.path, errors="strict")
        except UnicodeDecodeError:
            raise BadRequest("the path is not valid UTF-8 after percent-decoding") from None
        self.guard.check_request(request.command, path, request.headers)
        route, params = self.router.match(request.command, path)
        self.guard.check_content_type(request.command, request.headers)
        raw = self._read_body(request)
        query = self.router.parse_query(route, split.query)
        body = self.router.parse_body(route, raw)
        result = route.handler(_call(params, query, body))
        return route, result if isinstance(result, Reply) else Reply(result)

    def _read_body(self, request: _Handler) -> bytes:
        if request.headers.get("Transfer-Encoding"):
            request.close_connection = True
            raise BadRequest("Transfer-Encoding is not supported; send the body with Content-Length")
        lengths = request.headers.get_all("Content-Length") or []
        if len(lengths) > 1:
            request.close_connection = True
            raise BadRequest(f"Content-Length is given {len(lengths)} times; give it once")
        length_text = lengths[0] if lengths else None
        if length_text is None:
            request.slop_body_read = True
            return b""
        try:
            length = int(length_text)
            if length < 0:
                raise ValueError
        except ValueError:
            request.close_connection = True
            raise BadRequest(f"Content-Length {length_text[:20]!r} is not a non-negative integer") from None
        if length > self.max_body:
            # Read and drop a moderately large body so the client, still sending, gets the 413
            # instead of a connection reset; beyond that, close without reading.
            if length > DRAIN_LIMIT_BYTES or not _discard(request.rfile, length):
                request.close_connection = True
            raise PayloadTooLarge(f"the body has {length} bytes; the limit is {self.max_body} bytes")
        raw = request.rfile.read(length) if length else b""
        request.slop_body_read = True
        if len(raw) < length:
            request.close_connection = True
            raise BadRequest(f"the body ended after {len(raw)} of {length} bytes")
        return raw

    @staticmethod
    def _reply(request: _Handler, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
        try:
            data = json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
        except (TypeError, ValueError):  # also a lone surrogate (UnicodeEncodeError): ASCII escapes it
            from manual_slop.events import json_snapshot

            data = json.dumps(json_snapshot(body), ensure_ascii=True, separators=(",", ":")).encode()
        request.send_response(status)
        request.send_header("Content-Type", "application/json; charset=utf-8")
        request.send_header("Content-Length", str(len(data)))
        request.send_header("Cache-Control", "no-store")
        for name, value in headers.items():
            request.send_header(name, value)
        if request.close_connection:
            request.send_header("Connection", "close")
        request.end_headers()
        if request.command != "HEAD":
            request.wfile.write(data)


def _call(params: Any, query: Any, body: Any) -> Any:
    from manual_slop.hooks.routes import Call

    return Call(params, query, body)


class _Handler(BaseHTTPRequestHandler):
    """Hands every request to :meth:`HookServer.handle`; JSON even for malformed HTTP."""

    server: _HttpServer
    protocol_version = "HTTP/1.1"  # keep-alive: a client reuses one connection
    server_version = f"ManualSlopHooks/{__version__}"
    sys_version = ""
    timeout = IDLE_TIMEOUT_S
    disable_nagle_algorithm = True  # headers and body are two writes; do not let Nagle delay the second
    slop_body_read = False  # set per request by HookServer.handle

    def parse_request(self) -> bool:
        """http.server's parsing with two more rules: headers total at most 64 KiB (431), and a
        request line must carry an HTTP version (an HTTP/0.9 request gets a 400, with headers)."""
        stream = self.rfile
        self.rfile = _HeaderBudget(stream, MAX_HEADER_BYTES)  # type: ignore[assignment]
        try:
            parsed = super().parse_request()
        finally:
            self.rfile = stream
        if parsed and self.request_version == "HTTP/0.9":
            self.send_error(400, "the request line has no HTTP version (expected 'METHOD PATH HTTP/1.1')")
            return False
        return parsed

    def _dispatch(self) -> None:
        with self.server.busy():
            self.server.hooks.handle(self)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _dispatch

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own rejections (bad request line, headers, unknown method) as JSON errors."""
        headers: dict[str, str] = {}
        if code == 501:  # a method no route uses
            error: HookApiError = self._unsupported_method()
            if isinstance(error, MethodNotAllowed):
                headers["Allow"] = ", ".join(error.allowed)
        elif code == 431:
            error = HeadersTooLarge(
                f"the request headers are over {MAX_HEADER_BYTES // 1024} KiB or 100 lines"
            )
        else:  # 400 bad syntax, 414 request line too long, 505 version
            error = BadRequest(f"malformed HTTP request: {message or code}")
        self.close_connection = True
        if self.request_version == "HTTP/0.9":  # unparsable request line: still answer with headers
            self.request_version = self.protocol_version
        try:
            HookServer._reply(self, error.status, error.to_body(), headers)
        except OSError:
            return
        self.server.hooks.log_request(
            {
                "method": str(getattr(self, "command", None) or "?")[:20],
                "path": urlsplit(str(getattr(self, "path", None) or "?")).path[:LOGGED_PATH_CHARS],
                "status": error.status,
                "ms": 0.0,
                "error": str(error.code),
            }
        )

    def _unsupported_method(self) -> HookApiError:
        path = unquote(urlsplit(self.path).path)
        hooks = self.server.hooks
        try:  # the guard first, as for every other request: no probing from other sites or users
            hooks.guard.check_request(str(self.command), path, self.headers)
            hooks.wait_attached()
        except HookApiError as exc:
            return exc
        assert hooks.router is not None
        try:
            hooks.router.match("", path)
        except HookApiError as exc:
            if isinstance(exc, MethodNotAllowed):
                return MethodNotAllowed(
                    f"method {self.command!r} is not supported; use {', '.join(exc.allowed)}", exc.allowed
                )
            return exc
        raise AssertionError("no route has an empty method")

    def log_message(self, format: str, *args: Any) -> None:  # every request goes to apihooks.log instead
        pass


class _HeaderBudget:
    """Wraps a request's stream while its headers are parsed: past ``limit`` bytes, a header
    line is "too long" (http.server then answers 431)."""

    def __init__(self, stream: Any, limit: int) -> None:
        self._stream = stream
        self._left = limit

    def readline(self, size: int = -1) -> bytes:
        want = self._left + 1 if size < 0 else min(size, self._left + 1)
        line = self._stream.readline(want)
        self._left -= len(line)
        if self._left < 0:
            raise http.client.LineTooLong("request headers")
        return line

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _HttpServer(ThreadingHTTPServer):
    """ThreadingHTTPServer whose connection threads are named, tracked and closable."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 128  # the default 5 resets connections when many clients arrive at once

    def __init__(self, address: tuple[str, int], hooks: HookServer, family: socket.AddressFamily) -> None:
        self.address_family = family
        self.hooks = hooks
        self._counter = itertools.count(1)
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._connections: dict[threading.Thread, socket.socket] = {}
        self._busy: set[threading.Thread] = set()  # connections handling a request right now
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        """Bind without http.server's ``socket.getfqdn(host)``: a reverse name lookup (tens of
        milliseconds at a cold start, loading the resolver and the IDNA codec) for
        ``server_name``, which nothing here uses."""
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self._serve_connection,
            args=(request, client_address),
            name=f"slop-hook-{next(self._counter)}",
            daemon=True,
        )
        with self._lock:
            self._connections[thread] = request
        thread.start()

    def _serve_connection(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except OSError as exc:  # the client went away mid-reply
            _log().debug("hook connection %s: %s", client_address, exc)
        except Exception:
            _log().exception("hook connection %s failed", client_address)
        finally:
            self.shutdown_request(request)
            with self._lock:
                self._connections.pop(threading.current_thread(), None)

    def connection_threads(self) -> list[threading.Thread]:
        with self._lock:
            return list(self._connections)

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        """Mark the calling connection as handling a request (not to be closed while idle ones are)."""
        thread = threading.current_thread()
        with self._lock:
            self._busy.add(thread)
        try:
            yield
        finally:
            with self._lock:
                self._busy.discard(thread)
                self._idle.notify_all()

    def wait_until_idle(self, timeout: float) -> bool:
        with self._lock:
            return self._idle.wait_for(lambda: not self._busy, timeout)

    def close_connections(self, idle_only: bool = False) -> None:
        """Shut down connection sockets, waking threads that wait for a next request on them."""
        with self._lock:
            sockets = [s for t, s in self._connections.items() if not (idle_only and t in self._busy)]
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        _log().exception("hook connection %s failed", client_address)
