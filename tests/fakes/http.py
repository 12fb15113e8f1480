"""The HTTP machinery shared by the fake provider servers.

:class:`FakeServer` listens on ``127.0.0.1`` on a free port, records every
request (:class:`Recorded`) and answers model calls from a script of turns
(:mod:`tests.fakes.script`). Subclasses route paths and render turns in their
provider's wire format; this module handles the transport: JSON and SSE
responses (SSE as chunked transfer so chunks can be spaced out in time), keep-alive
connections that are cut when the server stops, and the failure turns (HTTP
errors, hangs, truncated and non-JSON bodies).

Use it as a context manager (``with AnthropicFake([Reply("hi")]) as fake:``);
``stop()`` closes open connections and joins every thread it started.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes.script import Fail, Hang, Json, Raw, Reply, Reset, Truncated, Turn

__all__ = ["Answer", "Cut", "FakeServer", "QuietHTTPServer", "Recorded", "Response", "Stream"]


@dataclass(frozen=True, slots=True)
class Recorded:
    """One request as the fake received it."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any  # parsed JSON, or the raw text when it is not JSON
    ts: float = field(default_factory=time.monotonic)

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass(slots=True)
class Response:
    """A complete JSON (or raw) answer."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"


@dataclass(slots=True)
class Cut:
    """Send ``rendered`` but cut the connection halfway through its body."""

    rendered: Response | Stream
    mid_event: bool = False  # a stream stops inside a frame (half its bytes sent)


@dataclass(slots=True)
class Stream:
    """An SSE answer: ``events`` are already-formatted SSE frames (``"data: ...\\n\\n"``)."""

    events: list[str]
    chunk_delay: float = 0.0
    cut_after: int | None = None  # close the connection after this many frames (truncation)
    cut_mid_frame: bool = False  # when cutting, send half of the next frame first
    headers: dict[str, str] = field(default_factory=dict)


Answer = Response | Stream | Cut | Hang | Reset


class QuietHTTPServer(ThreadingHTTPServer):
    """A test server that does not print a traceback when a client hangs up mid-request: the
    fault and timeout tests do that on purpose. Any other error is printed as before."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exception(), ConnectionError):  # reset, broken pipe, aborted
            return
        super().handle_error(request, client_address)


class _Server(QuietHTTPServer):
    daemon_threads = True
    block_on_close = True
    allow_reuse_address = True

    def __init__(self, owner: FakeServer) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30  # an idle keep-alive connection is dropped after this long
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        # Answers go out at once: Nagle's algorithm plus the client's delayed ACK would
        # otherwise add ~40 ms to some round trips (and skew benchmarks).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.owner._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._track(self.connection, add=False)

    def _serve(self) -> None:
        owner = self.server.owner
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        record = Recorded(
            self.command,
            parts.path,
            parse_qs(parts.query),
            {k.lower(): v for k, v in self.headers.items()},
            body,
        )
        owner._record(record)
        try:
            answer = owner.route(record)
        except Exception as exc:  # a bug in the fake: make it loud, not a hang
            answer = Response(500, {"error": {"message": f"fake server bug: {type(exc).__name__}: {exc}"}})
        self._send(answer)

    do_GET = do_POST = do_DELETE = do_PATCH = _serve

    # -- writing -----------------------------------------------------------------------
    def _send(self, answer: Answer) -> None:
        owner = self.server.owner
        if isinstance(answer, Hang):
            owner.stopping.wait(answer.seconds)
            self.close_connection = True
            return
        if isinstance(answer, Reset):
            self.close_connection = True
            _reset(self.connection)
            return
        if isinstance(answer, Stream):
            self._send_stream(answer)
            return
        if isinstance(answer, Cut):
            self._send_truncated(answer.rendered, mid_event=answer.mid_event)
            return
        assert isinstance(answer, Response)
        if isinstance(answer.body, bytes | str) and not isinstance(answer.body, dict):
            data = answer.body.encode("utf-8") if isinstance(answer.body, str) else answer.body
        else:
            data = json.dumps(answer.body).encode("utf-8")
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in answer.headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_stream(self, stream: Stream) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for key, value in stream.headers.items():
            self.send_header(key, value)
        self.end_headers()
        owner = self.server.owner
        for index, frame in enumerate(stream.events):
            if stream.cut_after is not None and index >= stream.cut_after:
                if stream.cut_mid_frame:  # half an event: the parser holds an unfinished frame
                    half = frame.encode("utf-8")[: max(1, len(frame) // 2)]
                    self.wfile.write(f"{len(half):x}\r\n".encode() + half + b"\r\n")
                self.wfile.flush()
                self.close_connection = True
                _hard_close(self.connection)
                return
            if index and stream.chunk_delay and owner.stopping.wait(stream.chunk_delay):
                return
            data = frame.encode("utf-8")
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def _send_truncated(self, rendered: Response | Stream, *, mid_event: bool = False) -> None:
        if isinstance(rendered, Stream):
            rendered.cut_after = max(1, len(rendered.events) // 2)
            rendered.cut_mid_frame = mid_event
            self._send_stream(rendered)
            return
        data = json.dumps(rendered.body).encode("utf-8")
        self.send_response(rendered.status)
        self.send_header("Content-Type", rendered.content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data[: len(data) // 2])
        self.wfile.flush()
        self.close_connection = True
        _hard_close(self.connection)


def _hard_close(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_RDWR)


def _reset(conn: socket.socket) -> None:
    """Close with SO_LINGER 0: the kernel sends RST instead of FIN (a connection reset)."""
    with contextlib.suppress(OSError):
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()


class FakeServer:
    """A scripted HTTP server on a free loopback port (subclasses speak one protocol)."""

    protocol = "fake"

    def __init__(self, turns: Iterable[Turn] = ()) -> None:
        self._turns: deque[Turn] = deque(turns)
        self._lock = threading.Lock()
        self._requests: list[Recorded] = []
        self._connections: set[socket.socket] = set()
        self.stopping = threading.Event()
        self.unscripted = 0  # model calls that found the script empty
        # answers by content, for calls whose order is not fixed (parallel work): a turn, or None
        # to take the next scripted one
        self.responder: Callable[[Recorded], Turn | None] | None = None
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifetime --------------------------------------------------------------------------
    def start(self) -> FakeServer:
        self._httpd = _Server(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name=f"fake-{self.protocol}"
        )
        self._thread.daemon = True
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self.stopping.set()
        self._httpd.shutdown()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:  # wake handler threads parked on keep-alive reads
            _hard_close(conn)
        self._httpd.server_close()  # joins the handler threads (block_on_close)
        if self._thread is not None:
            self._thread.join(5)
        self._httpd = None

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- script and records ------------------------------------------------------------------
    def push(self, *turns: Turn) -> None:
        """Append turns to the script."""
        with self._lock:
            self._turns.extend(turns)

    def remaining(self) -> int:
        with self._lock:
            return len(self._turns)

    def next_turn(self) -> Turn | None:
        with self._lock:
            if self._turns:
                return self._turns.popleft()
            self.unscripted += 1
            return None

    @property
    def requests(self) -> list[Recorded]:
        with self._lock:
            return list(self._requests)

    def _record(self, record: Recorded) -> None:
        with self._lock:
            self._requests.append(record)

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    # -- routing -----------------------------------------------------------------------------
    def route(self, request: Recorded) -> Answer:
        """Answer ``request``; subclasses override."""
        return Response(404, {"error": {"message": f"no route for {request.method} {request.path}"}})

    def answer_model_call(self, request: Recorded, stream: bool) -> Answer:
        """The responder's turn, or the next scripted one, rendered for this protocol (the common
        part of every model call)."""
        turn = self.responder(request) if self.responder is not None else None
        if turn is None:
            turn = self.next_turn()
        if turn is None:
            return Response(
                418,
                self.error_body(
                    418, f"fake {self.protocol} server: no scripted turn left for {request.path}"
                ),
            )
        if turn.delay and self.stopping.wait(turn.delay):
            return Hang(0)
        if isinstance(turn, Hang | Reset):
            return turn
        if isinstance(turn, Fail):
            body = turn.body if turn.body is not None else self.error_body(turn.status, _reason(turn.status))
            if isinstance(body, str):
                return Response(turn.status, body, turn.headers, content_type="text/plain")
            return Response(turn.status, body, turn.headers)
        if isinstance(turn, Raw):
            return Response(turn.status, turn.body, content_type=turn.content_type)
        if isinstance(turn, Json):
            return Response(turn.status, turn.obj)
        if isinstance(turn, Truncated):
            return Cut(self.render_reply(request, turn.reply, stream), mid_event=turn.mid_event)
        assert isinstance(turn, Reply), f"unknown turn {turn!r}"
        return self.render_reply(request, turn, stream)

    def render_reply(self, request: Recorded, reply: Reply, stream: bool) -> Response | Stream:
        raise NotImplementedError

    def error_body(self, status: int, message: str) -> Any:
        return {"error": {"code": status, "message": message}}

    # -- helpers for subclasses --------------------------------------------------------------
    @staticmethod
    def estimate_tokens(value: Any) -> int:
        return max(1, len(json.dumps(value, default=str)) // 4)

    @staticmethod
    def sse(data: Any, event: str | None = None) -> str:
        payload = data if isinstance(data, str) else json.dumps(data)
        head = f"event: {event}\n" if event else ""
        return f"{head}data: {payload}\n\n"

    def model_calls(self) -> list[Recorded]:
        """Recorded requests that consumed a turn (subclasses say which paths those are)."""
        return [r for r in self.requests if self.is_model_call(r)]

    def is_model_call(self, request: Recorded) -> bool:
        return False

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[Recorded]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.requests) >= count:
                return self.requests
            time.sleep(0.01)
        raise AssertionError(f"expected {count} requests, got {len(self.requests)}")

    def iter_bodies(self) -> Iterator[Any]:
        for request in self.model_calls():
            yield request.body


_REASONS = {
    400: "bad request",
    401: "invalid api key",
    402: "insufficient balance",
    403: "permission denied",
    404: "not found",
    429: "rate limited",
    500: "internal server error",
    502: "bad gateway",
    503: "service unavailable",
    529: "overloaded",
}


def _reason(status: int) -> str:
    return _REASONS.get(status, f"status {status}")
