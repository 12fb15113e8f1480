"""The local provider's stall limit: a generation that produces nothing for ``timeout_s`` ends the
send with a classified error, and a cancel ends a stalled one at once (the engine is the
scripted ``xllamacpp.Server`` stand-in, whose stalls hang until released)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from manual_slop.ai import AIClient, RetryPolicy
from manual_slop.ai.errors import ErrorKind, ProviderError
from manual_slop.cancel import CancelToken, RequestCancelled
from tests.fakes import FakeLlamaServer, LlamaStall


@pytest.fixture
def llama() -> Iterator[FakeLlamaServer]:
    server = FakeLlamaServer()
    yield server
    server.release()
    deadline = time.monotonic() + 5.0
    while any(t.name == "slop-local-generate" for t in threading.enumerate()):
        assert time.monotonic() < deadline, "a local generation outlived its test"
        time.sleep(0.01)


def client_on(llama: FakeLlamaServer, timeout_s: float) -> AIClient:
    client = AIClient(retry=RetryPolicy(max_retries=0), local_engine_factory=lambda **kw: llama)
    client.set_provider("local")
    client.configure(timeout_s=timeout_s)
    return client


def test_a_stalled_generation_ends_in_a_classified_error_within_its_timeout(llama) -> None:
    llama.push(LlamaStall("never finished", seconds=60, after=2), "the next answer")
    client = client_on(llama, timeout_s=0.3)
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        client.send("", "hello", enable_tools=False)
    took = time.monotonic() - started
    assert caught.value.kind is ErrorKind.UNKNOWN and not caught.value.retryable
    assert "produced nothing for 0.3 s (timeout_s is 0.3 s)" in str(caught.value)
    assert 0.3 <= took < 1.5, took
    # the stalled call is given up on: the next send is answered meanwhile
    assert client.send("", "again", enable_tools=False, conversation="other") == "the next answer"


def test_a_cancel_ends_a_stalled_generation_at_once(llama) -> None:
    llama.push(LlamaStall("never finished", seconds=60, after=0))
    client = client_on(llama, timeout_s=60.0)
    cancel = CancelToken()
    threading.Timer(0.2, cancel.cancel).start()
    started = time.monotonic()
    with pytest.raises(RequestCancelled):
        client.send("", "hello", enable_tools=False, cancel=cancel)
    assert time.monotonic() - started < 1.0
