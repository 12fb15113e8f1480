"""ApiHookClient: drive a running Manual Slop over its Hook API (stdlib only).

Imported as ``manual_slop.hooks.client.ApiHookClient``, where it is re-exported.

One kept-alive HTTP connection per calling thread; safe to share between threads.
Error replies are raised as the classes of :mod:`manual_slop.hooks.errors`
(``NotFound``, ``Conflict``, ...). The token comes from the argument, else
``SLOP_HOOK_TOKEN``, else the per-user runtime file the app writes for its port
(:mod:`manual_slop.hooks.token`), so a client on the same machine needs no setup.

Events are delivered exactly once: :meth:`ApiHookClient.events` returns everything after
the client's cursor, and :meth:`ApiHookClient.wait_for_event` takes the first match and
keeps the events it skipped for later calls, so nothing is lost between calls.

Its command line is ``python -m manual_slop.hooks.client`` (:mod:`manual_slop.hooks.cli`).
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from manual_slop.hooks.errors import (
    HookConnectionError,
    HookTaskFailed,
    HookWaitTimeout,
    error_for,
)
from manual_slop.hooks.guard import BODY_METHODS, is_loopback
from manual_slop.hooks.token import discover_token

__all__ = ["DEFAULT_URL", "ApiHookClient"]

DEFAULT_URL = "http://127.0.0.1:8999"
EVENT_BUFFER_LIMIT = 100_000  # events fetched but not yet taken; the oldest go first beyond this
_POLL_S = 0.05

Predicate = Callable[[Any], bool]
ReplyObserver = Callable[[str, str, int, Any], None]


class ApiHookClient:
    """A token-aware client of the Hook API."""

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        timeout: float = 10.0,
        *,
        port: int | None = None,
        on_reply: ReplyObserver | None = None,
    ) -> None:
        """``port`` alone means ``http://127.0.0.1:PORT``. ``token=None`` finds the token
        (``SLOP_HOOK_TOKEN``, else the app's runtime file for the port); ``''`` sends none.
        ``on_reply(method, path, status, decoded body)`` sees every reply (tracing, contract tests)."""
        if base_url is None:
            base_url = f"http://127.0.0.1:{port}" if port is not None else DEFAULT_URL
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"base_url must look like http://HOST:PORT, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.host = parts.hostname
        self.port = parts.port or 80
        self._given_token = token
        self._found_token: str | None = None
        self.timeout = timeout
        self.on_reply = on_reply
        self._local = threading.local()
        self._events_lock = threading.Lock()
        self._event_cursor = 0
        self._event_buffer: deque[dict[str, Any]] = deque()

    # =====================================================================================
    # transport
    # =====================================================================================
    @property
    def token(self) -> str:
        """The bearer token sent ('' for none)."""
        if self._given_token is not None:
            return self._given_token
        if not self._found_token:
            self._found_token = discover_token(self.port if is_loopback(self.host) else None)
        return self._found_token

    def request(self, method: str, path: str, body: Any = None, *, timeout: float | None = None) -> Any:
        """One call; the decoded JSON reply. Error replies raise HookApiError subclasses."""
        if body is None and method in BODY_METHODS:
            body = {}  # the server takes JSON bodies only
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        token = self.token
        if token:
            headers["Authorization"] = f"Bearer {token}"
        wait = self.timeout if timeout is None else timeout
        for attempt in (1, 2):
            conn, reused = self._connection()
            try:
                conn.timeout = wait
                if conn.sock is not None:
                    conn.sock.settimeout(wait)
                conn.request(method, path, body=data, headers=headers)
                response = conn.getresponse()
                status, raw = response.status, response.read()
                if response.will_close:
                    self._drop_connection()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                self._drop_connection()
                if reused and attempt == 1:  # the server closed an idle kept-alive connection: retry once
                    continue
                raise HookConnectionError(f"{method} {self.base_url}{path}: connection lost ({exc})") from exc
            except TimeoutError as exc:
                self._drop_connection()
                raise HookWaitTimeout(f"{method} {path}: no reply within {wait:g} s") from exc
            except OSError as exc:
                self._drop_connection()
                raise HookConnectionError(f"{method} {self.base_url}{path}: {exc}") from exc
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = None
        if status == 401 and self._given_token is None:
            self._found_token = None  # the app may have restarted with a new token: look again next time
        if self.on_reply is not None:
            self.on_reply(method, path, status, payload)
        if status >= 400:
            error = payload.get("error") if isinstance(payload, dict) else None
            if isinstance(error, dict):
                raise error_for(status, str(error.get("code")), str(error.get("message", "")))
            raise error_for(status, None, f"HTTP {status}: {raw[:200]!r}")
        return payload

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            return conn, True
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        self._local.conn = conn
        return conn, False

    def _drop_connection(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            conn.close()

    def close(self) -> None:
        """Close the calling thread's connection (others close when their threads end)."""
        self._drop_connection()

    def __enter__(self) -> ApiHookClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, path: str, **query: Any) -> Any:
        query = {k: v for k, v in query.items() if v is not None}
        return self.request("GET", f"{path}?{urlencode(query)}" if query else path)

    def post(self, path: str, body: Any = None, *, timeout: float | None = None) -> Any:
        return self.request("POST", path, {} if body is None else body, timeout=timeout)

    # =====================================================================================
    # status
    # =====================================================================================
    def wait_for_server(self, timeout: float = 10.0) -> dict[str, Any]:
        """Poll ``/status`` until the server answers and its app is built (a headless start
        answers ``/status`` before: ``ready`` false); its status."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                status = self.status()
                if status.get("ready", True):
                    return status
                error: Exception | None = None
            except HookConnectionError as exc:
                error = exc
            if time.monotonic() >= deadline:
                what = "no hook server" if error is not None else "the app is still starting"
                raise HookWaitTimeout(f"{what} at {self.base_url} after {timeout:g} s") from error
            time.sleep(_POLL_S)

    def status(self) -> dict[str, Any]:
        return self.get("/status")

    def health(self) -> dict[str, Any]:
        return self.get("/api/gui_health")

    def diagnostics(self) -> dict[str, Any]:
        return self.get("/api/diagnostics")

    def usage(self) -> dict[str, Any]:
        """The session's tokens and dollars per provider, model, tier, track, ticket and subtask."""
        return self.get("/api/usage")

    def openapi(self) -> dict[str, Any]:
        return self.get("/openapi.json")

    def shutdown(self) -> None:
        """Ask the app to stop (it saves first)."""
        self.post("/api/shutdown")

    # =====================================================================================
    # fields, actions, tasks
    # =====================================================================================
    def state(self) -> dict[str, Any]:
        return self.get("/api/gui/state")["fields"]

    def get_value(self, field: str) -> Any:
        return self.get(f"/api/gui/value/{quote(field, safe='')}")["value"]

    def set_value(self, field: str, value: Any) -> str:
        """Queue a field change; its task id."""
        return self.post("/api/gui", {"action": "set_value", "item": field, "value": value})["task_id"]

    def click(self, action: str, user_data: Any = None) -> str:
        body: dict[str, Any] = {"action": "click", "item": action}
        if user_data is not None:
            body["user_data"] = user_data
        return self.post("/api/gui", body)["task_id"]

    def select_list_item(self, listbox: str, item: str) -> str:
        return self.post("/api/gui", {"action": "select_list_item", "listbox": listbox, "item": item})[
            "task_id"
        ]

    def select_tab(self, tab_bar: str, tab: str) -> str:
        return self.post("/api/gui", {"action": "select_tab", "tab_bar": tab_bar, "tab": tab})["task_id"]

    def task(self, task_id: str) -> dict[str, Any]:
        return self.get(f"/api/gui/task/{quote(task_id, safe='')}")

    def wait_for_task(self, task_id: str, timeout: float = 10.0) -> dict[str, Any]:
        """Wait until the task ran; HookTaskFailed when it ended in ``error``."""
        status = self._poll(
            lambda: self.task(task_id), lambda s: s["state"] != "queued", timeout, f"task {task_id}"
        )
        if status["state"] == "error":
            raise HookTaskFailed(task_id, status["error"] or "")
        return status

    def wait_for_value(self, field: str, predicate: Predicate, timeout: float = 10.0) -> Any:
        """Poll a field until ``predicate(value)`` holds; the value."""
        return self._poll(lambda: self.get_value(field), predicate, timeout, f"field {field}")

    def _poll(self, read: Callable[[], Any], predicate: Predicate, timeout: float, what: str) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = read()
            if predicate(value):
                return value
            if time.monotonic() >= deadline:
                raise HookWaitTimeout(
                    f"{what}: condition not met within {timeout:g} s (last: {value!r:.200})"
                )
            time.sleep(_POLL_S)

    # =====================================================================================
    # events
    # =====================================================================================
    def read_events(self, since: int = 0, timeout: float = 0.0, limit: int | None = None) -> dict[str, Any]:
        """One raw read of ``/api/events`` (no cursor): ``{"events", "next", "dropped"}``."""
        query = {"since": since, "timeout": timeout, "limit": limit}
        query = {k: v for k, v in query.items() if v is not None}
        return self.request("GET", f"/api/events?{urlencode(query)}", timeout=self.timeout + timeout)

    def events(self, since: int | None = None, timeout: float = 0.0) -> list[dict[str, Any]]:
        """Events after ``since``; without it, every event this client has not returned yet."""
        if since is not None:
            return self.read_events(since, timeout)["events"]
        with self._events_lock:
            self._fetch(timeout if not self._event_buffer else 0.0)
            taken = list(self._event_buffer)
            self._event_buffer.clear()
        return taken

    def discard_events(self) -> int:
        """Skip every event so far (later calls see only newer ones); the new cursor."""
        with self._events_lock:
            self._event_buffer.clear()
            while True:
                page = self.read_events(self._event_cursor, 0.0)
                self._event_cursor = page["next"]
                if not page["events"]:
                    return self._event_cursor

    def wait_for_event(
        self, event_type: str, predicate: Predicate | None = None, timeout: float = 10.0
    ) -> dict[str, Any]:
        """The first not-yet-returned event of ``event_type`` matching ``predicate(payload)``."""
        deadline = time.monotonic() + timeout
        with self._events_lock:
            while True:
                for event in list(self._event_buffer):
                    if event["type"] == event_type and (predicate is None or predicate(event["payload"])):
                        self._event_buffer.remove(event)
                        return event
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise HookWaitTimeout(f"no {event_type!r} event matched within {timeout:g} s")
                self._fetch(min(remaining, 5.0))

    def _fetch(self, timeout: float) -> None:
        page = self.read_events(self._event_cursor, timeout)
        self._event_cursor = page["next"]
        self._event_buffer.extend(page["events"])
        while len(self._event_buffer) > EVENT_BUFFER_LIMIT:
            self._event_buffer.popleft()

    # =====================================================================================
    # approvals
    # =====================================================================================
    def pending(self) -> list[dict[str, Any]]:
        return self.get("/api/pending")["pending"]

    def resolve(
        self, dialog_id: str, approved: bool, payload: dict[str, Any] | None = None, abort: bool = False
    ) -> dict[str, Any]:
        """Decide a dialog: ``{"resolved": true}``. ``payload`` holds edits of its editable keys
        and ``reason`` (recorded with the decision; told to the model on rejection)."""
        body: dict[str, Any] = {"approved": approved}
        if payload is not None:
            body["payload"] = payload
        if abort:
            body["abort"] = True
        return self.post(f"/api/pending/{quote(dialog_id, safe='')}", body)

    def approve(self, dialog_id: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
        """Approve, optionally with edits to the dialog's editable keys."""
        return self.resolve(dialog_id, True, payload)

    def reject(self, dialog_id: str, reason: str = "", abort: bool = False) -> dict[str, Any]:
        return self.resolve(dialog_id, False, {"reason": reason} if reason else None, abort)

    def ask(
        self,
        question: str,
        tool: str = "",
        args: dict[str, Any] | None = None,
        timeout_s: float | None = None,
    ) -> dict[str, Any]:
        """Block until the user answers: ``{"approved", "answer", "args", "id", "reason"}``."""
        body: dict[str, Any] = {"question": question, "tool": tool, "args": args or {}}
        if timeout_s is not None:
            body["timeout_s"] = timeout_s
        wait = None if timeout_s is None else timeout_s + self.timeout  # the server bounds the wait
        return self.request("POST", "/api/ask", body, timeout=wait)

    def request_confirmation(
        self, tool: str, args: dict[str, Any], timeout_s: float | None = None
    ) -> dict[str, Any]:
        """Ask the user whether ``tool`` may run with ``args`` (the reply's ``args`` may be edited)."""
        return self.ask(f"Allow {tool}?", tool, args, timeout_s)

    # =====================================================================================
    # requests, logs, discussion, MMA
    # =====================================================================================
    def send(self, message: str) -> str:
        """Gen + Send; the request id."""
        return self.post("/api/send", {"message": message})["request_id"]

    def request_status(self, request_id: str) -> dict[str, Any]:
        return self.get(f"/api/requests/{quote(request_id, safe='')}")

    def wait_for_request(self, request_id: str, timeout: float = 120.0) -> dict[str, Any]:
        """Wait until the request is done, failed or cancelled; its final status."""
        return self._poll(
            lambda: self.request_status(request_id),
            lambda s: s["state"] in ("done", "error", "cancelled"),
            timeout,
            f"request {request_id}",
        )

    def cancel(self, request_id: str) -> dict[str, Any]:
        """Stop a request: ``{"request_id", "state"}`` (``cancelling`` until it let go, then
        ``cancelled``); Conflict when it already ended."""
        return self.post(f"/api/requests/{quote(request_id, safe='')}/cancel")

    def comms(self, since: int = 0, limit: int | None = None) -> dict[str, Any]:
        return self.get("/api/comms", since=since, limit=limit)

    def tool_calls(self, since: int = 0, limit: int | None = None) -> dict[str, Any]:
        return self.get("/api/tool_calls", since=since, limit=limit)

    def session(self) -> dict[str, Any]:
        return self.get("/api/session")

    def add_session_entry(self, role: str, content: str) -> None:
        self.post("/api/session/entries", {"role": role, "content": content})

    def mma_graph(self, format: str = "json", track: str | None = None) -> dict[str, Any]:
        """A track's ticket DAG (default the active track): nodes and edges, or ``format="mermaid"``
        for a Mermaid flowchart under ``"mermaid"``."""
        return self.get("/api/mma/graph", format=format, track=track)

    def mma_status(self) -> dict[str, Any]:
        return self.get("/api/mma/status")
