"""The run log: one JSONL file per agent run, holding every prompt exactly as it was sent.

A *run* is one send of the AI client — a chat message, an MMA ticket attempt, a plan subtask
or phase — and its file is ``logs/sessions/<session>/runs/<run-id>.jsonl``. Each line is one
record ``{"type", "seq", "ts", "run_id", ...}``; :data:`RECORD_FIELDS` lists the fields of each
type (``docs/guide_governance.md`` has the same table, kept true by a test)::

    run_start   who and what: kind, session, conversation, ticket, tier, provider, model, version
    setup       one per provider the send tries: the tool loop's inputs (replay rebuilds from them)
    request     the whole ModelRequest: system, context, messages, tool declarations, tool_choice …
    response    text, tool calls with their arguments, usage, stop reason, latency
    retry/error a failed attempt of a request (retried / final)
    tool_call   a call the loop runs; tool_result what came back (status, output)
    refresh     the [SYSTEM: FILES UPDATED] block appended after a tool round
    decision    an Execution Clutch decision made during the run (dialog id, rule, decider …)
    note        any other comms entry of the run (history repaired, compacted, notices …)
    truncated   the file reached its cap: records after it are dropped (counted in run_end)
    run_end     outcome (answered / error / cancelled / round_limit), usage, counts

How it is wired: the client opens a run per send (:func:`record_run`, which makes it current for
:mod:`~manual_slop.governance.correlation`) and hands each tool loop to :meth:`RunLog.attach`,
which routes the loop's comms logger, its requests and its file refresher through the run. Every
record passes the app's redactor before it is written; each line is written with one ``write``
on a file opened for appending (a crash loses at most the line being written), and a run log
never grows past :data:`RUN_LOG_MAX_BYTES`. Writing never breaks a send: a failed write is logged
once and the run goes on unrecorded.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from manual_slop import __version__
from manual_slop.cancel import RequestCancelled
from manual_slop.governance.correlation import current_run, run_scope

if TYPE_CHECKING:
    from manual_slop.ai.messages import Message, ModelRequest
    from manual_slop.ai.tool_loop import ToolLoop
    from manual_slop.dialogs import Decision, PendingDialog
    from manual_slop.redaction import Redactor
    from manual_slop.session_log import SessionLog

__all__ = [
    "ENVELOPE",
    "NO_RUN",
    "RECORD_FIELDS",
    "RUNS_DIR",
    "RUN_ID",
    "RUN_LOG_MAX_BYTES",
    "NullRun",
    "RecordType",
    "RunKind",
    "RunLog",
    "RunLogs",
    "RunOutcome",
    "active_run",
    "answer_outcome",
    "message_json",
    "record_run",
    "run_kind",
]

log = logging.getLogger(__name__)

RUNS_DIR = "runs"  # inside the session folder
RUN_LOG_MAX_BYTES = 16 * 1024 * 1024  # a runaway run stops being recorded here (with a marker)
_END_RESERVE = 64 * 1024  # kept free under the cap for the marker and run_end
RUN_ID = re.compile(r"[0-9]{6}-[a-z]{2,12}-[0-9a-f]{8}")  # HHMMSS-kind-random; never a path
ERROR_TEXT_LIMIT = 2_000  # characters of an exception's text kept in run_end

Log = Callable[[str, str, dict[str, Any]], Any]


class RunKind(StrEnum):
    CHAT = "chat"  # a message sent from the discussion (or the Hook API)
    TICKET = "ticket"  # an MMA worker's attempt at a ticket
    TIER = "tier"  # an MMA tier call that is no ticket's (Tier 1 planning, Tier 2 tickets …)
    SUBTASK = "subtask"  # a /plan subtask on the llm engine
    PLAN = "plan"  # a /plan phase: planner, merge, judge


class RunOutcome(StrEnum):
    ANSWERED = "answered"
    ERROR = "error"  # error_kind says which (a provider error's kind, else the exception's class)
    CANCELLED = "cancelled"
    ROUND_LIMIT = "round_limit"  # the tool budget (rounds or output bytes) ran out before the answer


class RecordType(StrEnum):
    RUN_START = "run_start"
    SETUP = "setup"
    REQUEST = "request"
    RESPONSE = "response"
    RETRY = "retry"
    ERROR = "error"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    REFRESH = "refresh"
    DECISION = "decision"
    NOTE = "note"
    TRUNCATED = "truncated"
    RUN_END = "run_end"


ENVELOPE: tuple[str, ...] = ("type", "seq", "ts", "run_id")  # every record starts with these
RECORD_FIELDS: dict[RecordType, tuple[str, ...]] = {
    RecordType.RUN_START: (
        "kind", "session", "conversation", "ticket", "tier", "provider", "model", "app_version", "started",
    ),
    RecordType.SETUP: (
        "provider", "model", "native_tools", "forces_named_tools", "budget", "system_prompt", "memory",
        "context", "user_message", "prompt", "answer_schema", "tools_enabled", "tools", "trunc_limit",
        "continuing", "context_files", "history",
    ),
    RecordType.REQUEST: (
        "n", "round", "system", "context", "messages", "declarations", "tool_choice", "answer_schema",
        "asked_tools", "asked_paths",
    ),
    RecordType.RESPONSE: ("n", "text", "tool_calls", "stop_reason", "usage", "latency_ms"),
    RecordType.RETRY: ("n", "kind", "status", "retry", "delay_s", "error"),
    RecordType.ERROR: ("n", "kind", "status", "error"),
    RecordType.TOOL_CALL: ("round", "id", "name", "args"),
    RecordType.TOOL_RESULT: ("id", "name", "status", "output", "bytes"),
    RecordType.REFRESH: ("round", "text"),
    RecordType.DECISION: (
        "dialog", "kind", "call_id", "approved", "abort", "decider", "rule", "reason", "edited", "payload",
    ),
    RecordType.NOTE: ("kind", "payload"),
    RecordType.TRUNCATED: ("limit_bytes", "written_bytes"),
    RecordType.RUN_END: (
        "outcome", "error_kind", "error", "usage", "requests", "tool_calls", "decisions", "guards",
        "dropped", "duration_s", "ended",
    ),
}  # fmt: skip

# comms kinds the run records under their own type; the loop's "request" entry is a summary
# (the run records the whole request from the loop itself) and a refresh is recorded whole
_FROM_COMMS: dict[str, RecordType | None] = {
    "request": None,
    "context_refresh": None,
    "response": RecordType.RESPONSE,
    "retry": RecordType.RETRY,
    "error": RecordType.ERROR,
    "tool_call": RecordType.TOOL_CALL,
    "tool_result": RecordType.TOOL_RESULT,
}
_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def run_kind(conversation_kind: str, ticket: str) -> RunKind:
    """What kind of run a send is, from the conversation kind the caller gave it."""
    if conversation_kind == "mma":
        return RunKind.TICKET if ticket else RunKind.TIER
    if conversation_kind == "plan":
        return RunKind.SUBTASK if ticket else RunKind.PLAN
    return RunKind.CHAT


def message_json(message: Message) -> dict[str, Any]:
    """A conversation message as a run log keeps it (the provider's native form is left out)."""
    data: dict[str, Any] = {"role": str(message.role), "text": message.text}
    if message.tool_calls:
        data["tool_calls"] = [{"id": c.id, "name": c.name, "args": c.args} for c in message.tool_calls]
    if message.tool_outputs:
        data["tool_outputs"] = [
            {"call_id": o.call_id, "name": o.name, "content": o.content, "status": str(o.status)}
            for o in message.tool_outputs
        ]
    return data


class RunLogs:
    """Where one session's run logs go (``<session>/runs/``): opens a :class:`RunLog` per run."""

    def __init__(
        self, folder: Path, redactor: Redactor, session_id: str, max_bytes: int = RUN_LOG_MAX_BYTES
    ) -> None:
        self.folder = folder
        self.redactor = redactor
        self.session_id = session_id
        self.max_bytes = max_bytes

    @classmethod
    def for_session(cls, session: SessionLog) -> RunLogs:
        return cls(session.root / RUNS_DIR, session.redactor, session.session_id)

    def open(
        self, kind: RunKind, conversation: str, *, ticket: str = "", tier: str = "", provider: str = "",
        model: str = "",
    ) -> RunLog:  # fmt: skip
        """A new run's log, its ``run_start`` record written. Raises OSError when the folder or
        the file cannot be made."""
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        run_id = f"{time.strftime('%H%M%S')}-{kind}-{uuid.uuid4().hex[:8]}"
        path = self.folder / f"{run_id}.jsonl"
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))  # the user's prompts
        run = RunLog(path, run_id, conversation, ticket, self.redactor, self.max_bytes)
        run.write(
            RecordType.RUN_START,
            kind=str(kind), session=self.session_id, conversation=conversation, ticket=ticket, tier=tier,
            provider=provider, model=model, app_version=__version__, started=run.started,
        )  # fmt: skip
        return run


class RunLog:
    """One run's JSONL file. Thread-safe: the send's thread, tool threads and whoever decides a
    dialog write to it."""

    def __init__(
        self, path: Path, run_id: str, conversation: str, ticket: str, redactor: Redactor, max_bytes: int
    ) -> None:
        self.path = path
        self.run_id = run_id
        self.conversation = conversation
        self.ticket = ticket
        self.started = time.time()
        self._redactor = redactor
        self._max_bytes = max_bytes
        self._lock = threading.Lock()
        self._seq = 0
        self._bytes = 0
        self._truncated = False
        self._ended = False
        self._broken = False
        self._loop: ToolLoop | None = None
        self.requests = 0
        self.tool_calls = 0
        self.decisions = 0
        self.dropped = 0
        self.usage = dict.fromkeys(_USAGE_KEYS, 0)

    # -- writing -------------------------------------------------------------------------------
    def write(self, record: RecordType, /, **fields: Any) -> None:
        """Append one record (redacted); dropped once the run ended, or past the cap."""
        with self._lock:
            if self._ended or self._broken:
                return
            if record is RecordType.RUN_END:
                self._ended = True
            elif self._truncated:
                self.dropped += 1
                return
            line = self._line(record, fields)
            if record is not RecordType.RUN_END and self._bytes + len(line) > self._max_bytes - _END_RESERVE:
                self._truncated = True
                self.dropped += 1
                marker = {"limit_bytes": self._max_bytes, "written_bytes": self._bytes}
                line = self._line(RecordType.TRUNCATED, marker)
            self._append(line)

    def _line(self, record_type: RecordType, fields: Mapping[str, Any]) -> bytes:
        self._seq += 1
        envelope = {"type": str(record_type), "seq": self._seq, "ts": time.time(), "run_id": self.run_id}
        record = {**envelope, **fields}
        redact = self._redactor.redact
        record = self._redactor.redact_obj(record)  # values, not the line: a mark never breaks JSON
        text = json.dumps(record, ensure_ascii=False, default=lambda value: redact(str(value)))
        return (text + "\n").encode("utf-8", "replace")

    def _append(self, line: bytes) -> None:
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
            try:
                rest = memoryview(line)
                while rest:  # one write nearly always; the rest of a short one (only this run writes here)
                    rest = rest[os.write(fd, rest) :]
            finally:
                os.close(fd)
        except OSError as exc:
            self._broken = True  # the send goes on; this run is no longer recorded
            log.warning(
                "run log %s: writing failed (%s); the rest of the run is not recorded", self.path, exc
            )
            return
        self._bytes += len(line)

    # -- what the client hands over ------------------------------------------------------------
    def attach(self, loop: ToolLoop, *, prompt: str, memory: str, tools: Sequence[str] | None) -> None:
        """Record ``loop``'s inputs (a ``setup`` record) and route its logger, its requests and
        its file refresher through this run. ``prompt`` and ``memory`` are what the system text
        was built from; ``tools`` the names the send was limited to (None: every tool)."""
        setup, provider = loop.setup, loop.provider
        self._loop = loop
        self.write(
            RecordType.SETUP,
            provider=provider.name, model=provider.config.model, native_tools=provider.native_tools,
            forces_named_tools=provider.forces_named_tools, budget=list(provider.budget()),
            system_prompt=prompt, memory=memory, context=setup.context, user_message=setup.user_message,
            prompt=setup.prompt, answer_schema=setup.answer_schema, tools_enabled=loop.tools_enabled,
            tools=None if tools is None else list(tools), trunc_limit=setup.trunc_limit,
            continuing=setup.continuing, context_files=list(setup.refresher.paths()),
            history=[message_json(m) for m in loop.conversation.messages],
        )  # fmt: skip
        setup.log = self.logger(setup.log)
        setup.on_request = self.request
        setup.refresher = _RecordedRefresher(setup.refresher, self)

    def request(self, request: ModelRequest) -> None:
        """The whole request the loop is about to send."""
        try:
            self._request(request)
        except Exception:  # a bug here must not stop the send
            log.exception("run log %s: the request was not recorded", self.run_id)

    def _request(self, request: ModelRequest) -> None:
        loop = self._loop
        with self._lock:
            self.requests += 1
            n = self.requests
        declarations = request.declarations("openai") if request.declarations is not None else None
        self.write(
            RecordType.REQUEST,
            n=n, round=0 if loop is None else loop.rounds + loop.grace, system=request.system,
            context=request.context, messages=[message_json(m) for m in request.messages],
            declarations=declarations, tool_choice=str(request.tool_choice),
            answer_schema=request.answer_schema, asked_tools=list(request.asked_tools),
            asked_paths=list(request.asked_paths),
        )  # fmt: skip

    def logger(self, append: Log) -> Log:
        """``append`` (the comms log) that also records the entry in this run."""

        def log_entry(direction: str, kind: str, payload: dict[str, Any]) -> Any:
            entry = append(direction, kind, payload)
            try:
                self._from_comms(kind, payload)
            except Exception:  # a bug here must not stop the send
                log.exception("run log %s: a %s entry was not recorded", self.run_id, kind)
            return entry

        return log_entry

    def _from_comms(self, kind: str, payload: Mapping[str, Any]) -> None:
        if kind not in _FROM_COMMS:
            self.write(RecordType.NOTE, kind=kind, payload=dict(payload))
            return
        record = _FROM_COMMS[kind]
        if record is None:
            return
        fields = dict(payload)
        if record in (RecordType.RESPONSE, RecordType.RETRY, RecordType.ERROR):
            fields = {"n": self.requests, **fields}
        if record is RecordType.RESPONSE:
            self._add_usage(fields.get("usage"))
        elif record is RecordType.TOOL_CALL:
            with self._lock:
                self.tool_calls += 1
        self.write(record, **fields)

    def _add_usage(self, usage: Any) -> None:
        if not isinstance(usage, Mapping):
            return
        with self._lock:
            for key in _USAGE_KEYS:
                value = usage.get(key)
                if isinstance(value, int):
                    self.usage[key] += value

    def refreshed(self, text: str) -> None:
        """The refresh block a tool round appended (called by the wrapped refresher)."""
        loop = self._loop
        self.write(RecordType.REFRESH, round=0 if loop is None else loop.rounds, text=text)

    def decision(self, dialog: PendingDialog, decision: Decision, call_id: str) -> None:
        with self._lock:
            self.decisions += 1
        self.write(
            RecordType.DECISION,
            dialog=dialog.uid, kind=str(dialog.kind), call_id=call_id, approved=decision.approved,
            abort=decision.abort, decider=decision.decider, rule=decision.rule, reason=decision.reason,
            edited=decision.edited, payload=decision.payload,
        )  # fmt: skip

    def end(self, outcome: RunOutcome, error_kind: str = "", error: str = "") -> None:
        """The last record (once; later writes are ignored)."""
        now = time.time()
        self.write(
            RecordType.RUN_END,
            outcome=str(outcome), error_kind=error_kind, error=error[:ERROR_TEXT_LIMIT],
            usage=dict(self.usage), requests=self.requests, tool_calls=self.tool_calls,
            decisions=self.decisions, guards=dict(self._loop.guard_counts) if self._loop is not None else {},
            dropped=self.dropped, duration_s=round(now - self.started, 3),
            ended=now,
        )  # fmt: skip

    def answered(self) -> RunOutcome:
        """How a send that returned an answer ended (see :func:`answer_outcome`)."""
        return RunOutcome.ANSWERED if self._loop is None else answer_outcome(self._loop)


class NullRun:
    """The run of a send that keeps no run log (sub-calls, a client without :class:`RunLogs`)."""

    run_id = ""
    conversation = ""
    ticket = ""

    def attach(self, loop: ToolLoop, *, prompt: str, memory: str, tools: Sequence[str] | None) -> None:
        return None  # nothing is recorded

    def decision(self, dialog: PendingDialog, decision: Decision, call_id: str) -> None:
        return None  # nothing is recorded


NO_RUN = NullRun()


class _RecordedRefresher:
    """A file refresher whose non-empty blocks are also recorded in the run."""

    def __init__(self, inner: Any, run: RunLog) -> None:
        self._inner = inner
        self._run = run

    def paths(self) -> list[str]:
        return self._inner.paths()

    def check(self) -> str:
        text = self._inner.check()
        if text:
            self._run.refreshed(text)
        return text


def answer_outcome(loop: ToolLoop) -> RunOutcome:
    """How a loop that returned an answer ended: normally, or forced by its tool budget (the
    rounds or the output bytes: the loop guard's ``limit_hit``)."""
    return RunOutcome.ROUND_LIMIT if loop.limit_hit else RunOutcome.ANSWERED


def active_run() -> RunLog | NullRun:
    """The run log of the send in progress on this thread, or :data:`NO_RUN`."""
    run = current_run()
    return run if isinstance(run, RunLog) else NO_RUN


@contextlib.contextmanager
def record_run(
    runs: RunLogs | None, conversation: str, conversation_kind: str, *, ticket: str = "", tier: str = "",
    provider: str = "", model: str = "",
) -> Iterator[RunLog | NullRun]:  # fmt: skip
    """Record one send as a run while the block runs (current for the correlation ids); its
    ``run_end`` says how the block ended. Without ``runs``, or when the log cannot be opened,
    the send runs unrecorded."""
    run: RunLog | None = None
    if runs is not None:
        kind = run_kind(conversation_kind, ticket)
        try:
            run = runs.open(kind, conversation, ticket=ticket, tier=tier, provider=provider, model=model)
        except OSError as exc:
            log.warning("no run log for this send: %s", exc)
    if run is None:
        yield NO_RUN
        return
    with run_scope(run):
        try:
            yield run
        except RequestCancelled as exc:
            run.end(RunOutcome.CANCELLED, "cancelled", exc.reason)
            raise
        except BaseException as exc:
            run.end(RunOutcome.ERROR, str(getattr(exc, "kind", "") or type(exc).__name__), str(exc))
            raise
        run.end(run.answered())
