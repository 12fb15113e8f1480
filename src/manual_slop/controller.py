"""AppController: owns all application state and the threads that feed it.

Thread domains (see docs/guide_architecture.md)::

    main thread        run_frame(): drains the pending lists, applies task dicts,
                       is the only writer of ``self.state``
    asyncio worker     own event loop on a daemon thread; routes events from
                       ``event_queue``; runs provider calls in an executor
    hook server, AI,   post task dicts (post_gui_task), comms / tool entries,
    workers            history adds; read state via call_on_main(); block on
                       the Execution Clutch via request_approval()

The GUI and the headless ticker call :meth:`AppController.run_frame` — the same
code path in both modes. :meth:`AppController.shutdown` stops the loop, joins
threads with timeouts and performs the dual flush (project + global config).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from manual_slop.automation import (
    ActionRegistry,
    AutomationError,
    FieldRegistry,
    InvalidValue,
    SelectorRegistry,
)
from manual_slop.bindings import register_all
from manual_slop.clutch import ExecutionClutch
from manual_slop.config import (
    GLOBAL_SCHEMA,
    PROJECT_SCHEMA,
    PROVIDER_NAMES,
    AppPaths,
    Credentials,
    LoadResult,
    TomlFile,
)
from manual_slop.context.service import ContextService
from manual_slop.cpu_turn import cpu_turn, frame_begins, frame_ends, give_way
from manual_slop.dialogs import Decision, PendingDialog
from manual_slop.documents import Documents
from manual_slop.events import AsyncEventQueue, EventJournal, UserRequestEvent, json_snapshot
from manual_slop.governance.durable import DurableApprovals
from manual_slop.hooks.token import HookAuth, resolve_hook_auth
from manual_slop.log_budget import approx_size
from manual_slop.perf import PerformanceMonitor
from manual_slop.project_access import app_redactor, project_path_policy
from manual_slop.request_flow import ChatBackend, RequestFlow
from manual_slop.requests import RequestBoard, RequestRecord
from manual_slop.schema import Problem
from manual_slop.session_log import SessionLog
from manual_slop.slash_commands import command_of, run_command
from manual_slop.state import Notification
from manual_slop.tasks import GuardedList, TaskBoard
from manual_slop.threads import DaemonThreadExecutor, join_all
from manual_slop.token_profiles import TokenProfiles
from manual_slop.tools.security import PathPolicy

__all__ = ["AppController", "ChatBackend", "LaunchOptions", "RequestRecord"]

# A comms or tool-call record queued for the view, with its approx_size: measured once, by the
# posting thread, for the view's and the journal's byte budgets (never in the frame).
_SizedRecord = tuple[dict[str, Any], int]

log = logging.getLogger(__name__)

# per-provider settings handed to the provider objects (when the provider has them)
PROVIDER_OPTIONS = ("model_path", "binary", "approval_mode", "context_window", "max_tokens")

STALL_LIMIT_MS = 2000.0  # a frame loop silent for longer is reported unhealthy
CANCEL_SETTLE_S = 1.2  # at shutdown, how long cancelled requests get to hand in their partial answers


@dataclass(frozen=True, slots=True)
class LaunchOptions:
    """Command-line choices that are not persisted."""

    headless: bool = True
    hook_port: int | None = None
    enable_test_hooks: bool = False
    port_file: Path | None = None
    token_file: Path | None = None
    started_at: float | None = None  # time.time() of the start (default: when the controller is built)


@dataclass(frozen=True, slots=True)
class _QueuedTask:
    task_id: str
    task: dict[str, Any]


class AppController:
    """The headless core: state, threads, task pipeline, clutch, persistence."""

    def __init__(
        self,
        config_file: Path,
        project_file: Path | None = None,
        log_dir: Path | None = None,
        *,
        options: LaunchOptions | None = None,
        backend: ChatBackend | None = None,
        environ: Mapping[str, str] | None = None,
        config: LoadResult | None = None,
        hook_auth: HookAuth | None = None,
    ) -> None:
        """``config`` and ``hook_auth``: what a headless start read and resolved before building the
        controller (to start the Hook API first); by default they are read and resolved here."""
        environ = os.environ if environ is None else environ
        self.options = options or LaunchOptions()
        self.mode = "headless" if self.options.headless else "gui"
        self.started_at = self.options.started_at or time.time()
        self._main_thread = threading.current_thread()
        self.stop_requested = threading.Event()
        self._stop_signalled = False  # set by signal handlers, which must not take locks
        self._wake = threading.Event()
        self._wake_listeners: tuple[Callable[[], None], ...] = ()
        self._shut_down = False
        self._frame_failure: tuple[float, str] | None = None

        # -- configuration (config first: it names the project) -------------------------
        self.documents = Documents(config_file, project_file, log_dir, config)
        problems: list[Problem] = list(self.documents.problems)
        self.credentials, credential_problems = Credentials.load(self.paths.credentials_file, environ)
        problems += credential_problems
        self.hook_auth = hook_auth or resolve_hook_auth(
            environ, self.setting("hook.token"), bool(self.setting("hook.require_token"))
        )
        self.hook_api: tuple[str, str] | None = None  # (url, token) while a HookServer serves this app

        # -- services ---------------------------------------------------------------
        self.redactor = app_redactor(self.credentials, environ, self.hook_auth.token)
        self.session_log = SessionLog(self.paths.log_dir, self.redactor)
        self.journal = EventJournal()
        self.perf = PerformanceMonitor()
        self.tasks = TaskBoard()
        self.state = self.documents.state()
        self.context = ContextService(self)  # aggregation, AST cache, discussions, undo
        self.durable = DurableApprovals(self)  # the approval journal and what a restart restores
        self.clutch = ExecutionClutch(
            audit=self.session_log.append_audit,
            publish=self._on_clutch_event,
            policy=self.state.approval_policy,
            rules=self.documents.approval_rules(problems),
            journal=self.durable.journal,
        )

        # -- cross-thread hand-off (Pattern B) ------------------------------------------
        self._pending_gui_tasks: GuardedList[_QueuedTask] = GuardedList("gui_tasks", self._poke)
        self._applying_tasks = False  # set before a drain, cleared once every drained task ran
        self._pending_comms: GuardedList[_SizedRecord] = GuardedList("comms", self._poke)
        self._pending_tool_calls: GuardedList[_SizedRecord] = GuardedList("tool_calls", self._poke)
        self._pending_history_adds: GuardedList[dict[str, Any]] = GuardedList("history_adds", self._poke)
        # Task ids: a per-run prefix (ids from an earlier run never match) and a counter.
        self._task_prefix = uuid.uuid4().hex[:8] + "-"
        self._task_counter = itertools.count(1)
        self._log_seq_lock = threading.Lock()
        self._comms_seq = itertools.count(1)
        self._tool_seq = itertools.count(1)
        self.requests = RequestBoard()
        self.flow = RequestFlow(self)

        # -- automation registries ---------------------------------------------------------
        self.fields = FieldRegistry()
        self.actions = ActionRegistry()
        self.listboxes = SelectorRegistry("listbox")
        self.tab_bars = SelectorRegistry("tab bar")
        self._task_handlers: dict[str, Callable[[dict[str, Any]], None]] = {}
        self._shutdown_hooks: list[Callable[[], None]] = []
        self._switch_guards: list[Callable[[], str | None]] = []
        self._send_guards: list[Callable[[], str | None]] = []
        self._project_hooks: list[Callable[[], None]] = []
        self._comms_observers: list[Callable[[dict[str, Any]], None]] = []
        self._backend = backend
        self.memory: Any = None  # a memory.bindings.MemoryBinding once the memory feature registered
        register_all(self)
        problems += self.context.load()
        if self.memory is not None:  # turns stored after the last save go back into the discussions
            self.memory.restore()

        for problem in problems:
            level = "error" if problem.severity == "error" else problem.severity
            if level != "info":
                self.notify(level, str(problem))
        if not self.documents.config_existed:
            log.info("no config at %s; starting from defaults", config_file)
        self.documents.remember_project()
        self.durable.restore()  # dialogs an earlier session left undecided are pending again

        # -- asyncio worker (Pattern A) --------------------------------------------------
        self._executor = DaemonThreadExecutor("slop-request")
        self._loop = asyncio.new_event_loop()
        self.event_queue = AsyncEventQueue(self._loop)
        self._loop_thread = threading.Thread(target=self._run_event_loop, name="slop-asyncio", daemon=True)
        self._loop_thread.start()

    # =====================================================================================
    # threads
    # =====================================================================================
    def task_actions(self) -> list[str]:
        """Every task-dict action the main thread understands."""
        return sorted(self._task_handlers)

    def register_task_handler(self, action: str, handler: Callable[[dict[str, Any]], None]) -> None:
        """Add a task-dict action (feature packages; before the threads start)."""
        if action in self._task_handlers:
            raise ValueError(f"task action {action!r} registered twice")
        self._task_handlers[action] = handler

    def bind_main_thread(self) -> None:
        """Declare the calling thread the main thread (the GUI or headless ticker does this)."""
        self._main_thread = threading.current_thread()

    def on_main_thread(self) -> bool:
        return threading.current_thread() is self._main_thread

    def _run_event_loop(self) -> None:
        asyncio.set_event_loop(self._loop)
        consumer = self._loop.create_task(self._process_event_queue())
        try:
            self._loop.run_forever()
        finally:
            consumer.cancel()
            pending = [t for t in asyncio.all_tasks(self._loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self._loop.close()

    def event_routes(self) -> dict[str, Callable[[Any], Any]]:
        """What the asyncio worker does with each event name."""
        return {
            "user_request": self._route_user_request,
            "response": lambda p: self.post_gui_task({"action": "handle_ai_response", **p}),
            "mma_state_update": self.post_mma_state,
            "track_proposal": lambda p: self.post_gui_task({"action": "show_track_proposal", **p}),
        }

    async def _process_event_queue(self) -> None:
        routes = self.event_routes()
        while True:
            name, payload = await self.event_queue.get()
            route = routes.get(name)
            if route is None:
                self.publish("error", {"message": f"unrouted event {name!r}"})
                continue
            try:
                route(payload)
            except Exception as exc:  # a bad event must not kill the router
                log.exception("event %s failed", name)
                self.publish("error", {"message": f"event {name} failed: {exc}"})

    def _route_user_request(self, event: UserRequestEvent) -> None:
        # A task, not an await: the router keeps routing while the request is in flight.
        self._loop.create_task(self.flow.run(event))

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The asyncio worker's loop (request runs are its tasks)."""
        return self._loop

    @property
    def executor(self) -> DaemonThreadExecutor:
        """Where blocking provider calls run."""
        return self._executor

    # =====================================================================================
    # posting from any thread
    # =====================================================================================
    def post_gui_task(self, task: dict[str, Any]) -> str | None:
        """Queue a task dict for the main thread; its id, or None after shutdown."""
        queued = _QueuedTask(f"{self._task_prefix}{next(self._task_counter)}", task)
        self.tasks.queued(queued.task_id)
        if not self._pending_gui_tasks.append(queued):
            self.tasks.failed(queued.task_id, "the app is shutting down")
            return None
        return queued.task_id

    def run_in_background(
        self,
        fn: Callable[[], Any],
        on_done: Callable[[Any], None] | None = None,
        on_error: Callable[[BaseException], None] | None = None,
    ) -> Future[Any] | None:
        """Run blocking ``fn`` (aggregation, git, a model list, text-only provider calls) on a
        daemon thread that shutdown joins. ``on_done(result)`` / ``on_error(exc)``, when given,
        then run on the main thread; an unhandled error becomes a notification. None after
        shutdown."""

        def job() -> Any:
            try:
                result = fn()
            except Exception as exc:
                handler = on_error or (lambda e: self.notify("error", f"{type(e).__name__}: {e}"))
                self.post_gui_task({"action": "custom_callback", "callback": handler, "args": (exc,)})
                raise
            if on_done is not None:
                self.post_gui_task({"action": "custom_callback", "callback": on_done, "args": (result,)})
            return result

        try:
            return self._executor.submit(job)
        except RuntimeError:
            return None

    def call_on_main(self, fn: Callable[[], Any], timeout: float = 2.0) -> Any:
        """Run ``fn`` on the main thread and return its result (the read trampoline).

        Raises ``TimeoutError`` when the main thread does not get to it in time.
        """
        if self.on_main_thread():
            return fn()
        future: Future[Any] = Future()
        if self.post_gui_task({"action": "custom_callback", "callback": fn, "future": future}) is None:
            raise RuntimeError("the app is shutting down")
        return future.result(timeout)

    def add_comms_entry(self, entry: Mapping[str, Any]) -> dict[str, Any]:
        """Record a comms entry from any thread: session log now, view at the next frame.

        Each entry gets ``seq`` (1, 2, ... in the order the view receives them) and ``local_ts``.
        """
        return self._add_log_entry(self._pending_comms, self._comms_seq, "comms", entry)

    def add_tool_call(self, entry: Mapping[str, Any]) -> dict[str, Any]:
        """Record an executed tool call from any thread (numbered like comms entries)."""
        return self._add_log_entry(self._pending_tool_calls, self._tool_seq, "tool_call", entry)

    def _add_log_entry(
        self,
        pending: GuardedList[_SizedRecord],
        seq: itertools.count,
        kind: str,
        entry: Mapping[str, Any],
    ) -> dict[str, Any]:
        with cpu_turn():  # worker threads take turns; the frame waits for one at most
            entry = self.redactor.redact_obj(dict(entry))  # the view, the log and the events alike
            record = {"seq": 0, "local_ts": 0.0, **entry}
            size = approx_size(record)  # for the view's and the journal's byte budgets, measured once
        with self._log_seq_lock:  # numbering and queueing together keep the view sorted by seq
            record["seq"], record["local_ts"] = next(seq), time.time()
            pending.append((record, size))
        with cpu_turn():  # JSON text of the record (a local append: nothing slow to wait on)
            (self.session_log.append_comms if kind == "comms" else self.session_log.append_tool_call)(record)
        if kind == "comms":
            for observe in self._comms_observers:
                try:
                    observe(record)
                except Exception:  # an observer must never break the request that logs
                    log.exception("comms observer failed")
        with cpu_turn():
            snapshot = json_snapshot(record)
        self.journal.publish_snapshot(kind, snapshot, size)  # redacted above
        return record

    def add_history_entry(self, role: str, content: str, discussion: str | None = None) -> bool:
        """Append to a discussion (the active one by default) at the next frame."""
        return self._pending_history_adds.append(
            {"role": role, "content": content, "discussion": discussion, "ts": _timestamp()}
        )

    def publish(self, event_type: str, payload: Mapping[str, Any] | None = None) -> int:
        """Announce an event to automation (any thread); known secrets are redacted from it."""
        return self.journal.publish(event_type, self.redactor.redact_obj(dict(payload or {})))

    def post_mma_state(self, update: Mapping[str, Any]) -> str | None:
        """Queue an ``mma_state_update`` (any thread but the main one) with its ``mma_state``
        event already redacted, snapshotted and measured here: for a track of 200 tickets that costs
        milliseconds, which the frame that applies the update must not pay."""
        payload = {k: v for k, v in update.items() if k not in ("action", "event", "event_size")}
        with cpu_turn():  # worker threads take turns; the frame waits for one at most
            redacted = self.redactor.redact_obj(payload, copy=False)
            give_way()  # each step is up to a millisecond: a frame that began meanwhile goes first
            event = json_snapshot(redacted)  # the snapshot copies
            give_way()
            size = approx_size(event)  # the journal's byte budget: measured here, not in the frame
        task = {"action": "mma_state_update", **payload, "event": event, "event_size": size}
        return self.post_gui_task(task)

    def request_approval(
        self, dialog: PendingDialog, timeout: float | None = None, preapproved: str = "", refused: str = ""
    ) -> Decision:
        """Block the calling (non-main) thread on the Execution Clutch until ``dialog`` is decided
        (``preapproved``, ``refused``: see :meth:`ExecutionClutch.submit`)."""
        if self.on_main_thread() and self.clutch.policy != "auto" and not (preapproved or refused):
            raise RuntimeError("request_approval would block the main thread")
        timeout = self.state.approval_timeout_s if timeout is None else timeout
        return self.clutch.submit(dialog, timeout, preapproved, refused)

    def _on_clutch_event(self, event_type: str, payload: dict[str, Any]) -> None:
        payload = self.redactor.redact_obj(payload)  # a diff preview may quote a key from the file
        self.journal.publish(event_type, payload)  # redacted above (publish() would do it again)
        self.post_gui_task({"action": event_type, "dialog": payload})

    # =====================================================================================
    # the frame (main thread)
    # =====================================================================================
    def run_frame(self, render: Callable[[], None] | None = None) -> None:
        """One frame: drain everything other threads posted, then render (if given)."""
        self.begin_frame()
        try:
            if render is not None:
                render()
        except Exception as exc:
            self.record_frame_failure(exc)
        finally:
            self.end_frame()

    def begin_frame(self) -> None:
        """Start of a frame (main thread): timing starts, pending work is applied."""
        frame_begins()  # worker threads start no Python-heavy section until end_frame
        self.perf.frame_start()
        self._wake.clear()
        try:
            with self.perf.scope("process_pending"):
                self.process_pending()
        except Exception as exc:  # process_pending guards each task; this is a bug net
            self.record_frame_failure(exc)

    def end_frame(self) -> None:
        """End of a frame (main thread)."""
        self.perf.frame_end()
        frame_ends()

    def record_frame_failure(self, exc: BaseException) -> None:
        """A frame (or a panel in it) raised: reported by health() for the next 2 s."""
        self._frame_failure = (time.monotonic(), f"{type(exc).__name__}: {exc}")
        log.error("frame failed: %s", self._frame_failure[1], exc_info=exc)

    def _poke(self) -> None:
        if not self._wake.is_set():  # is_set takes no lock; set() does
            self._wake.set()
            for listener in self._wake_listeners:
                listener()

    def add_wake_listener(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` (from the posting thread) when work is posted to an idle frame loop.

        The GUI registers a thread-safe "wake the event loop" call here, so a task posted
        while the window idles is applied at once instead of at the next idle tick.
        """
        self._wake_listeners = (*self._wake_listeners, listener)

    def wait_for_work(self, timeout: float) -> bool:
        """Sleep until something is posted or ``timeout`` passes (headless ticker); True if posted."""
        return self._wake.wait(timeout)

    def process_pending(self) -> None:
        """Apply everything other threads posted since the last frame (main thread only)."""
        comms = self._pending_comms.drain()
        if comms:
            records = [record for record, _ in comms]
            self.state.add_comms(records, [size for _, size in comms])
            self.state.cache_ledger.add_all(records)
        tool_calls = self._pending_tool_calls.drain()
        if tool_calls:
            self.state.add_tool_calls([record for record, _ in tool_calls], [size for _, size in tool_calls])
        for add in self._pending_history_adds.drain():
            self.context.discussions.append(
                add["role"], add["content"], add["discussion"], add["ts"], label=f"add {add['role']} entry"
            )
        self._process_pending_gui_tasks()

    def tasks_settled(self) -> bool:
        """True when every task posted so far has been applied (any thread). A lock-free read
        of a scalar field is then as fresh as one through the main thread: every write queued
        before it has run. Reads the queue first: the main thread marks itself applying
        before it drains, so an emptied queue is never mistaken for applied tasks."""
        return not self._pending_gui_tasks.has_items() and not self._applying_tasks

    def _process_pending_gui_tasks(self) -> None:
        self._applying_tasks = True
        try:
            self._apply_tasks(self._pending_gui_tasks.drain())
        finally:
            self._applying_tasks = False

    def _apply_tasks(self, batch: list[_QueuedTask]) -> None:
        for queued in batch:
            task = queued.task
            action = task.get("action")
            handler = self._task_handlers.get(action) if isinstance(action, str) else None
            try:
                if handler is None:
                    raise AutomationError(f"unknown task action {action!r}")
                handler(task)
            except Exception as exc:
                future = task.get("future")
                if isinstance(future, Future) and not future.done():
                    future.set_exception(exc)
                message = str(exc) if isinstance(exc, AutomationError) else f"{type(exc).__name__}: {exc}"
                if not isinstance(exc, AutomationError):
                    log.error("task %s failed:\n%s", action, traceback.format_exc())
                self.tasks.failed(queued.task_id, message)
                self.publish("error", {"task_id": queued.task_id, "action": action, "message": message})
            else:
                self.tasks.done(queued.task_id)

    def notify(self, level: str, message: str) -> None:
        """Show a message to the user (main thread); also published and logged."""
        self.state.notifications.append(Notification(level, message, time.time()))
        self.publish("error" if level == "error" else "notification", {"level": level, "message": message})
        log.log(logging.ERROR if level == "error" else logging.WARNING, "%s", message)

    def health(self) -> dict[str, Any]:
        """Is the frame loop alive? Safe from any thread."""
        age = self.perf.last_frame_age_ms()
        reason: str | None = None
        failure = self._frame_failure
        if failure is not None and time.monotonic() - failure[0] < STALL_LIMIT_MS / 1000.0:
            reason = f"the frame raised {failure[1]}"
        elif age is None:
            reason = "no frame has run yet"
        elif age > STALL_LIMIT_MS:
            reason = f"no frame for {age:.0f} ms"
        elif not self._loop_thread.is_alive() and not self._shut_down:
            reason = "the asyncio worker thread died"
        return {
            "healthy": reason is None,
            "degraded_reason": reason,
            "frames": self.perf.frames,
            "last_frame_age_ms": age if age is not None else -1.0,
        }

    # =====================================================================================
    # requests (main thread starts them; any thread reads their status)
    # =====================================================================================
    def submit_user_message(self, prompt: str) -> str:
        """Gen + Send (main thread): see :class:`~manual_slop.request_flow.RequestFlow`. A slash
        command (``/agent``, ``/tokens``, ``/extreme``, ``/plan``) runs here instead. A send guard
        (e.g. a session replay) may refuse it: InvalidValue with its reason."""
        for guard in self._send_guards:
            reason = guard()
            if reason:
                raise InvalidValue(reason)
        command = command_of(prompt)
        if command is not None:
            return run_command(self, *command, prompt)
        return self.flow.submit(prompt)

    def cancel_request(self, request_id: str, reason: str = "stopped by the user") -> str:
        """Stop a request (any thread); its state afterwards. LookupError / ValueError when
        unknown / already ended."""
        return self.flow.cancel(request_id, reason)

    def request_status(self, request_id: str) -> dict[str, Any] | None:
        return self.requests.status(request_id)

    def update_request(self, request_id: str, **changes: Any) -> None:
        self.requests.update(request_id, **changes)

    def set_ai_status(self, status: str) -> None:
        """Change the status line (main thread) and announce it."""
        if status != self.state.ai_status:
            self.state.ai_status = status
            self.publish("ai_status", {"status": status})

    def ai_settings(self) -> dict[str, Any]:
        """Snapshot of the provider settings for one request (main thread)."""
        state = self.state
        provider = state.current_provider
        key = self.credentials.api_key(provider)
        return {
            "provider": provider,
            "model": state.current_model,
            "base_url": state.provider_base_url,
            "api_key": key,
            "temperature": state.temperature,
            "top_p": state.top_p,
            "max_tokens": state.max_tokens,
            # summaries, compaction and other sub-calls answer within the token profile's summary limit
            "summary_max_tokens": TokenProfiles(state.token_profile, state.token_custom).limit(
                "summary", state.max_tokens
            ),
            "history_trunc_limit": state.history_trunc_limit,
            "system_prompt": state.system_prompt,
            "fallback": list(self.setting("ai.fallback") or []),
            "guard_repeat_warn": self.setting("ai.guard_repeat_warn"),
            "guard_repeat_refuse": self.setting("ai.guard_repeat_refuse"),
            "providers": {
                name: {
                    "model": state.provider_models.get(name, ""),
                    "base_url": state.provider_base_urls.get(name, ""),
                    "api_key": self.credentials.api_key(name),
                    "options": {
                        option: self.setting(f"providers.{name}.{option}")
                        for option in PROVIDER_OPTIONS
                        if f"providers.{name}.{option}" in GLOBAL_SCHEMA
                    },
                }
                for name in PROVIDER_NAMES
            },
        }

    def compile_context(self) -> str:
        """The context Markdown a send would carry, compiled now on the calling thread
        (Gen + Send and MD Only compile off the main thread; see ``manual_slop.context``)."""
        return self.context.compile(self.context.request(), "preview").markdown

    def discussion_text(self) -> str:
        """The active discussion as text for the provider."""
        lines = [f"{e.get('role', '?')}: {e.get('content', '')}" for e in self.state.discussion_entries()]
        return "\n\n".join(lines)

    def base_dir(self) -> Path:
        """The project's files base dir, resolved against the project file's folder."""
        return (self.paths.project_file.parent / self.state.files_base_dir).resolve()

    def path_policy(
        self, base_dir: Path, tracked: Sequence[str] = (), exclude: Sequence[str] = ()
    ) -> PathPolicy:
        """The one path policy for reads on the model's behalf (tools, context, refresh, MMA):
        ``base_dir`` and the ``tracked`` globs allowed; the app's config, credentials, history,
        session logs and Hook API token folder refused (any thread)."""
        return project_path_policy(self.paths, base_dir, tracked, exclude)

    @property
    def backend(self) -> ChatBackend | None:
        return self._backend

    def setting(self, dotted: str) -> Any:
        """A global-config value as loaded and normalized (e.g. ``"hook.port"``)."""
        return self.documents.setting(dotted)

    @property
    def paths(self) -> AppPaths:
        return self.documents.paths

    # =====================================================================================
    # persistence
    # =====================================================================================
    def reload_project(self) -> None:
        """Re-read the project and history files and rebuild the project part of the state."""
        self._adopt_project(self.documents.reload_project())

    def _adopt_project(self, problems: list[Problem]) -> None:
        self.state.adopt_project(self.documents.state())
        self.context.project_reloaded()
        self.clutch.set_rules(self.documents.approval_rules(problems))
        for problem in problems:
            if problem.severity != "info":
                self.notify(problem.severity, str(problem))

    def open_project(self, project_file: Path) -> None:
        """Switch to another project file (main thread); the current project is saved first."""
        if not self.on_main_thread():
            raise RuntimeError("open_project must run on the main thread")
        target = project_file.expanduser().resolve()
        if not target.is_file():
            raise InvalidValue(f"project file {target} does not exist")
        if target.suffix.lower() != ".toml":
            raise InvalidValue(f"a project file must end in .toml, got {target.name}")
        foreign = TomlFile(target, PROJECT_SCHEMA).foreign_tables()
        if foreign:
            raise InvalidValue(f"{target} is not a Manual Slop project (it has [{'], ['.join(foreign[:4])}])")
        for guard in self._switch_guards:
            reason = guard()
            if reason:
                raise InvalidValue(f"cannot switch projects: {reason}")
        self.flush()
        self._adopt_project(self.documents.switch_project(target))
        self.documents.remember_project()
        for hook in self._project_hooks:
            hook()
        self.publish("project_opened", {"project_file": str(target)})

    def new_project(self, project_file: Path) -> None:
        """Create a project file with defaults beside nothing existing, then open it (main thread)."""
        target = project_file.expanduser().resolve()
        if target.exists():
            raise InvalidValue(f"{target} already exists; open it instead")
        if target.suffix != ".toml":
            raise InvalidValue(f"a project file must end in .toml, got {target.name}")
        if not target.parent.is_dir():
            raise InvalidValue(f"folder {target.parent} does not exist")
        Documents.create_project(target)
        self.session_log.mark("project_created")  # start-up pruning keeps this session
        self.open_project(target)

    def recent_projects(self) -> list[str]:
        return self.documents.recent_projects()

    def flush(self) -> None:
        """Dual flush: project + history, then the global config (main thread)."""
        if not self.on_main_thread():
            raise RuntimeError("flush must run on the main thread")
        self.documents.flush(self.state)

    # =====================================================================================
    # lifetime
    # =====================================================================================
    def on_project_opened(
        self, hook: Callable[[], None], guard: Callable[[], str | None] | None = None
    ) -> None:
        """``hook`` runs (main thread) after another project was opened; ``guard`` may refuse the
        switch beforehand by returning the reason (e.g. a track is still running)."""
        self._project_hooks.append(hook)
        if guard is not None:
            self._switch_guards.append(guard)

    def add_send_guard(self, guard: Callable[[], str | None]) -> None:
        """``guard()`` returns why no message may be sent now ('' or None: it may)."""
        self._send_guards.append(guard)

    def on_comms_entry(self, observer: Callable[[dict[str, Any]], None]) -> None:
        """``observer`` sees every comms entry as it is recorded, on the thread that made it (it
        must be thread-safe and quick: the usage ledger)."""
        self._comms_observers.append(observer)

    def on_shutdown(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` (main thread) at the start of :meth:`shutdown`; it must bound its own waits."""
        self._shutdown_hooks.append(hook)

    def request_stop(self) -> None:
        """Ask the frame loop to end (any thread; not from a signal handler)."""
        self.stop_requested.set()
        self._wake.set()

    def request_stop_from_signal(self) -> None:
        """Async-signal-safe stop: only a flag write. The handler runs on the main thread,
        possibly while it holds an Event's lock, so taking any lock here could deadlock;
        the frame loop notices the flag within one tick."""
        self._stop_signalled = True

    def should_stop(self) -> bool:
        return self._stop_signalled or self.stop_requested.is_set()

    def _settle_requests(self, until: float) -> None:
        """Run frames until every cancelled request delivered its response (the partial answer
        reaches the discussion before it is saved), or ``until``."""
        if not self.on_main_thread():
            return
        while self.requests.unfinished() and time.monotonic() < until:
            self.process_pending()
            self.wait_for_work(0.02)
        self.process_pending()

    def shutdown(self, timeout: float = 2.0) -> list[str]:
        """Stop threads, flush both configs, close the session; returns names of threads left alive."""
        if self._shut_down:
            return []
        self._shut_down = True
        frame_ends()  # a loop that stopped inside a frame must not hold the workers' turns back
        deadline = time.monotonic() + timeout
        if self.flow.cancel_all("the app is shutting down"):  # providers let go within a second
            self._settle_requests(min(deadline, time.monotonic() + CANCEL_SETTLE_S))
        for hook in self._shutdown_hooks:  # features stop their threads while the clutch still works
            try:
                hook()
            except Exception:
                log.exception("shutdown hook %r failed", hook)
        self.clutch.close()  # wakes every thread blocked on a dialog
        self.event_queue.close()
        if self._loop.is_running() or not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):  # already closed
                self._loop.call_soon_threadsafe(self._loop.stop)
        leftovers = join_all([self._loop_thread], max(0.0, deadline - time.monotonic()))
        self._executor.shutdown(wait=True, timeout=max(0.0, deadline - time.monotonic()))
        leftovers += self._executor.active()
        try:
            self.process_pending()  # apply what finished threads posted
        except Exception:
            log.exception("final drain failed")
        for guarded in (
            self._pending_gui_tasks,
            self._pending_comms,
            self._pending_tool_calls,
            self._pending_history_adds,
        ):
            guarded.close()
        try:
            self.flush()
        except OSError as exc:
            log.error("could not save on exit: %s", exc)
        self.journal.close()
        self.session_log.close(frames=self.perf.frames)
        return [t.name for t in leftovers if t.is_alive()]


def _timestamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S")
