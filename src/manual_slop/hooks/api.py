"""The endpoints of the Hook API, bound to one controller.

Handlers run on the HTTP server's threads and never write controller state: reads of
GUI-owned state go through the main-thread trampoline (:meth:`HookApi.on_main`, a
timeout gives 408), writes are validated against the automation registries and then
queued as task dicts (202 with a task id), approvals block on the Execution Clutch.
:meth:`HookApi.routes` is the route table; :mod:`.openapi` renders it as the document
served at ``/openapi.json``.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from manual_slop.automation import AutomationError, FeatureUnavailable
from manual_slop.clutch import ResolveOutcome
from manual_slop.dialogs import AskDialog, Decider, DialogPayloadError
from manual_slop.events import json_snapshot
from manual_slop.governance.metrics_bindings import metrics_snapshot
from manual_slop.hooks.agents_api import agent_routes
from manual_slop.hooks.errors import BadRequest, Conflict, HookApiError, NotFound, RequestTimedOut
from manual_slop.hooks.graph_api import graph_routes
from manual_slop.hooks.mcp_api import mcp_routes
from manual_slop.hooks.mcp_serve_api import mcp_serve_routes
from manual_slop.hooks.memory_api import memory_routes
from manual_slop.hooks.plan_api import plan_routes
from manual_slop.hooks.routes import Call, QueryParam, Reply, Route
from manual_slop.hooks.rules_api import rule_routes
from manual_slop.hooks.runs_api import run_routes
from manual_slop.hooks.skills_api import skill_routes
from manual_slop.hooks.status import status_body
from manual_slop.hooks.usage_api import usage_routes

if TYPE_CHECKING:
    from manual_slop.controller import AppController

__all__ = ["HookApi", "automation_error"]

EVENTS_MAX_WAIT_S = 30.0
LONG_POLL_SLICE_S = 0.25  # how often a long poll checks whether the server is stopping
SHUTTING_DOWN = "the app is shutting down"

_SINCE = QueryParam("since", int, 0, 0, 2**53, "return entries with seq greater than this")
_EVENTS_TIMEOUT = QueryParam(
    "timeout", float, 0.0, 0.0, EVENTS_MAX_WAIT_S, "seconds to wait for the first event (long poll)"
)
_EVENTS_LIMIT = QueryParam("limit", int, 1000, 1, 10_000, "at most this many events")
_LOG_LIMIT = QueryParam("limit", int, 200, 1, 1000, "at most this many entries")

TICKET_DEFAULTS: dict[str, Any] = {
    "id": "",
    "description": "",
    "status": "todo",
    "depends_on": [],
    "assigned_to": None,
    "retry_count": 0,
    "blocked_reason": None,
    "model_override": None,
}


def automation_error(exc: AutomationError) -> HookApiError:
    """The reply for a rejected automation request: 409 for unbuilt features, else 400."""
    if isinstance(exc, FeatureUnavailable):
        message = str(exc)
        return Conflict(message if "not available yet" in message else f"not available yet: {message}")
    return BadRequest(str(exc))


@dataclass(frozen=True, slots=True)
class _Raised:
    """An automation error carried back from the main thread to the hook thread."""

    error: AutomationError


def _unwrap(result: Any) -> Any:
    if isinstance(result, _Raised):
        raise result.error
    return result


class HookApi:
    """Endpoint handlers for one controller; safe to call from many threads at once."""

    def __init__(self, controller: AppController, *, main_timeout: float = 5.0) -> None:
        self.ctrl = controller
        self.main_timeout = main_timeout
        self.openapi: dict[str, Any] = {}  # set by the server once the table is rendered
        self._stopping = threading.Event()
        self._asks: set[AskDialog] = set()
        self._asks_lock = threading.Lock()

    # =====================================================================================
    # plumbing
    # =====================================================================================
    def on_main(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` on the main thread and return its result; 408 when the frame loop does not
        get to it within ``main_timeout``. A timed-out call is cancelled, never run late (a 408
        from ``/api/send`` means nothing was sent)."""
        lock = threading.Lock()
        stage = ["queued"]  # queued -> running | cancelled
        future: Future[Any] = Future()

        def guarded() -> Any:
            with lock:
                if stage[0] == "cancelled":
                    return None
                stage[0] = "running"
            try:
                return fn()
            except AutomationError as exc:  # the client's mistake: its reply, not an app error event
                return _Raised(exc)

        if (
            self.ctrl.post_gui_task({"action": "custom_callback", "callback": guarded, "future": future})
            is None
        ):
            raise Conflict(SHUTTING_DOWN)
        try:
            return _unwrap(future.result(self.main_timeout))
        except FutureTimeout:
            with lock:
                cancelled = stage[0] == "queued"
                if cancelled:
                    stage[0] = "cancelled"
            if cancelled:
                raise RequestTimedOut(
                    f"the main thread did not answer within {self.main_timeout:g} s (GET /api/gui_health)"
                ) from None
        try:  # it started just in time: let it finish
            return _unwrap(future.result(self.main_timeout))
        except FutureTimeout:
            raise RequestTimedOut(
                f"the main thread is still busy after {2 * self.main_timeout:g} s"
            ) from None

    def _queue(self, task: dict[str, Any]) -> Reply:
        task_id = self.ctrl.post_gui_task({**task, "source": "hook"})
        if task_id is None:
            raise Conflict(SHUTTING_DOWN)
        return Reply({"queued": True, "task_id": task_id}, 202)

    def close(self) -> None:
        """Wake long polls and reject every ask still waiting (the server is stopping)."""
        self._stopping.set()
        with self._asks_lock:
            asks = list(self._asks)
        for dialog in asks:
            dialog.resolve(False, decider=Decider.SHUTDOWN, reason="the hook server is stopping")

    # =====================================================================================
    # status
    # =====================================================================================
    def status(self, call: Call) -> dict[str, Any]:
        return status_body(self.ctrl.mode, self.ctrl.started_at)

    def gui_health(self, call: Call) -> dict[str, Any]:
        return self.ctrl.health()

    def diagnostics(self, call: Call) -> dict[str, Any]:
        return {**self.ctrl.perf.get_metrics(), "metrics": metrics_snapshot(self.ctrl)}

    def openapi_document(self, call: Call) -> dict[str, Any]:
        return self.openapi

    def shutdown(self, call: Call) -> Reply:
        return Reply({"shutting_down": True}, after=self.ctrl.request_stop)

    # =====================================================================================
    # the automation surface
    # =====================================================================================
    def gui_state(self, call: Call) -> dict[str, Any]:
        return {"fields": self.on_main(lambda: json_snapshot(self.ctrl.fields.snapshot()))}

    def gui_value(self, call: Call) -> dict[str, Any]:
        name = call.params["field"]
        try:
            spec = self.ctrl.fields.spec(name)
        except AutomationError as exc:
            raise NotFound(str(exc)) from None
        if spec.lock_free and self.ctrl.tasks_settled():
            # One immutable attribute, and every queued write has run: as fresh as the trampoline.
            return {"field": name, "value": spec.getter()}
        return {"field": name, "value": self.on_main(lambda: json_snapshot(self.ctrl.fields.get(name)))}

    def post_gui(self, call: Call) -> Reply:
        body = call.body
        action = body["action"]
        ctrl = self.ctrl
        try:
            if action == "set_value":
                value = ctrl.fields.validate_set(body["item"], body["value"])
                return self._queue({"action": action, "item": body["item"], "value": value})
            if action == "click":
                user_data = ctrl.actions.validate(body["item"], body.get("user_data"))
                return self._queue({"action": action, "item": body["item"], "user_data": user_data})
            if action == "select_list_item":
                self._check_selectable(ctrl.listboxes, body["listbox"], body["item"])
                return self._queue({"action": action, "listbox": body["listbox"], "item": body["item"]})
            self._check_selectable(ctrl.tab_bars, body["tab_bar"], body["tab"])
            return self._queue({"action": action, "tab_bar": body["tab_bar"], "tab": body["tab"]})
        except AutomationError as exc:
            raise automation_error(exc) from None

    def _check_selectable(self, registry: Any, name: str, item: str) -> None:
        spec = registry.spec(name)
        items = self.on_main(lambda: list(spec.items()))
        if item not in items:
            shown = ", ".join(items) or "none"
            raise BadRequest(f"{registry.kind} {name!r} has no item {item!r}; items: {shown}")

    def task_status(self, call: Call) -> dict[str, Any]:
        task_id = call.params["task_id"]
        status = self.ctrl.tasks.get(task_id)
        if status is None:
            raise NotFound(f"no task {task_id!r} (unknown, or forgotten after 20,000 newer tasks)")
        return status.to_dict()

    # =====================================================================================
    # events and logs
    # =====================================================================================
    def events(self, call: Call) -> dict[str, Any]:
        since, limit = int(call.query["since"]), int(call.query["limit"])
        deadline = time.monotonic() + float(call.query["timeout"])
        while True:
            remaining = deadline - time.monotonic()
            wait = max(0.0, min(LONG_POLL_SLICE_S, remaining))
            started = time.monotonic()
            events, next_since, dropped = self.ctrl.journal.read(since, wait, limit)
            if events or remaining <= 0 or self._stopping.is_set():
                break
            spent = time.monotonic() - started
            if spent < wait:  # the journal is closed and returns at once: do not spin
                self._stopping.wait(wait - spent)
        return {"events": [e.to_dict() for e in events], "next": next_since, "dropped": dropped}

    def _log_page(self, attribute: str, call: Call) -> dict[str, Any]:
        since, limit = int(call.query["since"]), int(call.query["limit"])

        def read() -> tuple[list[dict[str, Any]], int]:
            entries = getattr(self.ctrl.state, attribute)
            start = bisect.bisect_right(entries, since, key=lambda entry: entry.get("seq", 0))
            # seqs are consecutive, so the entries after ``since`` the view's budget let go are
            # those before the oldest it holds (the session log on disk still has them)
            oldest = entries[0].get("seq", 0) if entries else since + 1
            return json_snapshot(entries[start : start + limit]), max(0, oldest - since - 1)

        entries, dropped = self.on_main(read)
        return {"entries": entries, "next": entries[-1]["seq"] if entries else since, "dropped": dropped}

    def comms(self, call: Call) -> dict[str, Any]:
        return self._log_page("comms_log", call)

    def tool_calls(self, call: Call) -> dict[str, Any]:
        return self._log_page("tool_calls", call)

    # =====================================================================================
    # approvals
    # =====================================================================================
    def pending(self, call: Call) -> dict[str, Any]:
        return {"pending": [json_snapshot(dialog.to_dict()) for dialog in self.ctrl.clutch.pending()]}

    def resolve_pending(self, call: Call) -> dict[str, Any]:
        uid, body = call.params["id"], call.body
        try:
            outcome = self.ctrl.clutch.resolve(
                uid,
                body["approved"],
                body.get("payload"),
                abort=body.get("abort", False),
                decider=Decider.HOOK,
            )
        except DialogPayloadError as exc:
            raise BadRequest(f"body.payload: {exc}") from None
        if outcome is ResolveOutcome.UNKNOWN:
            raise NotFound(f"no pending dialog {uid!r}")
        if outcome is ResolveOutcome.ALREADY_RESOLVED:
            raise Conflict(f"dialog {uid!r} was already resolved")
        return {"resolved": True}

    def _path_rules(self, tool: str, args: dict[str, Any]) -> tuple[str, str]:
        """``(preapproved, refused)`` for an external agent's file tool, judged like our own: a
        read inside the project is approved, a file the path policy refuses is refused."""
        from manual_slop.tools.approval import build_execution_context
        from manual_slop.tools.external import EXTERNAL_FILE_TOOLS, external_refusal, read_only_approval

        if tool not in EXTERNAL_FILE_TOOLS:
            return "", ""
        try:
            policy = build_execution_context(self.ctrl, timeout=self.main_timeout).policy
        except (TimeoutError, RuntimeError):
            return "", ""  # no policy to check against: the user decides
        refused = external_refusal(tool, args, policy)
        return ("" if refused else read_only_approval(tool, args, policy)), refused

    def ask(self, call: Call) -> dict[str, Any]:
        body = call.body
        dialog = AskDialog(body["question"], body.get("tool", ""), body.get("args"))
        preapproved, refused = self._path_rules(body.get("tool", ""), body.get("args") or {})
        with self._asks_lock:
            self._asks.add(dialog)
        try:
            if self._stopping.is_set():
                dialog.resolve(False, decider=Decider.SHUTDOWN, reason="the hook server is stopping")
            decision = self.ctrl.request_approval(
                dialog, timeout=body.get("timeout_s"), preapproved=preapproved, refused=refused
            )
        finally:
            with self._asks_lock:
                self._asks.discard(dialog)
        if decision.decider == Decider.TIMEOUT and not decision.approved:  # a rule may approve then
            raise RequestTimedOut(f"ask {dialog.uid}: {decision.reason}; it was rejected")
        if decision.decider == Decider.SHUTDOWN:
            raise Conflict(f"ask {dialog.uid}: {SHUTTING_DOWN}; it was rejected")
        payload = json_snapshot(decision.payload)
        return {
            "approved": decision.approved,
            "answer": payload.get("answer"),
            "args": payload.get("args", {}),
            "id": dialog.uid,
            "reason": decision.reason or None,
        }

    # =====================================================================================
    # requests and the discussion
    # =====================================================================================
    def send(self, call: Call) -> dict[str, Any]:
        message = call.body["message"]
        if not message.strip():
            raise BadRequest("body.message: must not be blank")
        try:
            request_id = self.on_main(lambda: self.ctrl.submit_user_message(message))
        except AutomationError as exc:
            raise automation_error(exc) from None
        return {"request_id": request_id}

    def request_status(self, call: Call) -> dict[str, Any]:
        request_id = call.params["id"]
        status = self.ctrl.request_status(request_id)
        if status is None:
            raise NotFound(f"no request {request_id!r}")
        return status

    def cancel_request(self, call: Call) -> dict[str, Any]:
        request_id = call.params["id"]
        try:
            state = self.ctrl.cancel_request(request_id)
        except LookupError:
            raise NotFound(f"no request {request_id!r}") from None
        except ValueError as exc:
            raise Conflict(str(exc)) from None
        return {"request_id": request_id, "state": state}

    def session(self, call: Call) -> dict[str, Any]:
        def read() -> dict[str, Any]:
            state = self.ctrl.state
            return {
                "discussion": state.active_discussion,
                "entries": [_entry(e) for e in state.discussion_entries()],
            }

        return self.on_main(read)

    def add_session_entry(self, call: Call) -> Reply:
        role, content = call.body["role"], call.body["content"]
        if not role.strip():
            raise BadRequest("body.role: must not be blank")
        if not self.ctrl.add_history_entry(role, content):
            raise Conflict(SHUTTING_DOWN)
        return Reply({"queued": True}, 202)

    def mma_status(self, call: Call) -> dict[str, Any]:
        def read() -> dict[str, Any]:
            state = self.ctrl.state
            return json_snapshot(
                {
                    "status": state.mma_status,
                    "active_tier": state.active_tier,
                    "progress": state.mma_progress,
                    "active_track": state.active_track,
                    "proposed_tracks": state.proposed_tracks,
                    "tickets": state.mma_tickets,
                    "tier_usage": state.tier_usage,
                }
            )

        status = self.on_main(read)
        status["status"] = str(status["status"])
        status["progress"] = str(status["progress"] or "")
        status["active_tier"] = None if status["active_tier"] is None else str(status["active_tier"])
        for key in ("active_track", "tier_usage"):
            if not isinstance(status[key], dict):
                status[key] = None if key == "active_track" else {}
        status["proposed_tracks"] = [t for t in status["proposed_tracks"] if isinstance(t, dict)]
        status["tickets"] = [_ticket(t) for t in status["tickets"]]
        return status

    # =====================================================================================
    # the table
    # =====================================================================================
    def routes(self) -> tuple[Route, ...]:
        """Every endpoint, in the order the guide lists them."""
        return (
            Route("GET", "/status", "getStatus", "Liveness, mode, version, pid, uptime (no token needed)",
                  self.status, "Status", auth=False),
            Route("GET", "/api/gui_health", "getGuiHealth",
                  "Is the frame loop alive? Unhealthy when it died or stalled over 2 s",
                  self.gui_health, "Health"),
            Route("GET", "/api/gui/state", "getGuiState", "Every gettable field's value",
                  self.gui_state, "GuiState", errors=(408, 409)),
            Route("GET", "/api/gui/value/{field}", "getGuiValue", "One field's value",
                  self.gui_value, "FieldValue", errors=(404, 408, 409)),
            Route("POST", "/api/gui", "postGuiAction",
                  "Queue set_value, click, select_list_item or select_tab (validated first)",
                  self.post_gui, "Queued", 202, "GuiAction", errors=(408, 409)),
            Route("GET", "/api/gui/task/{task_id}", "getGuiTask", "The outcome of a queued task",
                  self.task_status, "TaskStatus", errors=(404,)),
            Route("GET", "/api/events", "getEvents", "Published events after a sequence number (long poll)",
                  self.events, "Events", query=(_SINCE, _EVENTS_TIMEOUT, _EVENTS_LIMIT)),
            Route("GET", "/api/pending", "getPending", "Dialogs waiting for a decision, oldest first",
                  self.pending, "PendingList"),
            Route("POST", "/api/pending/{id}", "resolvePending", "Approve, edit, reject or abort a dialog",
                  self.resolve_pending, "Resolved", request="ResolvePending", errors=(404, 409)),
            Route("POST", "/api/ask", "ask", "Ask the user; blocks until answered, rejected or timed out",
                  self.ask, "AskAnswer", request="AskRequest", errors=(408, 409)),
            *rule_routes(self.ctrl, self.on_main),
            Route("POST", "/api/send", "send", "Gen + Send a message with the compiled context",
                  self.send, "RequestId", request="SendRequest", errors=(408, 409)),
            Route("GET", "/api/requests/{id}", "getRequest", "State and response of a sent request",
                  self.request_status, "RequestStatus", errors=(404,)),
            Route("POST", "/api/requests/{id}/cancel", "cancelRequest",
                  "Stop a request: it ends as cancelled within a second, its partial answer kept",
                  self.cancel_request, "CancelledRequest", errors=(404, 409)),
            Route("GET", "/api/comms", "getComms", "Comms log entries after a seq",
                  self.comms, "LogPage", query=(_SINCE, _LOG_LIMIT), errors=(408, 409)),
            Route("GET", "/api/tool_calls", "getToolCalls", "Tool-call log entries after a seq",
                  self.tool_calls, "LogPage", query=(_SINCE, _LOG_LIMIT), errors=(408, 409)),
            Route("GET", "/api/session", "getSession", "The active discussion",
                  self.session, "Session", errors=(408, 409)),
            Route("POST", "/api/session/entries", "addSessionEntry", "Append to the active discussion",
                  self.add_session_entry, "EntryQueued", 202, "SessionEntryRequest", errors=(409,)),
            Route("GET", "/api/mma/status", "getMmaStatus", "MMA status, track, proposals, tickets, usage",
                  self.mma_status, "MmaStatus", errors=(408, 409)),
            *graph_routes(self.ctrl, self.on_main),
            *mcp_serve_routes(self.ctrl, self.on_main),
            *memory_routes(self.ctrl, self.on_main),
            *agent_routes(self.ctrl, self.on_main),
            *skill_routes(self.ctrl, self.on_main),
            *plan_routes(self.ctrl, self.on_main),
            *run_routes(self.ctrl),
            *mcp_routes(self.ctrl, self.on_main),
            *usage_routes(self.ctrl),
            Route("GET", "/api/diagnostics", "getDiagnostics",
                  "The performance monitor's metrics, and the run metrics under 'metrics'",
                  self.diagnostics, "Diagnostics"),
            Route("GET", "/openapi.json", "getOpenApi", "This API as an OpenAPI 3.1 document",
                  self.openapi_document, "OpenApiDocument"),
            Route("POST", "/api/shutdown", "shutdown", "Reply, then stop the app (dual flush)",
                  self.shutdown, "ShuttingDown", 202),
        )  # fmt: skip


def _entry(entry: Any) -> dict[str, str]:
    if not isinstance(entry, dict):
        return {"role": "", "content": str(entry), "ts": ""}
    ts = entry.get("ts", "")
    return {
        "role": str(entry.get("role", "")),
        "content": str(entry.get("content", "")),
        "ts": ts if isinstance(ts, str) else str(json_snapshot(ts)),
    }


def _ticket(raw: Any) -> dict[str, Any]:
    data = raw if isinstance(raw, dict) else {"id": str(raw)}
    ticket = {**TICKET_DEFAULTS, **data}
    for key in ("id", "description", "status"):
        ticket[key] = str(ticket[key])
    for key in ("assigned_to", "blocked_reason", "model_override"):
        ticket[key] = None if ticket[key] is None else str(ticket[key])
    depends = ticket["depends_on"]
    ticket["depends_on"] = [str(d) for d in depends] if isinstance(depends, list) else []
    retries = ticket["retry_count"]
    ticket["retry_count"] = (
        retries if isinstance(retries, int) and not isinstance(retries, bool) and retries >= 0 else 0
    )
    return ticket
