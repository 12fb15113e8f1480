"""A stand-in for ``xllamacpp.Server`` (the in-process llama.cpp server) for the local provider.

It has the same call surface the provider uses: ``handle_chat_completions(request)``
returns an OpenAI-shaped completion dict; with ``stream`` set and a callback, it
calls ``callback(chunk)`` once per token chunk and stops early when the callback
returns True (as xllamacpp does). Answers come from a script of strings, cut at
seeded random boundaries so tags like ``<execute>`` arrive split across tokens.
A scripted ``LlamaError(message)`` makes the call raise ``ValueError`` as
xllamacpp does for a bad request; ``{"error": ...}`` dicts are returned verbatim.
"""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

__all__ = ["FakeLlamaServer", "LlamaError"]


@dataclass(frozen=True, slots=True)
class LlamaError:
    message: str


class FakeLlamaServer:
    """Scripted ``xllamacpp.Server`` look-alike."""

    listening_address = "http://127.0.0.1:0"

    def __init__(
        self,
        turns: list[str | LlamaError | dict[str, Any]] | None = None,
        seed: int = 7,
        token_delay: float = 0.0,
    ) -> None:
        self._turns: deque[str | LlamaError | dict[str, Any]] = deque(turns or [])
        self.token_delay = token_delay  # seconds between two streamed tokens (a slow model)
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.stopped_early = 0

    def push(self, *turns: str | LlamaError | dict[str, Any]) -> None:
        with self._lock:
            self._turns.extend(turns)

    def tokens(self, text: str) -> list[str]:
        pieces, i = [], 0
        while i < len(text):
            step = self._random.randint(1, 4)
            pieces.append(text[i : i + step])
            i += step
        return pieces

    def handle_chat_completions(self, request: dict[str, Any], callback: Any = None) -> dict[str, Any] | None:
        if not isinstance(request.get("messages"), list):
            raise ValueError("Expected 'messages' to be an array")
        with self._lock:
            self.requests.append(request)
            turn = self._turns.popleft() if self._turns else LlamaError("fake llama: no scripted turn left")
        if isinstance(turn, LlamaError):
            raise ValueError(turn.message)
        if isinstance(turn, dict):
            return turn
        usage = {"prompt_tokens": 10, "completion_tokens": max(1, len(turn) // 4), "total_tokens": 0}
        base = {"id": "chatcmpl-fake", "model": "fake.gguf", "created": 0}
        if request.get("stream") and callback is not None:
            callback(
                {
                    **base,
                    "object": "chat.completion.chunk",
                    "choices": [
                        {"index": 0, "delta": {"role": "assistant", "content": None}, "finish_reason": None}
                    ],
                }
            )
            for piece in self.tokens(turn):
                if self.token_delay:
                    time.sleep(self.token_delay)
                chunk = {"index": 0, "delta": {"content": piece}, "finish_reason": None}
                if callback({**base, "object": "chat.completion.chunk", "choices": [chunk]}):
                    self.stopped_early += 1
                    return None
            callback(
                {
                    **base,
                    "object": "chat.completion.chunk",
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                    "usage": usage,
                    "timings": {"predicted_n": usage["completion_tokens"], "predicted_per_second": 100.0},
                }
            )
            return None
        return {
            **base,
            "object": "chat.completion",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": turn}, "finish_reason": "stop"}
            ],
            "usage": usage,
        }
