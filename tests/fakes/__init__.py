"""Wire-level fakes of every provider, for the AI client's tests and the simulation harness.

- :class:`AnthropicFake`, :class:`GeminiFake`, :class:`OpenAIFake`: HTTP servers on
  free loopback ports, scripted by a list of turns (:mod:`tests.fakes.script`).
- :class:`FakeGeminiCli`: an executable ``gemini`` that prints the CLI's stream-json.
- :class:`FakeLlamaServer`: the ``xllamacpp.Server`` call surface, scripted.
- :class:`FaultInjector`: a responder that answers a share of the calls with faults (seeded);
  :class:`InBandErrors` turns some of them into MiniMax's in-band ``base_resp`` errors;
  :class:`LocalFaultInjector` stalls or kills the local model's generations.
"""

from tests.fakes.anthropic import AnthropicFake
from tests.fakes.faults import FAULT_KINDS, LOCAL_FAULT_KINDS, FaultInjector, InBandErrors, LocalFaultInjector
from tests.fakes.gemini import GeminiFake
from tests.fakes.gemini_cli import FakeGeminiCli, cli_turn
from tests.fakes.http import FakeServer, Recorded
from tests.fakes.llama import FakeLlamaServer, LlamaAbort, LlamaError, LlamaStall
from tests.fakes.openai import OpenAIFake
from tests.fakes.script import (
    Call,
    Fail,
    Hang,
    Json,
    Raw,
    Reply,
    Reset,
    Truncated,
    Turn,
    overloaded,
    rate_limited,
    server_error,
)

__all__ = [
    "FAULT_KINDS",
    "LOCAL_FAULT_KINDS",
    "AnthropicFake",
    "Call",
    "Fail",
    "FakeGeminiCli",
    "FakeLlamaServer",
    "FakeServer",
    "FaultInjector",
    "GeminiFake",
    "Hang",
    "InBandErrors",
    "Json",
    "LlamaAbort",
    "LlamaError",
    "LlamaStall",
    "LocalFaultInjector",
    "OpenAIFake",
    "Raw",
    "Recorded",
    "Reply",
    "Reset",
    "Truncated",
    "Turn",
    "cli_turn",
    "overloaded",
    "rate_limited",
    "server_error",
]
