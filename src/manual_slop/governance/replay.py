"""Replay a recorded run through the live tool loop, and show where the live code now differs.

:func:`replay` rebuilds the run's inputs from its ``setup`` records — the history, the user's
message, the context, the prompt and memory the system text is built from (with today's
:func:`~manual_slop.ai.prompts.system_text`), the tools offered (today's declarations of the
app's built-in tools) — and runs today's :class:`~manual_slop.ai.tool_loop.ToolLoop` on them,
one loop per provider the send tried, against a provider that answers each request with the
recorded attempts (retries, errors, the response) in order. Tools are never run: each call is
answered with its recorded result (and a recorded ``abort`` decision stops the round as it did),
so a replay cannot touch the project. The file refresh blocks come from the recording too.

Each request the live loop builds is compared with the recorded one — system, context, messages,
tool declarations, tool_choice, answer schema, asked tools and paths — and each tool call it
dispatches with the recorded call; then the number of requests and calls and the outcome. The
first difference ends the replay with a unified diff of the differing part. What replay does not
rebuild: compaction (a run whose history was summarized diverges at the request after it, and
says so), and the upstream text a caller wrote (an MMA ticket's prompt is taken as recorded).
"""

from __future__ import annotations

import difflib
import json
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from manual_slop.ai.errors import ErrorKind, ProviderError
from manual_slop.ai.loop_guard import WARNING_MARK
from manual_slop.ai.messages import Message, ModelReply, ModelRequest, Role, StreamSink, ToolOutput, Usage
from manual_slop.ai.prompts import system_text
from manual_slop.ai.providers.base import Provider, ProviderConfig
from manual_slop.ai.retry import RetryPolicy
from manual_slop.ai.tool_loop import LoopSetup, ToolLoop
from manual_slop.ai.transcript import Conversation
from manual_slop.cancel import RequestCancelled
from manual_slop.events import EventEmitter
from manual_slop.governance.run_files import RunLogError, read_run
from manual_slop.governance.run_log import RECORD_FIELDS, RecordType, RunOutcome, answer_outcome, message_json
from manual_slop.tools.registry import ToolRegistry, default_registry
from manual_slop.tools.tool import ExecutionContext, Tool, ToolCall, ToolResult, ToolStatus

__all__ = [
    "EXIT_DIVERGED",
    "EXIT_IDENTICAL",
    "EXIT_UNREADABLE",
    "Divergence",
    "ReplayResult",
    "replay",
]

EXIT_IDENTICAL = 0
EXIT_DIVERGED = 1
EXIT_UNREADABLE = 2
REQUEST_PARTS = (
    "system", "context", "messages", "declarations", "tool_choice", "answer_schema", "asked_tools",
    "asked_paths",
)  # fmt: skip
_NO_WAIT = RetryPolicy(base_delay_s=0.0, max_delay_s=0.0, max_retry_after_s=1e9, jitter=0.0)
_REQUIRED = (
    RecordType.SETUP,
    RecordType.REQUEST,
    RecordType.RESPONSE,
    RecordType.TOOL_CALL,
    RecordType.TOOL_RESULT,
)


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first place the live code differs from the recording."""

    where: str  # "request 2", "tool call 3", "the run"
    part: str  # a request part, "call", "count" or "outcome"
    message: str
    diff: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"where": self.where, "part": self.part, "message": self.message, "diff": self.diff}


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """What a replay found: how much it compared, and the first divergence (None: identical)."""

    run_id: str
    requests: int
    tool_calls: int
    divergence: Divergence | None
    notes: tuple[str, ...] = ()

    @property
    def identical(self) -> bool:
        return self.divergence is None

    @property
    def exit_code(self) -> int:
        return EXIT_IDENTICAL if self.identical else EXIT_DIVERGED

    def summary(self) -> str:
        head = f"replayed {_count(self.requests, 'request')}, {_count(self.tool_calls, 'tool call')}: "
        lines = [head + ("identical" if self.divergence is None else f"diverged at {self.divergence.where}")]
        if self.divergence is not None:
            lines.append(self.divergence.message)
            if self.divergence.diff:
                lines.append(self.divergence.diff.rstrip("\n"))
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "identical": self.identical,
            "requests": self.requests,
            "tool_calls": self.tool_calls,
            "divergence": None if self.divergence is None else self.divergence.to_dict(),
            "notes": list(self.notes),
        }


class _Stop(Exception):
    """Ends the live loop: a divergence was found, or the recording ran out."""


@dataclass(slots=True)
class _Request:
    record: dict[str, Any]
    attempts: deque[dict[str, Any]] = field(default_factory=deque)  # retry, error, response


@dataclass(slots=True)
class _Segment:
    """One provider the send tried: its inputs and what the recording says it answered."""

    setup: dict[str, Any]
    requests: list[_Request] = field(default_factory=list)
    results: dict[str, deque[dict[str, Any]]] = field(default_factory=dict)  # call id -> tool_result
    refresh: dict[int, str] = field(default_factory=dict)  # round -> refresh block
    aborted: set[str] = field(default_factory=set)  # call ids whose decision aborted the round
    compacted_before: set[int] = field(default_factory=set)  # request numbers after a compaction


def replay(path: Path) -> ReplayResult:
    """Replay the run log at ``path``; RunLogError when it cannot be read or replayed."""
    records = read_run(path)
    segments, calls, end = _script(path, records)
    return _Replay(str(records[0].get("run_id", path.stem)), segments, calls, end).run()


def _script(
    path: Path, records: list[dict[str, Any]]
) -> tuple[list[_Segment], list[dict[str, Any]], dict[str, Any] | None]:
    """The recording cut into segments (one per ``setup``), every tool call, and run_end."""
    segments: list[_Segment] = []
    calls: list[dict[str, Any]] = []
    end: dict[str, Any] | None = None
    cut = next((line for line, r in enumerate(records, start=1) if r["type"] == RecordType.TRUNCATED), 0)
    if cut:
        raise RunLogError(
            path, cut, "the run log was cut at its size cap; a truncated run cannot be replayed"
        )
    for line, record in enumerate(records, start=1):
        kind = RecordType(record["type"])
        if kind in _REQUIRED:
            missing = [name for name in RECORD_FIELDS[kind] if name not in record]
            if missing:
                raise RunLogError(path, line, f"a {kind} record without {', '.join(missing)}")
        if kind is RecordType.RUN_END:
            end = record
            continue
        if kind is RecordType.SETUP:
            segments.append(_Segment(record))
            continue
        if kind in (RecordType.RUN_START, RecordType.DECISION, RecordType.NOTE) and not segments:
            continue
        if not segments:
            raise RunLogError(path, line, f"a {kind} record before any setup record")
        _add(segments[-1], kind, record, calls, path, line)
    if not segments:
        raise RunLogError(path, 0, "no setup record: the run never reached a provider")
    return segments, calls, end


def _add(
    segment: _Segment, kind: RecordType, record: dict[str, Any], calls: list[dict[str, Any]], path: Path,
    line: int,
) -> None:  # fmt: skip
    if kind is RecordType.REQUEST:
        segment.requests.append(_Request(record))
    elif kind in (RecordType.RESPONSE, RecordType.RETRY, RecordType.ERROR):
        if not segment.requests:
            raise RunLogError(path, line, f"a {kind} record before any request")
        segment.requests[-1].attempts.append(record)
    elif kind is RecordType.TOOL_CALL:
        calls.append(record)
    elif kind is RecordType.TOOL_RESULT:
        segment.results.setdefault(str(record["id"]), deque()).append(record)
    elif kind is RecordType.REFRESH:
        segment.refresh[int(record.get("round", 0))] = str(record.get("text", ""))
    elif kind is RecordType.DECISION and record.get("abort") and record.get("call_id"):
        segment.aborted.add(str(record["call_id"]))
    elif (
        kind is RecordType.NOTE
        and isinstance(record.get("payload"), dict)
        and record["payload"].get("compacted_messages")
    ):
        segment.compacted_before.add(len(segment.requests) + 1)


class _Replay:
    """One replay: the live loops, and the comparison as they go."""

    def __init__(
        self, run_id: str, segments: list[_Segment], calls: list[dict[str, Any]], end: dict[str, Any] | None
    ) -> None:
        self.run_id = run_id
        self.segments = segments
        self.recorded = [request for segment in segments for request in segment.requests]
        self.calls = calls
        self.end = end
        self.requests = 0  # live requests compared
        self.tool_calls = 0  # live tool calls compared
        self.divergence: Divergence | None = None
        self.notes: list[str] = []
        self._current: _Request | None = None
        self._segment: _Segment | None = None

    def run(self) -> ReplayResult:
        outcome = self._loops()
        if self.divergence is None:
            self._check_counts_and_outcome(outcome)
        return ReplayResult(self.run_id, self.requests, self.tool_calls, self.divergence, tuple(self.notes))

    def _loops(self) -> str | None:
        conversation = Conversation(
            messages=[_message(m) for m in self.segments[0].setup["history"] or []], id="replay"
        )
        with tempfile.TemporaryDirectory(prefix="slop-replay-") as scratch:
            for segment in self.segments:
                self._segment = segment
                provider = _RecordedProvider(segment.setup, self._answer)
                loop = ToolLoop(provider, conversation, self._setup(segment, Path(scratch)))
                try:
                    loop.run()
                except _Stop:
                    return None
                except RequestCancelled:
                    return str(RunOutcome.CANCELLED)
                except ProviderError:
                    continue  # as the client does: the next provider of the chain takes over
                return str(answer_outcome(loop))
        return str(RunOutcome.ERROR)

    def _setup(self, segment: _Segment, scratch: Path) -> LoopSetup:
        inputs = segment.setup
        registry = _tools(inputs, self._result) if inputs["tools_enabled"] else None
        context = ExecutionContext.for_directory(scratch, abort=threading.Event()) if registry else None
        return LoopSetup(
            system=system_text(str(inputs["system_prompt"]), str(inputs["context"]), str(inputs["memory"])),
            context=str(inputs["context"]),
            user_message=str(inputs["user_message"]),
            prompt=str(inputs["prompt"]),
            answer_schema=inputs["answer_schema"],
            registry=registry,
            exec_context=context,
            trunc_limit=int(inputs["trunc_limit"]),
            refresher=_RecordedRefresher(list(inputs["context_files"] or []), segment.refresh),
            stream=StreamSink(None),
            retry=_NO_WAIT,
            log=self._log,
            events=EventEmitter(),
            wait=lambda seconds: False,
            abort=context.abort if context is not None else None,
            base_dir=str(scratch),
            continuing=bool(inputs["continuing"]),
            on_request=self._compare_request,
        )

    # -- the live requests ------------------------------------------------------------------------
    def _compare_request(self, request: ModelRequest) -> None:
        index = self.requests
        if index >= len(self.recorded):
            self._end_of_recording("the recording ends here: the run was stopped before this request")
            self._diverge(
                f"request {index + 1}", "count",
                f"the live code made request {index + 1}; the recording has only {len(self.recorded)}",
            )  # fmt: skip
        self.requests += 1
        recorded = self._current = self.recorded[index]
        live = _normalized(_request_parts(request))
        for part in REQUEST_PARTS:
            want, got = recorded.record.get(part), live.get(part)
            if want != got:
                n = recorded.record.get("n", index + 1)
                hint = _tool_changes(want, got) if part == "declarations" else ""
                if self._segment is not None and n in self._segment.compacted_before:
                    hint = " (the recorded run compacted its history before this request; replay does not)"
                self._diverge(
                    f"request {n}", part,
                    f"request {n}: the {part} {'differ' if part.endswith('s') else 'differs'} from the "
                    f"recording{hint}",
                    _diff(want, got, f"recorded request {n} {part}", f"live request {n} {part}"),
                )  # fmt: skip

    def _answer(self, request: ModelRequest, provider: str) -> ModelReply:
        current = self._current
        if current is None or not current.attempts:
            self._end_of_recording(f"the recording ends during request {self.requests}: the run was stopped")
            self._diverge(
                f"request {self.requests}", "count",
                f"request {self.requests}: the live code tried again after the recording's last attempt",
            )  # fmt: skip
        attempt = current.attempts.popleft()
        if attempt["type"] == RecordType.RESPONSE:
            return _reply(attempt)
        try:
            kind = ErrorKind(str(attempt.get("kind", "unknown")))
        except ValueError:
            kind = ErrorKind.UNKNOWN
        status = attempt.get("status") if isinstance(attempt.get("status"), int) else None
        retryable = attempt["type"] == RecordType.RETRY
        raise ProviderError(
            kind, provider, status=status, retryable=retryable, message=str(attempt.get("error"))
        )

    # -- the live tool calls ----------------------------------------------------------------------
    def _log(self, direction: str, kind: str, payload: dict[str, Any]) -> None:
        if kind != "tool_call":
            return
        index = self.tool_calls
        if index >= len(self.calls):
            self._diverge(
                f"tool call {index + 1}", "count",
                f"the live code made tool call {index + 1} ({payload.get('name')}); the recording has only "
                f"{len(self.calls)}",
            )  # fmt: skip
        self.tool_calls += 1
        recorded = self.calls[index]
        want = _normalized({k: recorded.get(k) for k in ("name", "id", "args")})
        got = _normalized({k: payload.get(k) for k in ("name", "id", "args")})
        if want != got:
            self._diverge(
                f"tool call {index + 1}", "call", f"tool call {index + 1} differs from the recording",
                _diff(want, got, f"recorded tool call {index + 1}", f"live tool call {index + 1}"),
            )  # fmt: skip

    def _result(self, call: ToolCall, ctx: ExecutionContext) -> ToolResult:
        segment = self._segment
        queue = segment.results.get(call.id) if segment is not None else None
        if not queue:
            self._diverge(
                f"tool call {self.tool_calls}", "call",
                f"the live code ran {call.name} ({call.id}), which the recording has no result for",
            )  # fmt: skip
        recorded = queue.popleft()  # type: ignore[union-attr]
        if segment is not None and call.id in segment.aborted and ctx.abort is not None:
            ctx.abort.set()  # the user aborted here: the rest of the round is not run
        # the recorded output is what the model got: without the guard's warning, which the live
        # loop adds again
        output = str(recorded.get("output", "")).split(WARNING_MARK, 1)[0]
        return ToolResult(ToolStatus(str(recorded.get("status", "success"))), output)

    # -- the end -----------------------------------------------------------------------------------
    def _check_counts_and_outcome(self, outcome: str | None) -> None:
        if outcome is None:
            return  # the recording ran out (noted)
        if self.requests < len(self.recorded):
            self.divergence = Divergence(
                "the run", "count",
                f"the live run made {self.requests} requests; the recording has {len(self.recorded)}",
            )  # fmt: skip
        elif self.tool_calls < len(self.calls):
            self.divergence = Divergence(
                "the run", "count",
                f"the live run made {self.tool_calls} tool calls; the recording has {len(self.calls)}",
            )  # fmt: skip
        elif self.end is None:
            self.notes.append("the recording has no run_end: the app stopped before the run ended")
        elif outcome != self.end.get("outcome"):
            self.divergence = Divergence(
                "the run",
                "outcome",
                f"the live run ended {outcome}; the recorded run ended {self.end.get('outcome')}",
            )

    def _end_of_recording(self, note: str) -> None:
        """Stop the live loop where a stopped or unfinished recording ends (noted); a finished
        recording has no such end, and the caller reports the divergence."""
        if self.end is None or self.end.get("outcome") == RunOutcome.CANCELLED:
            self.notes.append(note)
            raise _Stop

    def _diverge(self, where: str, part: str, message: str, diff: str = "") -> NoReturn:
        if self.divergence is None:
            self.divergence = Divergence(where, part, message, diff)
        raise _Stop


class _RecordedProvider(Provider):
    """A provider that answers from the recording (through ``answer``), shaped like the recorded
    one: its name, model, token budget and whether it forces named tools."""

    needs_api_key = False

    def __init__(self, setup: dict[str, Any], answer: Callable[[ModelRequest, str], ModelReply]) -> None:
        super().__init__(ProviderConfig(str(setup["provider"]), str(setup["model"])))
        # per instance: the recorded provider's traits (the base class keeps them per class)
        self.name = str(setup["provider"])  # type: ignore[misc]
        self.native_tools = bool(setup["native_tools"])  # type: ignore[misc]
        self.forces_named_tools = bool(setup["forces_named_tools"])  # type: ignore[misc]
        trigger, target = setup["budget"]
        self._budget = (int(trigger), int(target))
        self._answer = answer

    def budget(self) -> tuple[int, int]:
        return self._budget

    def generate(self, request: ModelRequest) -> ModelReply:
        return self._answer(request, self.name)

    def classify(self, exc: BaseException) -> ProviderError:
        return ProviderError(ErrorKind.UNKNOWN, self.name, exc)


class _RecordedTools(ToolRegistry):
    """Today's tools (their declarations are compared), each call answered from the recording."""

    def __init__(
        self, tools: Sequence[Tool], result: Callable[[ToolCall, ExecutionContext], ToolResult]
    ) -> None:
        super().__init__(tools)
        self._recorded_result = result

    def execute_many(self, calls: Sequence[ToolCall], ctx: ExecutionContext) -> list[ToolResult]:
        return [self._recorded_result(call, ctx) for call in calls]


class _RecordedRefresher:
    """The context's files as recorded, and the refresh block recorded after each round."""

    def __init__(self, paths: list[str], blocks: dict[int, str]) -> None:
        self._paths = paths
        self._blocks = blocks
        self._round = 0

    def paths(self) -> list[str]:
        return list(self._paths)

    def check(self) -> str:
        self._round += 1  # the loop checks once per round that ran tools
        return self._blocks.get(self._round, "")


def _tools(
    inputs: dict[str, Any], result: Callable[[ToolCall, ExecutionContext], ToolResult]
) -> _RecordedTools:
    live = default_registry()
    names = inputs["tools"]
    chosen = live if names is None else live.subset(str(n) for n in names)
    return _RecordedTools(chosen.list(), result)


def _request_parts(request: ModelRequest) -> dict[str, Any]:
    """A live request as the run log records it (see ``RunLog.request``)."""
    return {
        "system": request.system,
        "context": request.context,
        "messages": [message_json(m) for m in request.messages],
        "declarations": request.declarations("openai") if request.declarations is not None else None,
        "tool_choice": str(request.tool_choice),
        "answer_schema": request.answer_schema,
        "asked_tools": list(request.asked_tools),
        "asked_paths": list(request.asked_paths),
    }


def _tool_changes(want: Any, got: Any) -> str:
    """Which tools the live declarations dropped, added or changed, e.g. `` (gone: run_shell)``."""

    def by_name(declarations: Any) -> dict[str, Any]:
        if not isinstance(declarations, list):
            return {}
        return {str(d.get("function", {}).get("name")): d for d in declarations if isinstance(d, dict)}

    before, after = by_name(want), by_name(got)
    changes = [
        ("gone", [n for n in before if n not in after]),
        ("new", [n for n in after if n not in before]),
        ("changed", [n for n in before if n in after and before[n] != after[n]]),
    ]
    listed = "; ".join(f"{label}: {', '.join(names)}" for label, names in changes if names)
    return f" ({listed})" if listed else ""


def _normalized(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples become lists, enums strings …)."""
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


def _diff(want: Any, got: Any, recorded: str, live: str) -> str:
    def lines(value: Any) -> list[str]:
        text = (
            value
            if isinstance(value, str)
            else json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True)
        )
        return text.splitlines(keepends=True) or ["\n"]

    diff = difflib.unified_diff(lines(want), lines(got), fromfile=recorded, tofile=live)
    return "".join(line if line.endswith("\n") else line + "\n" for line in diff)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _message(data: dict[str, Any]) -> Message:
    return Message(
        Role(str(data.get("role", "user"))),
        str(data.get("text", "")),
        tuple(
            ToolCall(str(c["id"]), str(c["name"]), dict(c.get("args") or {}))
            for c in data.get("tool_calls", [])
        ),
        tuple(
            ToolOutput(
                str(o["call_id"]), str(o["name"]), str(o.get("content", "")), ToolStatus(str(o["status"]))
            )
            for o in data.get("tool_outputs", [])
        ),
    )


def _reply(record: dict[str, Any]) -> ModelReply:
    usage = record.get("usage") if isinstance(record.get("usage"), dict) else {}
    return ModelReply(
        str(record.get("text", "")),
        tuple(
            ToolCall(str(c.get("id")), str(c.get("name")), dict(c.get("args") or {}))
            for c in record.get("tool_calls") or []
        ),
        Usage(**{k: int(v) for k, v in usage.items() if k in Usage.__dataclass_fields__}),
        str(record.get("stop_reason", "")),
    )
