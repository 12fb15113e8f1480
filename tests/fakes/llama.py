"""A stand-in for ``xllamacpp.Server`` (the in-process llama.cpp server) for the local provider.

It has the same call surface the provider uses: ``handle_chat_completions(request)``
returns an OpenAI-shaped completion dict; with ``stream`` set and a callback, it
calls ``callback(chunk)`` once per token chunk and stops early when the callback
returns True (as xllamacpp does). Answers come from a script of strings, cut at
seeded random boundaries so tags like ``<execute>`` arrive split across tokens.
A scripted ``LlamaError(message)`` makes the call raise ``ValueError`` as
xllamacpp does for a bad request; ``{"error": ...}`` dicts are returned verbatim.

Faults of a generation (reliability suite R5): ``LlamaStall(text, seconds, after)`` streams
``after`` tokens, then says nothing for ``seconds`` (or until :meth:`release`), then goes on;
``LlamaAbort(message, after, chunk)`` streams ``after`` tokens, then dies — it raises
(``chunk=False``) or hands an error chunk, as xllamacpp does when a slot fails. A
``responder(request)``, when set, gives the turn of each call instead of the script.
"""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["FakeLlamaServer", "LlamaAbort", "LlamaError", "LlamaStall", "LlamaTurn"]


@dataclass(frozen=True, slots=True)
class LlamaError:
    message: str


@dataclass(frozen=True, slots=True)
class LlamaStall:
    """A generation that stops producing tokens for ``seconds`` after ``after`` of them."""

    text: str
    seconds: float
    after: int = 0


@dataclass(frozen=True, slots=True)
class LlamaAbort:
    """A generation that dies after ``after`` tokens: raises, or hands an ``error`` chunk."""

    message: str
    after: int = 2
    chunk: bool = False


LlamaTurn = str | LlamaError | LlamaStall | LlamaAbort | dict[str, Any]


class FakeLlamaServer:
    """Scripted ``xllamacpp.Server`` look-alike."""

    listening_address = "http://127.0.0.1:0"

    def __init__(
        self,
        turns: list[LlamaTurn] | None = None,
        seed: int = 7,
        token_delay: float = 0.0,
    ) -> None:
        self._turns: deque[LlamaTurn] = deque(turns or [])
        self.responder: Callable[[dict[str, Any]], LlamaTurn] | None = None
        self.token_delay = token_delay  # seconds between two streamed tokens (a slow model)
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.stopped_early = 0
        self._released = threading.Event()  # ends every stall at once (a test's teardown)

    def release(self) -> None:
        """End every stall now and from now on (so no generation outlives its test)."""
        self._released.set()

    def push(self, *turns: LlamaTurn) -> None:
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
            responder = self.responder
            turn: LlamaTurn = LlamaError("fake llama: no scripted turn left")
            if responder is None and self._turns:
                turn = self._turns.popleft()
        if responder is not None:
            turn = responder(request)
        if isinstance(turn, LlamaError):
            raise ValueError(turn.message)
        if isinstance(turn, dict):
            return turn
        fault: LlamaStall | LlamaAbort | None = None
        if isinstance(turn, LlamaStall | LlamaAbort):
            fault, turn = turn, turn.text if isinstance(turn, LlamaStall) else "the answer that dies " * 3
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
            for index, piece in enumerate(self.tokens(turn)):
                if fault is not None and index == fault.after:
                    if isinstance(fault, LlamaStall):
                        self._released.wait(fault.seconds)
                    elif fault.chunk:
                        callback({"error": {"code": 500, "message": fault.message}})
                        return None
                    else:
                        raise RuntimeError(fault.message)
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
