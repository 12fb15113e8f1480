"""The tool loop: one implementation for every provider.

:meth:`ToolLoop.run` reads top to bottom::

    repair the history, add the user's message
    ask the model (compact + trim history first; retries with backoff)
    while the answer has tool calls:
        cancelled?                     -> RequestCancelled (the partial answer kept)
        abort flag set?                -> stop
        rounds used up / 500 KB spent? -> grace round: calls answered "not executed"
        else                           -> run the round's calls concurrently
                                          (ToolRegistry.execute_many: clutch for mutating calls)
        append the files that changed ([SYSTEM: FILES UPDATED]) to the last output
        ask the model again (tool_choice=none once the budget is spent)
    return the answer's text

At most :data:`MAX_TOOL_ROUNDS` rounds execute tools; after that, :data:`GRACE_ROUNDS`
more model calls are made with tools switched off to get a final answer. A model
mistake (unknown tool, bad arguments, a malformed XML block) comes back to the model as
an error output, never as an exception.

The request's :class:`~manual_slop.cancel.CancelToken` is checked before every model
call, waited on between retries, current (``cancel_scope``) while a provider works, and
sets the tools' abort flag: a cancel ends the loop with
:class:`~manual_slop.cancel.RequestCancelled` carrying the answer as far as it got.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from manual_slop.ai.errors import ProviderError
from manual_slop.ai.grammar import mentioned_paths, named_tools
from manual_slop.ai.loop_guard import (
    DEFAULT_LIMITS,
    GuardKind,
    GuardLimits,
    RepeatGuard,
    refusal_text,
    warning_text,
)
from manual_slop.ai.messages import (
    INVALID_CALL_KEY,
    Message,
    ModelReply,
    ModelRequest,
    Role,
    StreamSink,
    ToolChoice,
    ToolOutput,
    Usage,
)
from manual_slop.ai.providers.base import Provider
from manual_slop.ai.refresh import Refresher
from manual_slop.ai.retry import RetryPolicy, call_with_retries
from manual_slop.ai.transcript import Conversation, estimate_tokens
from manual_slop.cancel import CancelToken, RequestCancelled, cancel_scope
from manual_slop.events import EventEmitter
from manual_slop.tools.registry import ToolRegistry
from manual_slop.tools.tool import ExecutionContext, ToolCall, ToolStatus

if TYPE_CHECKING:
    from manual_slop.ai.images import ImageAttachment
    from manual_slop.memory.compaction import Compactor

__all__ = [
    "BUDGET_WARNING",
    "GRACE_ROUNDS",
    "MAX_TOOL_OUTPUT_BYTES",
    "MAX_TOOL_ROUNDS",
    "LoopSetup",
    "ToolLoop",
]

MAX_TOOL_ROUNDS = 10
GRACE_ROUNDS = 2
MAX_TOOL_OUTPUT_BYTES = 500_000
BUDGET_WARNING = (
    "SYSTEM WARNING: Cumulative tool output exceeded the 500KB budget for this request. "
    "Do not call more tools; give your final answer now with what you have."
)
ROUND_LIMIT_NOTE = (
    "[SYSTEM: the limit of {rounds} tool rounds for this request is reached. "
    "Do not call more tools; give your final answer now.]"
)
EMPTY_ANSWER = "(The model gave no answer after its tool calls. What they did:)"
MAX_SUMMARY_LINES = 12
GAVE_UP = "(the model kept calling tools after {rounds} rounds and gave no final answer)"
NOT_EXECUTED = "NOT EXECUTED: no more tool calls are run for this request; answer with what you have."
LIMIT_REPORT = {
    GuardKind.ROUND_LIMIT: "[stopped at the limit of {rounds} tool rounds: this answer was forced and may be "
    "incomplete]",
    GuardKind.OUTPUT_BUDGET: "[stopped at the 500 KB tool output budget: this answer was forced and may be "
    "incomplete]",
}
Log = Callable[[str, str, dict[str, Any]], None]


@dataclass(slots=True)
class LoopSetup:
    """Everything one send needs besides the provider and its conversation."""

    system: str
    context: str
    user_message: str
    registry: ToolRegistry | None  # None: tools disabled for this send
    exec_context: ExecutionContext | None
    trunc_limit: int
    refresher: Refresher
    stream: StreamSink
    retry: RetryPolicy
    log: Log
    events: EventEmitter
    wait: Callable[[float], bool]
    qa_callback: Callable[[str], str | None] | None = None
    patch_callback: Callable[[str, str], str | None] | None = None
    usage: Usage = field(default_factory=Usage)
    abort: threading.Event | None = None
    base_dir: str = "."  # where a provider that runs tools itself works (the Gemini CLI)
    on_tool_call: Callable[[dict[str, Any]], Any] | None = None  # logs such a provider's tool calls
    # the app's redactor: every tool output and refresh block passes it before the model sees it
    redact: Callable[[str], str] = field(default=lambda text: text)
    cancel: CancelToken = field(default_factory=CancelToken)
    answer_schema: dict[str, Any] | None = None  # the answer is one JSON object of this schema
    images: tuple[ImageAttachment, ...] = ()  # what the provider takes of the context's images
    prompt: str = ""  # the user's own message (without the discussion put before it)
    continuing: bool = False  # the turn is already in the conversation (a fallback takes it over)
    # summarizes older rounds when the conversation grows (memory.compaction); None: trim instead
    compactor: Compactor | None = None
    guard: GuardLimits = DEFAULT_LIMITS  # when an identical tool call warns and when it is refused
    # sees each request whole before it is sent (the run log keeps every prompt)
    on_request: Callable[[ModelRequest], None] = field(default=lambda request: None)


class ToolLoop:
    """Runs one send on one provider; the conversation is updated as it goes."""

    def __init__(self, provider: Provider, conversation: Conversation, setup: LoopSetup) -> None:
        self.provider = provider
        self.conversation = conversation
        self.setup = setup
        self.rounds = 0  # rounds that executed tools
        self.grace = 0  # model calls made after the budget was spent
        self.output_bytes = 0
        self._warned = False
        self._answer = ""  # the text of the last complete model answer (a cancel keeps it)
        self._forced = False  # a call of this exchange was made to call the tools the user named
        # (only ever set for a provider that forces named tools: see _asked_tools)
        self.ran: list[str] = []  # one line per tool call executed: what it did
        self.guard_counts: Counter[str] = Counter()  # GuardKind -> trips in this run
        self.limit_hit = ""  # the GuardKind of the limit that forced the answer ('' when none did)
        self._repeats: RepeatGuard | None = None

    @property
    def tools_enabled(self) -> bool:
        return self.setup.registry is not None and self.setup.exec_context is not None

    def run(self) -> str:
        if not self.setup.continuing:
            notes = self.conversation.repair()
            if notes:
                self.setup.log("OUT", "history", {"repaired": notes})
            self.conversation.add(Message.user(self.setup.user_message))
        if self.tools_enabled:
            registry = self.setup.registry
            assert registry is not None
            self._repeats = RepeatGuard(
                self.setup.guard, lambda name: name in registry and registry.get(name).mutating
            )
            self._repeats.seed(self.conversation.messages)
        reply = self._ask(ToolChoice.AUTO)
        while True:
            if reply.tool_calls and not self.tools_enabled:
                self.setup.log(
                    "IN", "notice", {"message": "tool calls ignored: tools are disabled for this request"}
                )
                self.conversation.add(Message.assistant(reply.text), reply.usage)  # calls dropped
                return reply.text
            if not reply.tool_calls and not reply.text.strip() and self.ran:
                reply = dataclasses.replace(reply, text=self._what_ran())  # never an empty answer
            self.conversation.add(  # the calls run as the model made them; history keeps no secret
                _redacted(
                    Message.assistant(reply.text, reply.tool_calls, reply.native, self.provider.name),
                    self.setup.redact,
                ),
                reply.usage,
            )
            if not reply.tool_calls:
                return self._limited(reply.text) if self._spent() else reply.text
            if self.setup.abort is not None and self.setup.abort.is_set():
                self.setup.log("IN", "notice", {"message": "aborted: the remaining tool calls were not run"})
                self.conversation.add(Message.tool(_answer_all(reply.tool_calls, "the request was aborted")))
                self.setup.cancel.check(reply.text)  # stopped from outside: the request ends cancelled
                return reply.text or "(aborted before the model finished)"
            if self._spent():
                self.grace += 1
                if self.grace > GRACE_ROUNDS:
                    self.conversation.add(Message.tool(_answer_all(reply.tool_calls, NOT_EXECUTED)))
                    return self._limited(reply.text or GAVE_UP.format(rounds=MAX_TOOL_ROUNDS))
                outputs = _answer_all(reply.tool_calls, NOT_EXECUTED)
            else:
                self.rounds += 1
                outputs = self._execute(reply.tool_calls)
            if self._spent():
                outputs = _append(outputs, self._limit_note())
            self.conversation.add(Message.tool(outputs))
            reply = self._ask(ToolChoice.NONE if self._spent() else ToolChoice.AUTO)

    def _spent(self) -> bool:
        return self.rounds >= MAX_TOOL_ROUNDS or self.output_bytes > MAX_TOOL_OUTPUT_BYTES

    def _limited(self, text: str) -> str:
        """``text`` marked as an answer the round or output limit forced (logged as a guard trip)."""
        kind = GuardKind.OUTPUT_BUDGET if self.output_bytes > MAX_TOOL_OUTPUT_BYTES else GuardKind.ROUND_LIMIT
        self.limit_hit = str(kind)
        self._trip(kind, "", rounds=self.rounds, output_bytes=self.output_bytes)
        note = LIMIT_REPORT[kind].format(rounds=MAX_TOOL_ROUNDS)
        return f"{text}\n\n{note}" if text.strip() else note

    def _trip(self, kind: GuardKind, tool: str, **details: Any) -> None:
        """Count a guard trip of this run, log it and announce it (``guard_trip``)."""
        self.guard_counts[str(kind)] += 1
        count = self.guard_counts[str(kind)]
        self.setup.log("IN", "guard", {"kind": str(kind), "tool": tool, "run_count": count, **details})
        self.setup.events.emit("guard_trip", kind=str(kind), tool=tool)

    def _limit_note(self) -> str:
        if self.output_bytes > MAX_TOOL_OUTPUT_BYTES:
            return BUDGET_WARNING
        return ROUND_LIMIT_NOTE.format(rounds=MAX_TOOL_ROUNDS)

    # -- one model call ----------------------------------------------------------------------
    def _ask(self, choice: ToolChoice) -> ModelReply:
        setup = self.setup
        setup.cancel.check(self._answer)
        if self._forced:
            choice = ToolChoice.NONE  # the named tools ran: now the answer
        asked = self._asked_tools(choice)
        self._forced = self._forced or bool(asked)
        if self.conversation.compact(setup.trunc_limit):
            setup.log("OUT", "history", {"compacted": True, "trunc_limit": setup.trunc_limit})
        declarations = self._declarations() if self.tools_enabled else None
        fixed = estimate_tokens(len(setup.system) + len(setup.context))
        if declarations is not None:
            fixed += estimate_tokens(len(json.dumps(declarations("openai"))))
        trigger, target = self.provider.budget()
        if setup.compactor is not None:
            setup.compactor.maybe_compact(self.conversation, target, fixed, setup.log)
        # the last resort, after compaction failed or folded too little: the request must fit the
        # provider's window (the store keeps every dropped turn for recall)
        dropped = self.conversation.trim(trigger, target, fixed)
        if dropped:
            setup.log("OUT", "history", {"trimmed_messages": dropped, "budget_tokens": target})
        context_files = setup.refresher.paths()
        request = ModelRequest(
            system=setup.system,
            context=setup.context,
            messages=list(self.conversation.messages),
            declarations=declarations,
            tool_choice=choice,
            stream=setup.stream,
            context_files=context_files,
            workdir=setup.base_dir,
            on_tool_call=setup.on_tool_call,
            cancel=setup.cancel,
            answer_schema=setup.answer_schema,
            asked_tools=asked,
            asked_paths=tuple(mentioned_paths(setup.prompt, context_files)) if asked else (),
            images=setup.images,
        )
        setup.on_request(request)
        last = request.messages[-1]
        setup.log(
            "OUT",
            "request",
            {
                "round": self.rounds + self.grace,
                "message": last.text if last.text else [o.name for o in last.tool_outputs],
                "messages": len(request.messages),
                "context_chars": len(setup.context),
                "tools": self.tools_enabled,
                "tool_choice": str(choice),
                "stream": setup.stream.active,
                **({"images": [i.name for i in request.images]} if request.images else {}),
            },
        )
        setup.events.emit("request_start", provider=self.provider.name, model=self.provider.config.model)
        started = time.monotonic()

        def on_retry(error: ProviderError, retry: int, delay: float) -> None:
            setup.log(
                "IN",
                "retry",
                {
                    "kind": str(error.kind),
                    "status": error.status,
                    "retry": retry,
                    "delay_s": round(delay, 3),
                    "error": error.detail,
                },
            )
            setup.stream.restart()

        def wait(seconds: float) -> bool:  # a cancel ends the backoff at once
            return setup.cancel.wait(seconds) or setup.wait(0)

        try:
            reply = call_with_retries(
                lambda: self._generate(request), setup.retry, on_retry=on_retry, wait=wait
            )
        except RequestCancelled:
            setup.log("IN", "notice", {"message": f"cancelled: {setup.cancel.reason}"})
            raise
        except ProviderError as error:
            setup.log("IN", "error", {"kind": str(error.kind), "status": error.status, "error": error.detail})
            setup.events.emit(
                "request_failed",
                provider=self.provider.name,
                model=self.provider.config.model,
                kind=str(error.kind),
            )
            raise
        latency_ms = round((time.monotonic() - started) * 1000.0, 1)
        self._answer = reply.text
        setup.usage.add(reply.usage)
        usage = reply.usage.to_dict()  # the log clips (copies) its payload: one dict serves both
        setup.log(
            "IN",
            "response",
            {
                "text": reply.text,
                "tool_calls": [{"name": c.name, "id": c.id, "args": c.args} for c in reply.tool_calls],
                "stop_reason": reply.stop_reason,
                "usage": usage,
                "latency_ms": latency_ms,
            },
        )
        setup.events.emit(
            "response_received",
            provider=self.provider.name,
            model=self.provider.config.model,
            usage=usage,
            latency_ms=latency_ms,
        )
        return reply

    def _generate(self, request: ModelRequest) -> ModelReply:
        """One provider call under the request's cancel token; a failure caused by a cancel
        (a socket shut down, a process killed) is the cancel, never a retryable error."""
        cancel = self.setup.cancel
        with cancel_scope(cancel):
            try:
                reply = self.provider.generate(request)
            except ProviderError:
                cancel.check(self._partial(request))
                raise
        cancel.check(self._partial(request, reply.text))
        return reply

    def _partial(self, request: ModelRequest, text: str = "") -> str:
        return text or request.stream.text or self._answer

    def _asked_tools(self, choice: ToolChoice) -> tuple[str, ...]:
        """The tools the user's message names, on the call that answers that message, for a
        provider that makes such a call call them (``forces_named_tools``)."""
        registry = self.setup.registry
        last = self.conversation.messages[-1] if self.conversation.messages else None
        if not self.provider.forces_named_tools or registry is None or choice is ToolChoice.NONE:
            return ()
        if last is None or last.role is not Role.USER:
            return ()
        return tuple(named_tools(self.setup.prompt, registry.names()))

    def _declarations(self) -> Callable[[str], list[dict[str, Any]]]:
        registry = self.setup.registry
        assert registry is not None
        return registry.declarations

    # -- one tool round ------------------------------------------------------------------------
    def _execute(self, calls: tuple[ToolCall, ...]) -> list[ToolOutput]:
        setup = self.setup
        assert setup.registry is not None and setup.exec_context is not None
        repeats = self._repeats
        assert repeats is not None
        outputs: list[ToolOutput | None] = [None] * len(calls)
        runnable: list[tuple[int, ToolCall]] = []
        warned: dict[int, int] = {}  # index -> its count of identical calls
        for index, call in enumerate(calls):
            setup.log(
                "OUT",
                "tool_call",
                {"name": call.name, "id": call.id, "args": call.args, "round": self.rounds},
            )
            if INVALID_CALL_KEY in call.args:
                self._trip(GuardKind.MALFORMED_CALL, call.name)
                outputs[index] = ToolOutput(
                    call.id, call.name, f"Error: {call.args[INVALID_CALL_KEY]}", ToolStatus.ERROR
                )
                continue
            check = repeats.check(call)
            if check.refuse:
                self._trip(GuardKind.REPEAT_REFUSED, call.name, count=check.count)
                text = refusal_text(call.name, check.count, check.previous)
                refused = ToolOutput(call.id, call.name, text, ToolStatus.REJECTED)
                outputs[index] = refused
                repeats.record(call, refused)
                continue
            if check.warn:
                warned[index] = check.count
            runnable.append((index, call))
        results = setup.registry.execute_many([c for _, c in runnable], setup.exec_context)
        for (index, call), result in zip(runnable, results, strict=True):
            content = result.content
            kind = result.metadata.get("error_kind")
            if kind in (GuardKind.UNKNOWN_TOOL, GuardKind.INVALID_ARGS):
                self._trip(GuardKind(kind), call.name)
            if result.status in (ToolStatus.ERROR, ToolStatus.TIMEOUT):
                content += self._second_opinions(call, result.error_message or result.content)
            output = ToolOutput(call.id, call.name, content, result.status)
            repeats.record(call, output)
            if index in warned:
                self._trip(GuardKind.REPEAT_WARNED, call.name, count=warned[index])
                warning = warning_text(call.name, warned[index])
                output = ToolOutput(call.id, call.name, f"{content}\n\n{warning}", result.status)
            outputs[index] = output
            setup.events.emit(
                "tool_execution",
                name=call.name,
                call_id=call.id,
                status=str(result.status),
                # the tool's own run time, without the wait for an approval
                duration_ms=result.metadata.get("execution_ms", result.metadata.get("duration_ms")),
            )
        done: list[ToolOutput] = []
        for call, output in zip(calls, outputs, strict=True):
            assert output is not None
            output = ToolOutput(output.call_id, output.name, setup.redact(output.content), output.status)
            self.output_bytes += len(output.content.encode("utf-8", "replace"))
            self.ran.append(_ran_line(call, output))
            setup.log(
                "IN",
                "tool_result",
                {
                    "name": call.name,
                    "id": call.id,
                    "status": str(output.status),
                    "output": output.content,
                    "bytes": len(output.content.encode("utf-8", "replace")),
                },
            )
            done.append(output)
        refresh = setup.redact(setup.refresher.check())
        if refresh:
            setup.log("OUT", "context_refresh", {"files_updated": refresh.count("\n### ")})
            done = _append(done, refresh)
        return done

    def _what_ran(self) -> str:
        lines = "\n".join(self.ran[-MAX_SUMMARY_LINES:])
        more = len(self.ran) - MAX_SUMMARY_LINES
        tail = f"\n- … and {more} earlier call(s)" if more > 0 else ""
        return f"{EMPTY_ANSWER}\n{lines}{tail}"

    def _second_opinions(self, call: ToolCall, error: str) -> str:
        """What the QA and patch callbacks (Tier 4) make of a failed call, appended to its output."""
        extra = ""
        if self.setup.qa_callback is not None:
            try:
                analysis = self.setup.qa_callback(error)
            except Exception as exc:
                analysis = f"(the QA analysis failed: {type(exc).__name__}: {exc})"
            if analysis:
                extra += f"\n\n[QA ANALYSIS]\n{analysis}"
        if self.setup.patch_callback is not None:
            try:
                patch = self.setup.patch_callback(error, f"{call.name}({json.dumps(call.args)[:2000]})")
            except Exception as exc:
                patch = f"(the patch generation failed: {type(exc).__name__}: {exc})"
            if patch:
                extra += f"\n\n[SUGGESTED PATCH]\n{patch}"
        return extra


def _redacted(message: Message, redact: Callable[[str], str]) -> Message:
    """``message`` with known secrets cut from its text and call arguments (its provider-native
    form dropped then, since it holds them too); the same message when there were none."""
    text = redact(message.text)
    calls = tuple(ToolCall(c.id, c.name, _redacted_args(c.args, redact)) for c in message.tool_calls)
    if text == message.text and calls == message.tool_calls:
        return message
    return Message.assistant(text, calls, None, message.native_provider)


def _redacted_args(args: dict[str, Any], redact: Callable[[str], str]) -> dict[str, Any]:
    dumped = json.dumps(args, ensure_ascii=False, default=str)
    cleaned = redact(dumped)
    if cleaned == dumped:
        return args
    try:
        return json.loads(cleaned)
    except ValueError:  # a replacement broke the JSON: keep the cleaned text, never the secret
        return {"arguments": cleaned}


def _ran_line(call: ToolCall, output: ToolOutput) -> str:
    """``- read_file(path='a.py'): success — first line of the output``."""
    args = ", ".join(f"{k}={_short(v, 40)}" for k, v in call.args.items())
    first = next((line.strip() for line in output.content.splitlines() if line.strip()), "")
    return f"- {call.name}({_short(args, 120, quote=False)}): {output.status}" + (
        f" — {_short(first, 100, quote=False)}" if first else ""
    )


def _short(value: Any, limit: int, quote: bool = True) -> str:
    text = repr(value) if quote else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _answer_all(calls: tuple[ToolCall, ...], text: str) -> list[ToolOutput]:
    return [ToolOutput(c.id, c.name, text, ToolStatus.REJECTED) for c in calls]


def _append(outputs: list[ToolOutput], text: str) -> list[ToolOutput]:
    """``outputs`` with ``text`` appended to the last one."""
    if not outputs:
        return outputs
    last = outputs[-1]
    return [*outputs[:-1], ToolOutput(last.call_id, last.name, f"{last.content}\n\n{text}", last.status)]
