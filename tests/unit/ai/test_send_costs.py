"""What the per-send cuts of the AI client keep: a cancel token's lazy Event, the Anthropic
SDK's OpenTelemetry spans (off unless the environment sets OpenTelemetry up), an emitter
without listeners."""

from __future__ import annotations

import os
import threading

import pytest

from manual_slop.ai.providers.anthropic import _otel_configured
from manual_slop.cancel import CancelToken, RequestCancelled
from manual_slop.events import EventEmitter


def test_a_token_cancelled_before_anyone_waits_still_wakes_the_waiter_and_sets_its_event() -> None:
    token = CancelToken()
    assert token._event is None  # nothing built until a wait or ``event`` asks for it
    assert token.cancel("stop") and not token.cancel("again")
    assert token.cancelled and token.event.is_set()
    assert token.wait(5.0) is True
    with pytest.raises(RequestCancelled, match="stop"):
        token.check()


def test_a_waiter_is_woken_by_a_cancel_from_another_thread() -> None:
    token = CancelToken()
    woke: list[bool] = []
    waiter = threading.Thread(target=lambda: woke.append(token.wait(10.0)))
    waiter.start()
    while token._event is None:  # the waiter made the event
        threading.Event().wait(0.001)
    token.cancel()
    waiter.join(timeout=10.0)
    assert woke == [True] and not waiter.is_alive()


def test_anthropic_spans_are_off_unless_the_environment_sets_up_opentelemetry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # (the provider passes ``open_telemetry=False`` to the SDK when this is False; the SDK's
    # acceptance of it is exercised by every Anthropic test against the fake server)
    for name in [n for n in os.environ if n.startswith(("OTEL_", "ANTHROPIC_OPEN_TELEMETRY"))]:
        monkeypatch.delenv(name)
    assert not _otel_configured()
    monkeypatch.setenv("OTEL_PYTHON_TRACER_PROVIDER", "sdk_tracer_provider")
    assert _otel_configured()
    monkeypatch.delenv("OTEL_PYTHON_TRACER_PROVIDER")
    monkeypatch.setenv("ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE", "content")
    assert _otel_configured()


def test_an_emitter_without_listeners_does_nothing_and_one_with_listeners_calls_them() -> None:
    emitter = EventEmitter()
    emitter.emit("request_start", provider="x")  # no listener: returns at once
    seen: list[dict] = []
    off = emitter.on("request_start", lambda **kw: seen.append(kw))
    emitter.emit("request_start", provider="x")
    off()
    emitter.emit("request_start", provider="y")
    assert seen == [{"provider": "x"}]
