"""Wire-level fakes of every provider, for the AI client's tests and the simulation harness.

- :class:`AnthropicFake`, :class:`GeminiFake`, :class:`OpenAIFake`: HTTP servers on
  free loopback ports, scripted by a list of turns (:mod:`tests.fakes.script`).
- :class:`FakeGeminiCli`: an executable ``gemini`` that prints the CLI's stream-json.
- :class:`FakeLlamaServer`: the ``xllamacpp.Server`` call surface, scripted.
"""

from tests.fakes.anthropic import AnthropicFake
from tests.fakes.gemini import GeminiFake
from tests.fakes.gemini_cli import FakeGeminiCli, cli_turn
from tests.fakes.http import FakeServer, Recorded
from tests.fakes.llama import FakeLlamaServer, LlamaError
from tests.fakes.openai import OpenAIFake
from tests.fakes.script import (
    Call,
    Fail,
    Hang,
    Json,
    Raw,
    Reply,
    Truncated,
    Turn,
    overloaded,
    rate_limited,
    server_error,
)

__all__ = [
    "AnthropicFake",
    "Call",
    "Fail",
    "FakeGeminiCli",
    "FakeLlamaServer",
    "FakeServer",
    "GeminiFake",
    "Hang",
    "Json",
    "LlamaError",
    "OpenAIFake",
    "Raw",
    "Recorded",
    "Reply",
    "Truncated",
    "Turn",
    "cli_turn",
    "overloaded",
    "rate_limited",
    "server_error",
]
