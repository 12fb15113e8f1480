"""Tier 3 attempts as Ray tasks: on a local cluster started on demand, or on one at an address.

A ticket attempt travels as data: the ticket's prompt and context, the provider settings
*without* credentials, and a :class:`~manual_slop.mma.snapshot.Snapshot` (a git bundle, so the
nodes need no shared file system). The task unpacks the snapshot into a private folder, runs the
real tool loop there, and returns the patch it made, its tool calls and its usage; the app merges
the patch exactly as for a local attempt.

- **Credentials** travel only in the task's environment (``runtime_env.env_vars``, one variable
  per provider, :func:`split_credentials`): never in the object store, the arguments or a log.
- **Dialogs** raised inside a task (each mutating tool call asks, as a local step would) go to
  the :class:`DialogRelay` actor; :class:`RayTicketRunner` pumps them to the app's clutch on a
  thread and sends the decision back, so the user answers them like local ones.
- **Node loss**: a task is retried by Ray on another node (``max_retries``). Every start reports
  to the relay, so a second start of one submission is counted as a retry and the dashboard
  shows each ticket's node, start time and last event (:meth:`RayTicketRunner.heartbeats`).
- **Abort**: :meth:`RayTicketRunner.cancel` cancels the task (``ray.cancel(force=True)``) and
  answers its open dialogs "rejected".

Ray is an optional extra (``pip install 'manual-slop[ray]'``); without it :func:`load_ray`
raises :class:`RayUnavailable` with the one line to show.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from manual_slop.mma.errors import MMAError
from manual_slop.mma.snapshot import Snapshot

__all__ = [
    "RAY_MISSING",
    "AttemptRequest",
    "RayCluster",
    "RaySettings",
    "RayTicketRunner",
    "RayUnavailable",
    "load_ray",
    "split_credentials",
]

log = logging.getLogger(__name__)

RAY_MISSING = "mma.backend = 'ray' needs Ray, which is not installed: pip install 'manual-slop[ray]'"
KEY_VAR = "SLOP_RAY_KEY_"  # + provider name upper-cased: one environment variable per credential
PUMP_WAIT_S = 0.5  # how long one relay poll waits for a dialog (also bounds the pump's stop)
POLL_S = 0.05  # how often a waiting attempt looks at its abort flag
MAX_BEATS = 200  # attempts whose heartbeats the app keeps


class RayUnavailable(MMAError):
    """Ray is not installed, or the cluster cannot be reached (the message says which)."""


def load_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayUnavailable(RAY_MISSING) from None
    return ray


@dataclass(frozen=True, slots=True)
class RaySettings:
    """``[mma]`` settings of the Ray backend."""

    address: str = ""  # '' = a local cluster started on demand; 'auto'; 'ray://host:10001'
    num_cpus: float = 1.0  # CPUs each ticket's task asks for
    max_retries: int = 2  # Ray's retries of a task whose node died
    runtime_env: Mapping[str, Any] = field(default_factory=dict)  # the user's (pip, working_dir ...)


def split_credentials(settings: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """``settings`` without any API key, and the keys as environment variables for the task."""
    clean = dict(settings)
    env: dict[str, str] = {}

    def reveal(value: Any) -> str:
        return value.reveal() if hasattr(value, "reveal") else str(value or "")

    active = reveal(clean.pop("api_key", None))
    if active:
        env[KEY_VAR + str(clean.get("provider", "")).upper()] = active
    providers = {}
    for name, entry in (clean.get("providers") or {}).items():
        entry = dict(entry)
        key = reveal(entry.pop("api_key", None))
        if key:
            env[KEY_VAR + str(name).upper()] = key
        providers[name] = entry
    if providers:
        clean["providers"] = providers
    return clean, env


def _with_credentials(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The task's side of :func:`split_credentials`: the keys back from its environment."""
    merged = dict(settings)
    active = os.environ.get(KEY_VAR + str(merged.get("provider", "")).upper())
    if active:
        merged["api_key"] = active
    providers = {}
    for name, entry in (merged.get("providers") or {}).items():
        entry = dict(entry)
        key = os.environ.get(KEY_VAR + str(name).upper())
        if key:
            entry["api_key"] = key
        providers[name] = entry
    merged["providers"] = providers
    return merged


@dataclass(frozen=True, slots=True)
class AttemptRequest:
    """One Tier 3 attempt, as plain data (no credentials)."""

    ticket_id: str
    prompt: str
    context: str
    settings: Mapping[str, Any]
    model: str = ""
    tier: str = "Tier 3"
    free_tools: tuple[str, ...] = ()  # tools that run without asking (the patch is what is approved)


class RayCluster:
    """The app's connection to Ray: ``address`` or a local cluster it starts (and stops)."""

    def __init__(self, settings: RaySettings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._connected = False

    def start(self) -> None:
        ray = load_ray()
        with self._lock:
            if self._connected and ray.is_initialized():
                return
            options: dict[str, Any] = {
                "log_to_driver": False,
                "configure_logging": False,
                "ignore_reinit_error": True,
            }
            if self.settings.address:
                options["address"] = self.settings.address
            else:
                options["include_dashboard"] = False
            try:
                ray.init(**options)
            except Exception as exc:
                where = self.settings.address or "a local cluster"
                raise RayUnavailable(f"Ray: cannot connect to {where}: {exc}") from exc
            self._connected = True

    def stop(self) -> None:
        with self._lock:
            if self._connected:
                with contextlib.suppress(Exception):
                    load_ray().shutdown()
            self._connected = False


def _relay_class() -> Any:
    ray = load_ray()

    @ray.remote(num_cpus=0, max_concurrency=1000)
    class DialogRelay:
        """Dialogs and heartbeats of remote attempts (an async actor: waits never block it)."""

        def __init__(self) -> None:
            import asyncio

            self._asyncio = asyncio
            self._queue: Any = asyncio.Queue()
            self._waiting: dict[str, Any] = {}
            self._answers: dict[str, dict[str, Any]] = {}
            self._starts: dict[str, list[dict[str, Any]]] = {}
            self._closed = False

        async def ask(self, request: dict[str, Any]) -> dict[str, Any]:
            if self._closed:
                return {"approved": False, "abort": True, "reason": "the run was stopped"}
            rid = uuid.uuid4().hex
            event = self._asyncio.Event()
            self._waiting[rid] = (event, request.get("submission", ""))
            await self._queue.put({**request, "id": rid})
            await event.wait()
            return self._answers.pop(rid)

        async def next(self, timeout: float) -> dict[str, Any] | None:
            try:
                return await self._asyncio.wait_for(self._queue.get(), timeout)
            except TimeoutError:
                return None

        async def answer(self, rid: str, decision: dict[str, Any]) -> bool:
            waiting = self._waiting.pop(rid, None)
            if waiting is None:
                return False
            self._answers[rid] = decision
            waiting[0].set()
            return True

        async def reject(self, submission: str, reason: str) -> int:
            """Answer every open dialog of one submission (all when ``submission`` is '')."""
            count = 0
            for rid, (_, owner) in list(self._waiting.items()):
                if not submission or owner == submission:
                    count += await self.answer(rid, {"approved": False, "abort": True, "reason": reason})
            return count

        async def started(self, submission: str, info: dict[str, Any]) -> int:
            self._starts.setdefault(submission, []).append({**info, "last_event": "started"})
            await self._queue.put({"kind": "beat", "submission": submission, **self._starts[submission][-1]})
            return len(self._starts[submission])

        async def note(self, submission: str, event: str) -> None:
            if self._starts.get(submission):
                self._starts[submission][-1]["last_event"] = event
                self._starts[submission][-1]["last_time"] = time.time()
                await self._queue.put(
                    {"kind": "beat", "submission": submission, **self._starts[submission][-1]}
                )

        async def heartbeats(self) -> dict[str, list[dict[str, Any]]]:
            return {k: list(v) for k, v in self._starts.items()}

        async def close(self) -> None:
            self._closed = True
            await self.reject("", "the run was stopped")

    return DialogRelay


def run_attempt_remotely(request: AttemptRequest, snapshot: Snapshot, relay: Any, submission: str) -> dict:
    """The body of the Ray task (runs on a node): unpack, run the tool loop, return the patch."""
    import tempfile

    import ray

    from manual_slop.ai.client import AIClient
    from manual_slop.redaction import Redactor
    from manual_slop.tools import ApprovalResult, ExecutionContext

    context = ray.get_runtime_context()
    info = {
        "node": context.get_node_id(),
        "pid": os.getpid(),
        "started": time.time(),
        "ticket": request.ticket_id,
    }
    starts = ray.get(relay.started.remote(submission, info))
    calls: list[dict[str, Any]] = []
    settings = _with_credentials(request.settings)
    secrets = [v for k, v in os.environ.items() if k.startswith(KEY_VAR) and v]

    def gate(approval: Any) -> ApprovalResult:
        args = dict(approval.call.args)
        relay.note.remote(submission, f"asks {approval.call.name}")
        if approval.call.name in request.free_tools:
            return ApprovalResult(True, args)
        decision = ray.get(
            relay.ask.remote(
                {
                    "submission": submission,
                    "ticket_id": request.ticket_id,
                    "tool": approval.call.name,
                    "args": args,
                    "preview": approval.preview,
                }
            )
        )
        if decision.get("abort"):
            return ApprovalResult(False, args, decision.get("reason") or "aborted", abort=True)
        return ApprovalResult(
            bool(decision.get("approved")), dict(decision.get("args") or args), decision.get("reason", "")
        )

    with tempfile.TemporaryDirectory(prefix="slop-ray-ticket-") as tmp:
        folder = snapshot.unpack(Path(tmp))
        client = AIClient()
        try:
            client.apply_settings(settings)
            if request.model:
                client.set_provider(client.provider, request.model)
            tools = ExecutionContext.for_directory(
                folder, redact=Redactor(secrets).redact, on_tool_call=calls.append
            )
            error = ""
            try:
                answer = client.send(
                    request.context,
                    request.prompt,
                    base_dir=str(folder),
                    enable_tools=True,
                    pre_tool_callback=gate,
                    context=tools,
                    tier=request.tier,
                    ticket=request.ticket_id,
                )
            except Exception as exc:  # the send failed: a failed attempt, told to the app as data
                answer, error = "", f"{type(exc).__name__}: {exc}"
            usage = dict(client.get_token_usage())
        finally:
            client.cleanup()
        relay.note.remote(submission, "finished")
        return {
            "error": error,
            "answer": str(answer),
            "patch": snapshot.diff(folder),
            "tool_calls": calls,
            "usage": usage,
            "starts": starts,
            "node": info["node"],
        }


class RayTicketRunner:
    """The app's side: submits attempts, pumps their dialogs to ``ask``, cancels, reports."""

    def __init__(
        self,
        cluster: RayCluster,
        ask: Callable[[dict[str, Any]], dict[str, Any]],
        on_beat: Callable[[dict[str, list[dict[str, Any]]]], None] | None = None,
    ) -> None:
        self.cluster = cluster
        self._on_beat = on_beat  # every heartbeat seen, as latest_beats() gives them
        self._ask = ask  # a relay request -> the decision (blocks while the user decides)
        self._relay: Any = None
        self._task: Any = None
        self._pump: threading.Thread | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._beats: dict[str, list[dict[str, Any]]] = {}

    def start(self) -> None:
        ray = load_ray()
        with self._lock:
            if self._relay is not None:
                return
            self.cluster.start()
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            # on the app's own node: losing a worker node must not lose the dialogs
            here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
            self._relay = _relay_class().options(scheduling_strategy=here).remote()
            settings = self.cluster.settings
            self._task = ray.remote(
                num_cpus=settings.num_cpus, max_retries=settings.max_retries, retry_exceptions=False
            )(run_attempt_remotely)
            self._stop.clear()
            self._pump = threading.Thread(target=self._pump_dialogs, name="mma-ray-dialogs", daemon=True)
            self._pump.start()

    def submit(
        self,
        request: AttemptRequest,
        snapshot: Snapshot,
        *,
        prefer_node: str = "",
        gate: Callable[[str], None] | None = None,
    ) -> tuple[str, Any]:
        """Start one attempt: ``(submission id, object ref)``; ``prefer_node``: a node id to start
        on when it can (a retry goes anywhere); ``gate(submission)`` runs before the task starts
        (to route its dialogs)."""
        self.start()
        clean, env = split_credentials(request.settings)
        request = AttemptRequest(**{**_fields(request), "settings": clean})
        runtime_env = dict(self.cluster.settings.runtime_env)
        runtime_env["env_vars"] = {**dict(runtime_env.get("env_vars") or {}), **env}
        submission = uuid.uuid4().hex
        if gate is not None:
            gate(submission)
        options: dict[str, Any] = {"runtime_env": runtime_env}
        if prefer_node:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(prefer_node, soft=True)
        ref = self._task.options(**options).remote(request, snapshot, self._relay, submission)
        return submission, ref

    def result(self, submission: str, ref: Any, abort: threading.Event) -> dict[str, Any] | None:
        """Wait for the attempt; None when ``abort`` was set first (the task is then cancelled)."""
        ray = load_ray()
        while True:
            ready, _ = ray.wait([ref], timeout=POLL_S)
            if ready:
                return ray.get(ref)
            if abort.is_set():
                self.cancel(submission, ref)
                return None

    def cancel(self, submission: str, ref: Any) -> None:
        ray = load_ray()
        with contextlib.suppress(Exception):
            ray.cancel(ref, force=True, recursive=True)
        if self._relay is not None:
            with contextlib.suppress(Exception):
                self._relay.reject.remote(submission, "the ticket was aborted")

    def _beat(self, beat: dict[str, Any]) -> None:
        submission = str(beat.pop("submission"))
        beat.pop("kind", None)
        with self._lock:
            starts = self._beats.setdefault(submission, [])
            if (
                not starts
                or starts[-1].get("pid") != beat.get("pid")
                or starts[-1].get("started") != beat.get("started")
            ):
                starts.append(beat)  # a start (Ray ran it again after its node died)
            else:
                starts[-1] = beat
            while len(self._beats) > MAX_BEATS:  # the newest attempts only
                self._beats.pop(next(iter(self._beats)))

    def latest_beats(self) -> dict[str, list[dict[str, Any]]]:
        """The heartbeats the app has seen (never waits on the cluster: for the GUI)."""
        with self._lock:
            return {k: [dict(b) for b in v] for k, v in self._beats.items()}

    def heartbeats(self) -> dict[str, list[dict[str, Any]]]:
        """Every attempt's starts as the relay has them now (asks the cluster: up to 5 s)."""
        if self._relay is None:
            return {}
        return load_ray().get(self._relay.heartbeats.remote(), timeout=5)

    def stop(self) -> None:
        with self._lock:
            relay, self._relay = self._relay, None
            self._stop.set()
            pump, self._pump = self._pump, None
        if relay is not None:
            with contextlib.suppress(Exception):
                load_ray().get(relay.close.remote(), timeout=5)
        if pump is not None:
            pump.join(PUMP_WAIT_S * 4)

    def _pump_dialogs(self) -> None:
        ray = load_ray()
        relay = self._relay
        while not self._stop.is_set():
            try:
                request = ray.get(relay.next.remote(PUMP_WAIT_S), timeout=PUMP_WAIT_S * 10)
            except Exception:
                if self._stop.is_set():
                    return
                log.exception("the Ray dialog relay failed")
                time.sleep(PUMP_WAIT_S)
                continue
            if request is not None and request.get("kind") == "beat":
                self._beat(request)
                if self._on_beat is not None:
                    self._on_beat(self.latest_beats())
            elif request is not None:
                threading.Thread(
                    target=self._decide, args=(relay, request), name="mma-ray-ask", daemon=True
                ).start()

    def _decide(self, relay: Any, request: dict[str, Any]) -> None:
        try:
            decision = self._ask(request)
        except Exception as exc:
            decision = {"approved": False, "abort": False, "reason": f"the app could not ask: {exc}"}
        with contextlib.suppress(Exception):
            relay.answer.remote(request["id"], decision)


def _fields(request: AttemptRequest) -> dict[str, Any]:
    return {name: getattr(request, name) for name in request.__dataclass_fields__}
