"""One harness per provider, so every behaviour is checked against every provider.

A harness starts the provider's fake (an HTTP server, the mock ``gemini`` CLI or the
scripted llama server), points an :class:`AIClient` at it, and converts the scripted turns
of :mod:`tests.fakes.script` into what that fake speaks (for the XML-protocol providers a
tool call becomes an ``<execute>`` block in the text). ``sent()`` returns what each model
call carried, as text, for assertions that hold for every wire format.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from manual_slop.ai import AIClient, RetryPolicy
from manual_slop.ai.xml_protocol import render_calls
from manual_slop.tools import ApprovalResult, Tool, ToolCall, ToolRegistry, ToolResult
from tests.fakes import (
    AnthropicFake,
    Fail,
    FakeGeminiCli,
    FakeLlamaServer,
    GeminiFake,
    LlamaError,
    OpenAIFake,
    Reply,
    cli_turn,
)

HTTP_PROVIDERS = ("gemini", "anthropic", "deepseek", "minimax", "openai_compatible")
ALL_PROVIDERS = (*HTTP_PROVIDERS, "gemini_cli", "local")
FAST_RETRY = RetryPolicy(max_retries=3, base_delay_s=0.01, max_delay_s=0.05, max_retry_after_s=5.0)
NO_RETRY = RetryPolicy(max_retries=0)


class NapLog:
    """Start and end times of the ``nap`` tool's calls (to prove calls of a round overlap)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.spans: list[tuple[str, float, float]] = []

    def record(self, label: str, start: float, end: float) -> None:
        with self.lock:
            self.spans.append((label, start, end))


def make_registry(naps: NapLog, nap_s: float = 0.25) -> ToolRegistry:
    def nap(args: dict[str, Any], run: Any) -> str:
        start = time.monotonic()
        time.sleep(nap_s)
        naps.record(str(args["label"]), start, time.monotonic())
        return f"napped {args['label']}"

    def write_note(args: dict[str, Any], run: Any) -> str:
        target = run.path("path")
        target.write_text(str(args["text"]), encoding="utf-8")
        return f"wrote {len(str(args['text']))} characters to {run.display(target)}"

    def echo(args: dict[str, Any], run: Any) -> ToolResult:
        return ToolResult.success(str(args["text"]))

    return ToolRegistry(
        [
            Tool(
                "nap",
                "Wait a moment, then report which nap finished.",
                {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]},
                nap,
            ),
            Tool(
                "echo",
                "Return the given text unchanged.",
                {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
                echo,
                max_output_bytes=2_000_000,
            ),
            Tool(
                "write_note",
                "Write text to a file in the project.",
                {
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
                    "required": ["path", "text"],
                },
                write_note,
                mutating=True,
                path_params=("path",),
                preview=lambda args, run: f"write {args['path']}",
            ),
        ]
    )


def approve_all(request: Any) -> ApprovalResult:
    return ApprovalResult(True, dict(request.call.args))


def reject_all(request: Any) -> ApprovalResult:
    return ApprovalResult(False, dict(request.call.args), "not today")


class Harness:
    """A provider's fake plus a client configured to use it."""

    name = ""

    def __init__(self, tmp: Path, naps: NapLog) -> None:
        self.tmp = tmp
        self.naps = naps
        self.entries: list[dict[str, Any]] = []
        self.tool_entries: list[dict[str, Any]] = []
        self.notices: list[tuple[str, str]] = []

    def client(self, *, retry: RetryPolicy = FAST_RETRY, **configure: Any) -> AIClient:
        client = AIClient(registry=make_registry(self.naps), retry=retry, **self.client_options())
        client.comms_log_callback = self.entries.append
        client.tool_log_callback = self.tool_entries.append
        client.notify_callback = lambda level, message: self.notices.append((level, message))
        client.set_provider(self.name)
        client.configure(**{**self.configure_options(), **configure})
        return client

    def client_options(self) -> dict[str, Any]:
        return {}

    def configure_options(self) -> dict[str, Any]:
        return {}

    def push(self, *turns: Any) -> None:
        raise NotImplementedError

    def sent(self) -> list[str]:
        """Each model call's request as text (JSON bodies, or argv + stdin)."""
        raise NotImplementedError

    def close(self) -> None:
        pass


class HttpHarness(Harness):
    fake_class: type = OpenAIFake

    def __init__(self, tmp: Path, naps: NapLog) -> None:
        super().__init__(tmp, naps)
        self.fake = self.fake_class().start()

    def configure_options(self) -> dict[str, Any]:
        return {"base_url": self.fake.base_url, "api_key": "test-key", "timeout_s": 5.0}

    def push(self, *turns: Any) -> None:
        self.fake.push(*turns)

    def bodies(self) -> list[Any]:
        return [r.body for r in self.fake.model_calls()]

    def sent(self) -> list[str]:
        return [json.dumps(b) for b in self.bodies()]

    def close(self) -> None:
        self.fake.stop()


class GeminiHarness(HttpHarness):
    name = "gemini"
    fake_class = GeminiFake


class AnthropicHarness(HttpHarness):
    name = "anthropic"
    fake_class = AnthropicFake


class DeepSeekHarness(HttpHarness):
    name = "deepseek"


class MiniMaxHarness(HttpHarness):
    name = "minimax"


class OpenAICompatibleHarness(HttpHarness):
    name = "openai_compatible"

    def configure_options(self) -> dict[str, Any]:
        return {**super().configure_options(), "base_url": f"{self.fake.base_url}/v1"}


def _xml_text(reply: Reply) -> str:
    text = reply.text
    if reply.calls:
        calls = [ToolCall.new(c.name, c.args, c.id) for c in reply.calls]
        text = f"{text}\n{render_calls(calls)}".strip()
    return text


class LocalHarness(Harness):
    name = "local"

    def __init__(self, tmp: Path, naps: NapLog) -> None:
        super().__init__(tmp, naps)
        self.llama = FakeLlamaServer()

    def client_options(self) -> dict[str, Any]:
        return {"local_engine_factory": lambda **kw: self.llama}

    def push(self, *turns: Any) -> None:
        for turn in turns:
            if isinstance(turn, Reply):
                self.llama.push(_xml_text(turn))
            elif isinstance(turn, Fail):
                self.llama.push(LlamaError(f"scripted failure {turn.status}"))
            else:
                raise ValueError(f"the local fake cannot play {type(turn).__name__}")

    def sent(self) -> list[str]:
        return [json.dumps(r) for r in self.llama.requests]


class GeminiCliHarness(Harness):
    name = "gemini_cli"

    def __init__(self, tmp: Path, naps: NapLog) -> None:
        super().__init__(tmp, naps)
        self.cli = FakeGeminiCli(tmp / "cli")
        self.cli_calls: list[dict[str, Any]] = []

    def client(self, **kwargs: Any) -> AIClient:
        client = super().client(**kwargs)
        client.cli_log_callback = self.cli_calls.append
        return client

    def configure_options(self) -> dict[str, Any]:
        return {"binary": str(self.cli.binary), "timeout_s": 20.0, "api_key": "test-key"}

    def push(self, *turns: Any) -> None:
        for turn in turns:
            if isinstance(turn, Reply):
                extra = {"chunk_delay": turn.chunk_delay} if turn.chunk_delay else {}
                self.cli.push(cli_turn(_xml_text(turn), chunks=turn.chunks, **extra))
            elif isinstance(turn, Fail):
                error = {"message": f"scripted failure {turn.status}", "status": turn.status}
                self.cli.push(cli_turn(error=error))
            else:
                raise ValueError(f"the CLI mock cannot play {type(turn).__name__}")

    def sent(self) -> list[str]:
        return [json.dumps({"argv": c["argv"], "stdin": c["stdin"]}) for c in self.cli.calls()]


HARNESSES: dict[str, type[Harness]] = {
    "gemini": GeminiHarness,
    "anthropic": AnthropicHarness,
    "deepseek": DeepSeekHarness,
    "minimax": MiniMaxHarness,
    "openai_compatible": OpenAICompatibleHarness,
    "gemini_cli": GeminiCliHarness,
    "local": LocalHarness,
}


def make_harness(name: str, tmp: Path) -> Harness:
    return HARNESSES[name](tmp, NapLog())


__all__ = [
    "ALL_PROVIDERS",
    "FAST_RETRY",
    "HTTP_PROVIDERS",
    "NO_RETRY",
    "Harness",
    "HttpHarness",
    "NapLog",
    "approve_all",
    "make_harness",
    "make_registry",
    "reject_all",
]
