"""The tool registry, and the guarded execution of one call.

Tools and the types of a call (:class:`Tool`, :class:`ToolCall`, :class:`ToolResult`,
:class:`ExecutionContext`, ...) are declared in :mod:`~manual_slop.tools.tool` (import them
from there or from the package). :meth:`ToolRegistry.execute` runs one :class:`ToolCall`
through a fixed pipeline::

    abort flag set?            -> rejected
    unknown tool?              -> error listing the available tools
    arguments match schema?    -> error "Parameter validation error: ..."
    circuit breaker open?      -> error, immediately
    path parameters allowed?   -> denied "ACCESS DENIED: ..." (never reaches a human)
    mutating?                  -> preview, then ctx.pre_tool_callback (the Execution Clutch):
                                  rejected "REJECTED by user[: reason]", or run the approved
                                  (possibly edited) arguments after validating them again
    handler on a daemon thread -> timeout after the tool's limit (the handler is told to stop)
    output                     -> secrets redacted, capped with a truncation note
    ctx.post_tool_callback     -> the after_tool / on_error rules: the result as it is, edited,
                                  withheld, or the request ended (not for rejected/denied calls)
    ctx.on_tool_call(entry)    -> toolcalls.log and the Tool Calls view

Nothing the model causes escapes as an exception: every outcome is a :class:`ToolResult`.
Handlers run on :class:`~manual_slop.threads.DaemonThreadExecutor` threads, so one that
hangs past its timeout is abandoned without blocking the event loop or interpreter exit.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import dataclasses
import json
import logging
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from manual_slop.threads import DaemonThreadExecutor
from manual_slop.tools.breaker import CircuitBreaker
from manual_slop.tools.builtin import builtin_tools
from manual_slop.tools.errors import (
    AccessDenied,
    ToolDefinitionError,
    ToolError,
    ToolFailure,
    ToolInputError,
    ToolTimeout,
    ToolUnavailable,
)
from manual_slop.tools.tool import (
    DECLARATION_FORMATS,
    ApprovalRequest,
    ExecutionContext,
    Tool,
    ToolCall,
    ToolResult,
    ToolRun,
    ToolStatus,
    unknown_format,
)
from manual_slop.tools.untrusted import wrap_untrusted

__all__ = ["ToolRegistry", "default_registry"]

log = logging.getLogger(__name__)

TIMEOUT_GRACE_S = 0.5  # a timed-out handler may still hand back partial output this long
ABORT_POLL_S = 0.1  # how often a running handler's wait checks the run's abort flag
LOG_ARG_CHARS = 2_000  # string arguments longer than this are clipped in toolcalls.log


def _args_text(args: dict[str, Any], limit: int = 2000) -> str:
    text = json.dumps(args, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "..."


def _validation_message(tool: Tool, args: Any) -> str | None:
    if not isinstance(args, dict):
        return f"Parameter validation error: arguments must be an object, got {type(args).__name__}"
    from jsonschema.exceptions import best_match  # here: start-up stays without jsonschema

    error = best_match(tool.validator.iter_errors(args))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    location = f" (at '{where}')" if where else ""
    return f"Parameter validation error: {_error_text(error)}{location}. Parameters of {tool.name}: " + (
        _signature(tool)
    )


def _error_text(error: Any) -> str:
    """jsonschema's message, except that a size error states sizes instead of quoting the value
    (its message repeats the whole value: a megabyte for a megabyte-long argument)."""
    sizes = {"maxLength": ("characters", "at most"), "minLength": ("characters", "at least"),
             "maxItems": ("items", "at most"), "minItems": ("items", "at least")}  # fmt: skip
    if error.validator in sizes and isinstance(error.instance, str | list):
        unit, bound = sizes[error.validator]
        return f"{len(error.instance):,} {unit}, {bound} {error.validator_value:,} allowed"
    return error.message


def _signature(tool: Tool) -> str:
    properties = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", []))
    parts = []
    for name, spec in properties.items():
        kind = spec.get("type", "any")
        parts.append(f"{name}: {kind}" + ("" if name in required else " (optional)"))
    return ", ".join(parts) or "none"


def _clip_for_log(value: Any) -> Any:
    if isinstance(value, str) and len(value) > LOG_ARG_CHARS:
        return value[:LOG_ARG_CHARS] + f"...[{len(value)} chars]"
    if isinstance(value, dict):
        return {k: _clip_for_log(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clip_for_log(v) for v in value]
    return value


def cap_output(text: str, limit: int) -> tuple[str, bool, int]:
    """``(text cut to limit bytes with a note, truncated?, original size in bytes)``."""
    data = text.encode("utf-8", "surrogateescape")
    size = len(data)
    if size <= limit:
        return text, False, size
    head = data[:limit].decode("utf-8", "ignore")
    note = (
        f"\n\n[output truncated: showing the first {limit:,} of {size:,} bytes; "
        "ask for less (a line range, a narrower pattern or directory)]"
    )
    return head + note, True, size


class ToolRegistry:
    """The tools a provider may call, and the one place calls are executed."""

    def __init__(
        self,
        tools: Iterable[Tool] = (),
        *,
        executor: concurrent.futures.Executor | None = None,
        breaker_threshold: int = 5,
        breaker_cooldown_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lock = threading.Lock()
        self._tools: dict[str, Tool] = {}
        self._breakers: dict[str, CircuitBreaker] = {}
        self._executor = executor or DaemonThreadExecutor("slop-tool")
        self._breaker_threshold = breaker_threshold
        self._breaker_cooldown_s = breaker_cooldown_s
        self._clock = clock
        for tool in tools:
            self.register(tool)

    # -- the catalogue ---------------------------------------------------------------------
    def register(self, tool: Tool) -> None:
        """Add a tool; a name already registered raises ValueError (ToolDefinitionError)."""
        with self._lock:
            if tool.name in self._tools:
                raise ToolDefinitionError(f"a tool named {tool.name!r} is already registered")
            self._tools[tool.name] = tool
            self._breakers[tool.name] = CircuitBreaker(
                self._breaker_threshold, self._breaker_cooldown_s, self._clock
            )

    def replace(self, tool: Tool) -> None:
        """Swap the registered tool of the same name for ``tool`` (its circuit breaker stays):
        an external MCP server listed a changed definition."""
        with self._lock:
            if tool.name not in self._tools:
                raise ToolDefinitionError(f"no tool named {tool.name!r} is registered")
            self._tools[tool.name] = tool

    def unregister(self, name: str) -> bool:
        """Remove ``name`` (a tool an external MCP server no longer offers); False if absent."""
        with self._lock:
            self._breakers.pop(name, None)
            return self._tools.pop(name, None) is not None

    def subset(self, names: Iterable[str]) -> ToolRegistry:
        """A registry of only ``names`` (an agent's allowed tools), sharing these tools, their
        circuit breakers and the executor; names not registered here are left out."""
        view = ToolRegistry(
            executor=self._executor,
            breaker_threshold=self._breaker_threshold,
            breaker_cooldown_s=self._breaker_cooldown_s,
            clock=self._clock,
        )
        with self._lock:
            for name in names:
                if name in self._tools:
                    view._tools[name] = self._tools[name]
                    view._breakers[name] = self._breakers[name]
        return view

    def get(self, name: str) -> Tool:
        """The tool called ``name``; KeyError naming the available tools otherwise."""
        with self._lock:
            tool = self._tools.get(name)
            if tool is None:
                raise KeyError(f"unknown tool {name!r}; available: {', '.join(sorted(self._tools))}")
            return tool

    def list(self) -> list[Tool]:
        with self._lock:
            return list(self._tools.values())

    def names(self) -> list[str]:
        with self._lock:
            return list(self._tools)

    def __contains__(self, name: object) -> bool:
        with self._lock:
            return name in self._tools

    def __len__(self) -> int:
        with self._lock:
            return len(self._tools)

    def breaker(self, name: str) -> CircuitBreaker:
        with self._lock:
            return self._breakers[name]

    def declarations(self, fmt: str, names: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """Every tool (or those in ``names``) in a provider's format."""
        if fmt not in DECLARATION_FORMATS:
            raise unknown_format(fmt)
        tools = self.list() if names is None else [self.get(n) for n in names]
        return [tool.declaration(fmt) for tool in tools]

    # -- execution -------------------------------------------------------------------------
    def execute(self, call: ToolCall, ctx: ExecutionContext) -> ToolResult:
        """Run one call through the whole pipeline (blocks; never raises for model mistakes).

        Do not call it on the GUI's main thread: a mutating call waits for a human."""
        started = time.monotonic()
        record: dict[str, Any] = {"approval_ms": 0.0, "edited": False}
        try:
            result = self._execute(call, ctx, record)
        except Exception as exc:  # a bug in the pipeline itself: still an answer for the model
            log.exception("tool pipeline failed for %s", call.name)
            result = ToolResult.error(
                f"Internal error while running {call.name}: {type(exc).__name__}: {exc}",
                traceback.format_exc(),
            )
        result = self._review(call, ctx, result, record)
        result = result.with_metadata(duration_ms=round((time.monotonic() - started) * 1000.0, 3))
        self._report(call, ctx, result, record)
        return result

    @staticmethod
    def _review(
        call: ToolCall, ctx: ExecutionContext, result: ToolResult, record: dict[str, Any]
    ) -> ToolResult:
        """The result after the post-tool callback: unchanged, edited, withheld or ending the request."""
        callback = ctx.post_tool_callback
        if callback is None or result.status in (ToolStatus.REJECTED, ToolStatus.DENIED):
            return result  # nothing ran: there is no result to hold back
        waited = time.monotonic()
        try:
            review = callback(ToolCall(call.id, call.name, record.get("ran_args", call.args)), result)
        except Exception as exc:  # our bug: withhold rather than show what a rule may have stopped
            log.exception("reviewing the result of %s failed", call.name)
            return ToolResult.rejected(f"the result could not be reviewed ({type(exc).__name__}: {exc})")
        finally:
            # time a human held the result counts as approval time in toolcalls.log
            held_ms = (time.monotonic() - waited) * 1000.0
            record["approval_ms"] = round(record.get("approval_ms", 0.0) + held_ms, 3)
        if review.end and ctx.abort is not None:
            ctx.abort.set()
        return review.result

    def _execute(self, call: ToolCall, ctx: ExecutionContext, record: dict[str, Any]) -> ToolResult:
        if ctx.abort is not None and ctx.abort.is_set():
            return ToolResult.rejected("the run was aborted; no further tool calls are executed")
        with self._lock:
            tool = self._tools.get(call.name)
            names = sorted(self._tools)
        if tool is None:
            return ToolResult.error(
                f"Unknown tool '{call.name}'. Available tools: {', '.join(names)}", error_kind="unknown_tool"
            )
        record["mutating"] = tool.mutating
        problem = _validation_message(tool, call.args)
        if problem is not None:
            return ToolResult.error(problem, error_kind="invalid_args")
        breaker = self.breaker(tool.name)
        wait = breaker.acquire()
        if wait is not None:
            return ToolResult.error(
                f"{tool.name} is switched off after {breaker.threshold} consecutive failures; "
                f"try again in {wait:.0f} s or use another tool"
            )
        outcome = "neutral"
        try:
            result, outcome = self._execute_admitted(tool, call, ctx, record)
            return result
        finally:
            if outcome == "success":
                breaker.record_success()
            elif outcome == "failure":
                breaker.record_failure()
            else:
                breaker.record_neutral()

    def _execute_admitted(
        self, tool: Tool, call: ToolCall, ctx: ExecutionContext, record: dict[str, Any]
    ) -> tuple[ToolResult, str]:
        args = copy.deepcopy(call.args)
        try:
            paths = self._check_paths(tool, args, ctx)
        except AccessDenied as exc:
            return ToolResult.denied(str(exc)), "neutral"
        if tool.mutating:
            decided = self._approve(tool, call, args, paths, ctx, record)
            if isinstance(decided, ToolResult):
                return decided, "neutral"
            args, paths = decided
        result, outcome = self._run_handler(tool, call, args, paths, ctx)
        if tool.untrusted and result.ok:
            result = dataclasses.replace(result, content=wrap_untrusted(tool.name, result.content))
        if record.get("edited"):
            # The model must know that what ran is not what it asked for.
            note = f"Note: the user edited this call before approving it; it ran with {_args_text(args)}.\n\n"
            result = dataclasses.replace(result, content=note + result.content)
        return result, outcome

    def _check_paths(self, tool: Tool, args: dict[str, Any], ctx: ExecutionContext) -> dict[str, Path]:
        paths: dict[str, Path] = {}
        for name in tool.path_params:
            if args.get(name) is not None:
                paths[name] = ctx.policy.check(args[name], write=tool.mutating)
        return paths

    def _approve(
        self,
        tool: Tool,
        call: ToolCall,
        args: dict[str, Any],
        paths: dict[str, Path],
        ctx: ExecutionContext,
        record: dict[str, Any],
    ) -> ToolResult | tuple[dict[str, Any], dict[str, Path]]:
        callback = ctx.pre_tool_callback
        if callback is None:
            return ToolResult.denied(
                f"{tool.name} changes files or runs commands and no approval is possible here"
            )
        canonical = dict(args)
        for name, resolved in paths.items():
            canonical[name] = ctx.policy.display(resolved)
        probe = ToolRun(call, ctx, paths, time.monotonic() + tool.timeout_s)
        try:
            preview = tool.preview(canonical, probe) if tool.preview is not None else ""
        except ToolError as exc:  # the edit cannot apply: no point asking a human
            return self._error_result(tool, exc)[0]
        waited = time.monotonic()
        try:
            decision = callback(ApprovalRequest(ToolCall(call.id, call.name, canonical), preview))
        except Exception as exc:
            log.exception("approval callback failed for %s", tool.name)
            return ToolResult.rejected(f"the approval could not be obtained ({type(exc).__name__}: {exc})")
        finally:
            record["approval_ms"] = round((time.monotonic() - waited) * 1000.0, 3)
        if decision.abort and ctx.abort is not None:
            ctx.abort.set()
        if not decision.approved:
            return ToolResult.rejected(decision.reason)
        approved = copy.deepcopy(decision.args)
        record["edited"] = approved != canonical
        record["ran_args"] = approved  # the log records what ran (and the model's ask beside it)
        problem = _validation_message(tool, approved)
        if problem is not None:
            return ToolResult.error(f"The edited call is invalid. {problem}")
        try:
            return approved, self._check_paths(tool, approved, ctx)
        except AccessDenied as exc:
            return ToolResult.denied(str(exc))

    def _run_handler(
        self, tool: Tool, call: ToolCall, args: dict[str, Any], paths: dict[str, Path], ctx: ExecutionContext
    ) -> tuple[ToolResult, str]:
        limit = float(ctx.timeouts.get(tool.name, tool.timeout_s))
        run = ToolRun(call, ctx, paths, time.monotonic() + limit)
        started = time.monotonic()
        future = self._executor.submit(self._invoke, tool, args, run)
        try:
            result, outcome = self._wait(future, run, ctx)
        except concurrent.futures.TimeoutError:
            run.cancelled.set()  # a cooperative handler (the shell) stops and reports what it had
            aborted = ctx.abort is not None and ctx.abort.is_set()
            try:
                result, outcome = future.result(timeout=TIMEOUT_GRACE_S)
            except concurrent.futures.TimeoutError:
                result = ToolResult.timeout(
                    f"TIMEOUT: {tool.name} did not finish within {limit:g} s and was abandoned; "
                    "ask for less work or split it into smaller calls"
                )
                outcome = "failure"
            if aborted:  # stopped from outside, not slow: say so (with what it printed so far)
                result = ToolResult.rejected(
                    f"the run was stopped while {tool.name} ran; it was interrupted\n{result.content}"
                )
                outcome = "neutral"
        elapsed = round((time.monotonic() - started) * 1000.0, 3)
        content = result.content
        if ctx.redact is not None:
            content = ctx.redact(content)
        content, truncated, size = cap_output(content, tool.max_output_bytes)
        result = ToolResult(
            result.status,
            content,
            result.error_message,
            {**result.metadata, "execution_ms": elapsed, "truncated": truncated, "bytes": size},
        )
        return result, outcome

    @staticmethod
    def _wait(
        future: concurrent.futures.Future[tuple[ToolResult, str]], run: ToolRun, ctx: ExecutionContext
    ) -> tuple[ToolResult, str]:
        """The handler's outcome; TimeoutError when its deadline passes or the run is aborted."""
        while True:
            slice_s = min(ABORT_POLL_S, run.remaining())
            try:
                return future.result(timeout=slice_s)
            except concurrent.futures.TimeoutError:
                if run.remaining() <= 0 or (ctx.abort is not None and ctx.abort.is_set()):
                    raise

    def _invoke(self, tool: Tool, args: dict[str, Any], run: ToolRun) -> tuple[ToolResult, str]:
        try:
            output = tool.handler(args, run)
        except ToolError as exc:
            return self._error_result(tool, exc)
        except Exception as exc:
            return (
                ToolResult.error(
                    f"Internal error in {tool.name}: {type(exc).__name__}: {exc}", traceback.format_exc()
                ),
                "failure",
            )
        if isinstance(output, ToolResult):
            return output, "success" if output.ok else "neutral"
        return ToolResult.success(str(output)), "success"

    @staticmethod
    def _error_result(tool: Tool, exc: ToolError) -> tuple[ToolResult, str]:
        if isinstance(exc, AccessDenied):
            return ToolResult.denied(str(exc)), "neutral"
        if isinstance(exc, ToolTimeout):
            text = f"TIMEOUT: {exc}"
            if exc.partial:
                text += "\n" + exc.partial
            return ToolResult.timeout(text), "failure"
        if isinstance(exc, ToolFailure):
            return ToolResult.error(f"Error: {exc}"), "failure"
        if isinstance(exc, ToolUnavailable):
            return ToolResult.error(f"Unavailable: {exc}"), "neutral"
        if isinstance(exc, ToolInputError):
            return ToolResult.error(f"Error: {exc}"), "neutral"
        return ToolResult.error(f"Error in {tool.name}: {exc}"), "neutral"

    def _report(
        self, call: ToolCall, ctx: ExecutionContext, result: ToolResult, record: dict[str, Any]
    ) -> None:
        if ctx.on_tool_call is None:
            return
        ran = record.get("ran_args", call.args)
        entry = {
            "tool": call.name,
            "call_id": call.id,
            "source_tier": ctx.tier,
            "args": _clip_for_log(ran),
            "status": str(result.status),
            "duration_ms": result.metadata.get("duration_ms"),
            "execution_ms": result.metadata.get("execution_ms"),
            "approval_ms": record.get("approval_ms", 0.0),
            "output_bytes": result.metadata.get("bytes", len(result.content.encode("utf-8", "replace"))),
            "truncated": bool(result.metadata.get("truncated", False)),
            "mutating": bool(record.get("mutating", False)),
            "edited": bool(record.get("edited", False)),
        }
        if record.get("edited"):
            entry["original_args"] = _clip_for_log(call.args)  # what the model asked for
        if not result.ok:
            entry["message"] = result.content[:500]
        try:
            ctx.on_tool_call(entry)
        except Exception:
            log.exception("recording tool call %s failed", call.name)

    # -- async and batches --------------------------------------------------------------------
    async def execute_async(self, call: ToolCall, ctx: ExecutionContext) -> ToolResult:
        """:meth:`execute` on a daemon thread, awaited without blocking the loop."""
        return await asyncio.wrap_future(self._executor.submit(self.execute, call, ctx))

    async def execute_many_async(self, calls: Sequence[ToolCall], ctx: ExecutionContext) -> list[ToolResult]:
        """Run independent calls concurrently; results in call order. One failing or hanging
        call never cancels its siblings (``asyncio.gather(..., return_exceptions=True)``)."""
        outcomes = await asyncio.gather(*(self.execute_async(c, ctx) for c in calls), return_exceptions=True)
        results: list[ToolResult] = []
        for call, outcome in zip(calls, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                message = f"Internal error while running {call.name}: {type(outcome).__name__}: {outcome}"
                results.append(ToolResult.error(message))
            else:
                results.append(outcome)
        return results

    def execute_many(self, calls: Sequence[ToolCall], ctx: ExecutionContext) -> list[ToolResult]:
        """Blocking form of :meth:`execute_many_async`, for threads without a running loop."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError("execute_many blocks; inside an event loop await execute_many_async instead")
        if not calls:
            return []
        return asyncio.run(self.execute_many_async(list(calls), ctx))


def default_registry(**options: Any) -> ToolRegistry:
    """A registry with every built-in tool (see docs/guide_tools.md); ``options`` are passed to
    :func:`manual_slop.tools.builtin.builtin_tools` (e.g. ``shell_timeout_s``, ``search_url``)."""
    own = ("executor", "breaker_threshold", "breaker_cooldown_s", "clock")
    registry_options = {k: options.pop(k) for k in own if k in options}
    return ToolRegistry(builtin_tools(**options), **registry_options)
