"""The registry's pipeline: validation, lookup, timeouts, output cap, breaker, approvals, batches."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from manual_slop.tools import (
    ApprovalRequest,
    ApprovalResult,
    BreakerState,
    ExecutionContext,
    Tool,
    ToolCall,
    ToolDefinitionError,
    ToolFailure,
    ToolInputError,
    ToolRegistry,
    ToolStatus,
    ToolTimeout,
)

PATH_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["path"],
    "additionalProperties": False,
}


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def echo_tool(**overrides: Any) -> Tool:
    def handler(args: dict[str, Any], run) -> str:
        return f"echo {args['path']}"

    spec: dict[str, Any] = {
        "name": "echo",
        "description": "Echo the path back.",
        "parameters": PATH_SCHEMA,
        "handler": handler,
    }
    spec.update(overrides)
    return Tool(**spec)


@pytest.fixture
def ctx(tmp_path: Path) -> ExecutionContext:
    return ExecutionContext.for_directory(tmp_path)


def call(name: str, **args: Any) -> ToolCall:
    return ToolCall.new(name, args)


# -- catalogue -------------------------------------------------------------------------------
def test_duplicate_names_and_unknown_lookups_are_refused() -> None:
    registry = ToolRegistry([echo_tool()])
    with pytest.raises(ValueError, match="already registered"):
        registry.register(echo_tool())
    with pytest.raises(KeyError, match="available: echo"):
        registry.get("nope")
    assert [t.name for t in registry.list()] == ["echo"]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"name": "Bad-Name"}, "tool name"),
        ({"description": "  "}, "description is empty"),
        ({"parameters": {"type": "string"}}, "type object"),
        ({"parameters": {"type": "object", "properties": {"x": {"type": "strnig"}}}}, "invalid parameter"),
        ({"path_params": ("where",)}, "not declared"),
        ({"timeout_s": 0}, "timeout_s"),
    ],
)
def test_malformed_declarations_are_refused(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolDefinitionError, match=message):
        echo_tool(**overrides)


def test_declarations_in_each_provider_format() -> None:
    registry = ToolRegistry([echo_tool()])
    (anthropic,) = registry.declarations("anthropic")
    assert anthropic == {"name": "echo", "description": "Echo the path back.", "input_schema": PATH_SCHEMA}
    (openai,) = registry.declarations("openai")
    assert openai["type"] == "function" and openai["function"]["parameters"] == PATH_SCHEMA
    (gemini,) = registry.declarations("gemini")
    assert "additionalProperties" not in gemini["parameters"]
    assert gemini["parameters"]["required"] == ["path"]
    with pytest.raises(ValueError, match="anthropic, gemini, openai"):
        registry.declarations("cohere")


def test_gemini_declarations_are_accepted_by_the_sdk() -> None:
    from google.genai import types

    from manual_slop.tools import default_registry

    registry = ToolRegistry([echo_tool()])
    for tool in [*registry.declarations("gemini"), *default_registry().declarations("gemini")]:
        declaration = types.FunctionDeclaration(**tool)
        assert declaration.name == tool["name"]


# -- lookup and validation ---------------------------------------------------------------------
def test_unknown_tool_lists_the_available_ones(ctx: ExecutionContext) -> None:
    registry = ToolRegistry([echo_tool(), echo_tool(name="other")])
    result = registry.execute(call("ech0", path="x"), ctx)
    assert result.status is ToolStatus.ERROR
    assert result.content == "Unknown tool 'ech0'. Available tools: echo, other"


def test_arguments_are_validated_before_the_handler_runs(ctx: ExecutionContext) -> None:
    ran: list[Any] = []
    registry = ToolRegistry([echo_tool(handler=lambda args, run: ran.append(args) or "ran")])
    missing = registry.execute(call("echo"), ctx)
    assert missing.status is ToolStatus.ERROR
    assert missing.content.startswith("Parameter validation error: 'path' is a required property")
    assert "path: string" in missing.content  # the expected parameters are spelled out
    wrong_type = registry.execute(call("echo", path=3), ctx)
    assert "3 is not of type 'string' (at 'path')" in wrong_type.content
    extra = registry.execute(call("echo", path="a", colour="red"), ctx)
    assert "'colour' was unexpected" in extra.content
    assert ran == []
    assert registry.execute(call("echo", path="a"), ctx).ok and ran == [{"path": "a"}]


# -- handler outcomes -------------------------------------------------------------------------------
def test_handler_errors_become_results(ctx: ExecutionContext) -> None:
    def handler(args: dict[str, Any], run) -> str:
        if args["path"] == "input":
            raise ToolInputError("no such file: input")
        raise ZeroDivisionError("boom")

    registry = ToolRegistry([echo_tool(handler=handler)])
    bad_input = registry.execute(call("echo", path="input"), ctx)
    assert (bad_input.status, bad_input.content) == (ToolStatus.ERROR, "Error: no such file: input")
    bug = registry.execute(call("echo", path="bug"), ctx)
    assert bug.status is ToolStatus.ERROR
    assert bug.content == "Internal error in echo: ZeroDivisionError: boom"
    assert "Traceback" in (bug.error_message or "")
    assert registry.breaker("echo").consecutive_failures == 1  # only the bug counted


def test_output_is_capped_with_a_note(ctx: ExecutionContext) -> None:
    registry = ToolRegistry([echo_tool(handler=lambda a, r: "é" * 150_000)])  # 300,000 bytes
    result = registry.execute(call("echo", path="x"), ctx)
    assert result.ok and result.metadata["truncated"] is True and result.metadata["bytes"] == 300_000
    body, note = result.content.split("\n\n[output truncated", 1)
    assert len(body.encode()) <= 100_000 and body == "é" * 50_000
    assert "100,000 of 300,000 bytes" in note
    small = ToolRegistry([echo_tool()]).execute(call("echo", path="x"), ctx)
    assert small.metadata["truncated"] is False and small.metadata["bytes"] == len("echo x")


def test_known_secrets_are_redacted_from_output(tmp_path: Path) -> None:
    ctx = ExecutionContext.for_directory(tmp_path, redact=lambda text: text.replace("sk-123", "***"))
    registry = ToolRegistry([echo_tool(handler=lambda a, r: "key=sk-123")])
    assert registry.execute(call("echo", path="x"), ctx).content == "key=***"


# -- timeouts -------------------------------------------------------------------------------------------
def test_a_hanging_handler_times_out_within_its_limit_plus_one_second(ctx: ExecutionContext) -> None:
    release = threading.Event()
    registry = ToolRegistry([echo_tool(handler=lambda a, r: release.wait(30) and "late", timeout_s=0.3)])
    started = time.monotonic()
    result = registry.execute(call("echo", path="x"), ctx)
    elapsed = time.monotonic() - started
    release.set()  # let the abandoned thread finish
    assert result.status is ToolStatus.TIMEOUT
    assert "did not finish within 0.3 s" in result.content
    assert elapsed < 0.3 + 1.0


def test_a_cooperative_handler_reports_partial_output_on_timeout(ctx: ExecutionContext) -> None:
    def handler(args: dict[str, Any], run) -> str:
        run.cancelled.wait(10)
        raise ToolTimeout("stopped at the deadline", partial="first half")

    registry = ToolRegistry([echo_tool(handler=handler, timeout_s=0.2)])
    result = registry.execute(call("echo", path="x"), ctx)
    assert result.status is ToolStatus.TIMEOUT
    assert result.content == "TIMEOUT: stopped at the deadline\nfirst half"


def test_context_timeouts_override_the_tool_default(tmp_path: Path) -> None:
    release = threading.Event()
    registry = ToolRegistry([echo_tool(handler=lambda a, r: release.wait(30) and "x", timeout_s=30)])
    ctx = ExecutionContext.for_directory(tmp_path, timeouts={"echo": 0.2})
    result = registry.execute(call("echo", path="x"), ctx)
    release.set()
    assert result.status is ToolStatus.TIMEOUT and "0.2 s" in result.content


# -- circuit breaker ----------------------------------------------------------------------------------
def test_five_consecutive_failures_open_the_breaker_for_sixty_seconds(ctx: ExecutionContext) -> None:
    clock = FakeClock()
    runs: list[str] = []
    healthy = threading.Event()

    def handler(args: dict[str, Any], run) -> str:
        runs.append(args["path"])
        if not healthy.is_set():
            raise ToolFailure("network unreachable")
        return "fine"

    registry = ToolRegistry([echo_tool(handler=handler)], clock=clock)
    for _ in range(5):
        assert registry.execute(call("echo", path="x"), ctx).content == "Error: network unreachable"
    assert registry.breaker("echo").state is BreakerState.OPEN
    blocked = registry.execute(call("echo", path="x"), ctx)
    assert (
        blocked.status is ToolStatus.ERROR and "switched off after 5 consecutive failures" in blocked.content
    )
    assert "try again in 60 s" in blocked.content
    assert len(runs) == 5  # the handler was not called
    clock.now += 59.0
    assert registry.breaker("echo").state is BreakerState.OPEN
    clock.now += 1.0
    assert registry.breaker("echo").state is BreakerState.HALF_OPEN
    assert registry.execute(call("echo", path="x"), ctx).status is ToolStatus.ERROR  # trial fails
    assert registry.breaker("echo").state is BreakerState.OPEN  # reopened at once
    clock.now += 60.0
    healthy.set()
    assert registry.execute(call("echo", path="x"), ctx).ok
    assert registry.breaker("echo").state is BreakerState.CLOSED


def test_model_mistakes_do_not_trip_the_breaker(ctx: ExecutionContext) -> None:
    def handler(args: dict[str, Any], run) -> str:
        raise ToolInputError("file not found")

    registry = ToolRegistry([echo_tool(handler=handler)])
    for _ in range(8):
        registry.execute(call("echo", path="x"), ctx)
        registry.execute(call("echo"), ctx)  # invalid arguments
    assert registry.breaker("echo").state is BreakerState.CLOSED


# -- paths and approvals ----------------------------------------------------------------------------------
def writer_tool(log: list[dict[str, Any]]) -> Tool:
    def handler(args: dict[str, Any], run) -> str:
        log.append(args)
        run.path().write_text(args.get("content", ""))
        return f"wrote {run.display(run.path())}"

    return Tool(
        "writer",
        "Write content to a file.",
        PATH_SCHEMA,
        handler,
        mutating=True,
        path_params=("path",),
        preview=lambda args, run: f"+{args.get('content', '')}",
    )


def test_denied_paths_never_reach_the_handler_or_a_human(tmp_path: Path) -> None:
    asked: list[ApprovalRequest] = []
    ran: list[dict[str, Any]] = []

    def approve(request: ApprovalRequest) -> ApprovalResult:
        asked.append(request)
        return ApprovalResult(True, request.call.args)

    ctx = ExecutionContext.for_directory(tmp_path, pre_tool_callback=approve)
    registry = ToolRegistry([writer_tool(ran)])
    for path in ("../escape.txt", "/etc/passwd", "credentials.toml", "a\x00b"):
        result = registry.execute(call("writer", path=path, content="x"), ctx)
        assert result.status is ToolStatus.DENIED, path
        assert result.content.startswith("ACCESS DENIED: ")
    assert asked == [] and ran == []


def test_mutating_calls_without_an_approval_channel_are_denied(ctx: ExecutionContext) -> None:
    ran: list[dict[str, Any]] = []
    result = ToolRegistry([writer_tool(ran)]).execute(call("writer", path="a.txt", content="x"), ctx)
    assert result.status is ToolStatus.DENIED and ran == []


def test_rejection_is_reported_with_the_reason_and_nothing_runs(tmp_path: Path) -> None:
    ran: list[dict[str, Any]] = []
    ctx = ExecutionContext.for_directory(
        tmp_path, pre_tool_callback=lambda req: ApprovalResult(False, req.call.args, "use tabs")
    )
    result = ToolRegistry([writer_tool(ran)]).execute(call("writer", path="a.txt", content="x"), ctx)
    assert (result.status, result.content) == (ToolStatus.REJECTED, "REJECTED by user: use tabs")
    assert ran == [] and not (tmp_path / "a.txt").exists()


def test_the_approved_edited_arguments_are_what_runs(tmp_path: Path) -> None:
    requests: list[ApprovalRequest] = []

    def edit(request: ApprovalRequest) -> ApprovalResult:
        requests.append(request)
        return ApprovalResult(True, {**request.call.args, "content": "edited"})

    ran: list[dict[str, Any]] = []
    (tmp_path / "sub").mkdir()
    ctx = ExecutionContext.for_directory(tmp_path, pre_tool_callback=edit)
    result = ToolRegistry([writer_tool(ran)]).execute(
        call("writer", path=str(tmp_path / "sub" / ".." / "b.txt"), content="original"), ctx
    )
    # The model is told its call was edited, and with what it ran.
    assert result.ok and result.content == (
        'Note: the user edited this call before approving it; it ran with {"path": "b.txt", "content": '
        '"edited"}.\n\nwrote b.txt'
    )
    assert requests[0].call.args["path"] == "b.txt"  # canonical, relative to the base dir
    assert requests[0].preview == "+original"
    assert (tmp_path / "b.txt").read_text() == "edited"


def test_edited_arguments_are_checked_again(tmp_path: Path) -> None:
    ran: list[dict[str, Any]] = []
    registry = ToolRegistry([writer_tool(ran)])
    to_secret = ExecutionContext.for_directory(
        tmp_path, pre_tool_callback=lambda req: ApprovalResult(True, {"path": "config.toml"})
    )
    assert registry.execute(call("writer", path="a.txt"), to_secret).status is ToolStatus.DENIED
    malformed = ExecutionContext.for_directory(
        tmp_path, pre_tool_callback=lambda req: ApprovalResult(True, {"path": 5})
    )
    result = registry.execute(call("writer", path="a.txt"), malformed)
    assert result.status is ToolStatus.ERROR and result.content.startswith("The edited call is invalid.")
    assert ran == []


def test_abort_rejects_the_rest_of_the_round(tmp_path: Path) -> None:
    abort = threading.Event()
    ran: list[dict[str, Any]] = []
    ctx = ExecutionContext.for_directory(
        tmp_path, abort=abort, pre_tool_callback=lambda req: ApprovalResult(False, {}, "stop", abort=True)
    )
    registry = ToolRegistry([writer_tool(ran), echo_tool()])
    assert registry.execute(call("writer", path="a.txt"), ctx).status is ToolStatus.REJECTED
    assert abort.is_set()
    after = registry.execute(call("echo", path="x"), ctx)
    assert after.status is ToolStatus.REJECTED and "aborted" in after.content


def test_every_call_is_reported_for_the_tool_log(tmp_path: Path) -> None:
    entries: list[dict[str, Any]] = []
    ctx = ExecutionContext.for_directory(tmp_path, tier="Tier 3", on_tool_call=entries.append)
    registry = ToolRegistry([echo_tool()])
    registry.execute(ToolCall("c1", "echo", {"path": "x" * 5000}), ctx)
    registry.execute(ToolCall("c2", "nope", {}), ctx)
    first, second = entries
    assert first["tool"] == "echo" and first["call_id"] == "c1" and first["source_tier"] == "Tier 3"
    assert first["status"] == "success" and first["output_bytes"] == len("echo ") + 5000
    assert first["args"]["path"].endswith("...[5000 chars]")
    assert isinstance(first["duration_ms"], float) and isinstance(first["execution_ms"], float)
    assert second["status"] == "error" and second["message"].startswith("Unknown tool")


# -- concurrency -------------------------------------------------------------------------------------------
def sleeper(seconds: float) -> Tool:
    return echo_tool(name="sleep", handler=lambda a, r: time.sleep(seconds) or "slept")


def test_execute_many_runs_calls_concurrently(ctx: ExecutionContext) -> None:
    registry = ToolRegistry([sleeper(0.2)])
    started = time.monotonic()
    registry.execute(call("sleep", path="x"), ctx)
    single = time.monotonic() - started
    started = time.monotonic()
    results = registry.execute_many([call("sleep", path=str(i)) for i in range(3)], ctx)
    triple = time.monotonic() - started
    assert [r.status for r in results] == [ToolStatus.SUCCESS] * 3
    assert triple / single < 2.0  # sequential would be 3x


def test_a_hanging_call_does_not_delay_its_siblings(ctx: ExecutionContext) -> None:
    release = threading.Event()
    registry = ToolRegistry(
        [
            echo_tool(),
            echo_tool(name="hang", handler=lambda a, r: release.wait(30) and "x", timeout_s=1.0),
            echo_tool(name="crash", handler=lambda a, r: 1 / 0),
        ]
    )

    async def scenario() -> tuple[list[bool], list[Any]]:
        hang = asyncio.ensure_future(registry.execute_async(call("hang", path="h"), ctx))
        quick = await registry.execute_many_async([call("echo", path="a"), call("crash", path="b")], ctx)
        hang_done_early = hang.done()
        results = [*quick, await hang]
        return [hang_done_early], results

    (hang_done_early,), results = asyncio.run(scenario())
    release.set()
    assert hang_done_early is False  # the quick calls came back while the hanging one still ran
    assert [r.status for r in results] == [ToolStatus.SUCCESS, ToolStatus.ERROR, ToolStatus.TIMEOUT]


def test_execute_many_refuses_to_block_a_running_loop(ctx: ExecutionContext) -> None:
    registry = ToolRegistry([echo_tool()])

    async def inside() -> None:
        registry.execute_many([call("echo", path="x")], ctx)

    with pytest.raises(RuntimeError, match="await execute_many_async"):
        asyncio.run(inside())
    assert registry.execute_many([], ctx) == []
