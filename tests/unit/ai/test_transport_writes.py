"""Per-call overhead the round trip goal (scripts/bench_client.py, <= 1.10 of the raw SDK) relies on:
the transport sends a request's pieces in one write, and Gemini reuses its unchanged config."""

from __future__ import annotations

from typing import Any

import pytest

from manual_slop.ai.messages import Message, ModelRequest
from manual_slop.ai.providers.base import ProviderConfig
from manual_slop.ai.providers.gemini import GeminiProvider
from manual_slop.ai.providers.transport import WRITE_BUFFER_BYTES, _stream_class


class Recorder:
    """The wrapped network stream: records what reaches it."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.writes.append(buffer)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return b"HTTP/1.1 200 OK\r\n"

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, info: str) -> Any:
        return None


@pytest.mark.parametrize("core", ["httpcore", "httpcore2"])
def test_a_request_goes_out_in_one_write_before_the_answer_is_read(core: str) -> None:
    inner = Recorder()
    stream = _stream_class(core)(inner)
    stream.write(b"POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\n")
    stream.write(b"body")
    stream.write(b"")  # the end of a sized body: nothing to send
    assert inner.writes == []
    assert stream.read(1024) == b"HTTP/1.1 200 OK\r\n"
    assert inner.writes == [b"POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\nbody"]
    stream.read(1024)
    assert len(inner.writes) == 1  # nothing pending: nothing written again


def test_a_large_body_is_sent_as_it_is_written_and_close_drops_nothing_sent() -> None:
    inner = Recorder()
    stream = _stream_class("httpcore")(inner)
    chunk = b"x" * (WRITE_BUFFER_BYTES // 2)
    stream.write(chunk)
    stream.write(chunk)  # reaches the limit: sent now, not held
    assert inner.writes == [chunk + chunk]
    stream.write(b"tail")
    stream.close()
    assert inner.closed and inner.writes == [chunk + chunk]


def test_gemini_builds_its_config_again_only_when_it_changes() -> None:
    provider = GeminiProvider(ProviderConfig(name="gemini", model="gemini-2.5-flash", api_key="k"))
    request = ModelRequest(system="be brief", context="", messages=[Message.user("hi")])
    first, digest = provider._config(request, client=None)
    again, same = provider._config(request, client=None)
    assert again is first and same == digest
    request.system = "be thorough"
    changed, other = provider._config(request, client=None)
    assert changed is not first and other != digest and changed.system_instruction == "be thorough"
