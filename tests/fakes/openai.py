"""A fake OpenAI-compatible server (DeepSeek, MiniMax, Ollama, vLLM, llama.cpp, LM Studio).

``POST /v1/chat/completions`` (JSON, or SSE when ``stream`` is true, ending with
``data: [DONE]``; a usage chunk when ``stream_options.include_usage`` is set)
and ``GET /v1/models``; both also without the ``/v1`` prefix, as DeepSeek serves
them. With ``api_key`` set, any other ``Authorization: Bearer`` key gets a 401.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from tests.fakes.http import FakeServer, Recorded, Response, Stream
from tests.fakes.script import Reply, split_text

__all__ = ["OpenAIFake", "raw_tool_call_reply"]

_CHAT_PATHS = {"/v1/chat/completions", "/chat/completions"}
_MODEL_PATHS = {"/v1/models", "/models"}
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "insufficient_balance",
    403: "permission_denied",
    429: "rate_limit_exceeded",
    500: "server_error",
    503: "service_unavailable",
}


class OpenAIFake(FakeServer):
    protocol = "openai"

    def __init__(self, turns=(), *, api_key: str | None = None, models: list[str] | None = None) -> None:
        super().__init__(turns)
        self.api_key = api_key
        self.models = models or ["deepseek-chat", "deepseek-reasoner"]
        self.windows: dict[str, int] = {}  # model -> context_length reported in the model list
        self._ids = itertools.count(1)

    def is_model_call(self, request: Recorded) -> bool:
        return request.method == "POST" and request.path.rstrip("/") in _CHAT_PATHS

    def error_body(self, status: int, message: str) -> Any:
        return {"error": {"message": message, "type": _ERROR_TYPES.get(status, "api_error"), "code": status}}

    def route(self, request: Recorded):
        if self.api_key is not None:
            key = (request.header("authorization") or "").removeprefix("Bearer ")
            if key != self.api_key:
                return Response(401, self.error_body(401, "Incorrect API key provided"))
        if self.is_model_call(request):
            body = request.body if isinstance(request.body, dict) else {}
            return self.answer_model_call(request, bool(body.get("stream")))
        if request.method == "GET" and request.path.rstrip("/") in _MODEL_PATHS:
            return Response(
                200,
                {
                    "object": "list",
                    "data": [
                        {"id": m, "object": "model", "owned_by": "fake"}
                        | ({"context_length": self.windows[m]} if m in self.windows else {})
                        for m in self.models
                    ],
                },
            )
        return super().route(request)

    def render_reply(self, request: Recorded, reply: Reply, stream: bool) -> Response | Stream:
        body = request.body if isinstance(request.body, dict) else {}
        completion_id = f"chatcmpl-fake{next(self._ids):04d}"
        model = body.get("model", "fake-model")
        prompt_tokens = self.estimate_tokens(body.get("messages"))
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": max(1, len(reply.text) // 4 + 10 * len(reply.calls)),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        usage.update(reply.usage or {})
        calls = [
            {
                "id": call.id or f"call_{completion_id[-4:]}_{n}",
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.args)},
            }
            for n, call in enumerate(reply.calls)
        ]
        finish = "tool_calls" if calls else "stop"
        base = {"id": completion_id, "created": 1735689600, "model": model}
        if not stream:
            message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
            if calls:
                message["tool_calls"] = calls
            return Response(
                200,
                {
                    **base,
                    "object": "chat.completion",
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage,
                },
            )

        def frame(delta: dict[str, Any], finish_reason: str | None = None) -> str:
            choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
            return self.sse({**base, "object": "chat.completion.chunk", "choices": [choice]})

        frames = [frame({"role": "assistant", "content": ""})]
        frames += [frame({"content": piece}) for piece in reply.text_chunks()]
        for index, call in enumerate(calls):
            head = {
                "index": index,
                "id": call["id"],
                "type": "function",
                "function": {"name": call["function"]["name"], "arguments": ""},
            }
            frames.append(frame({"tool_calls": [head]}))
            for piece in split_text(call["function"]["arguments"], 6):
                frames.append(frame({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
        frames.append(frame({}, finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            frames.append(
                self.sse({**base, "object": "chat.completion.chunk", "choices": [], "usage": usage})
            )
        frames.append(self.sse("[DONE]"))
        return Stream(frames, chunk_delay=reply.chunk_delay)


def raw_tool_call_reply(name: str, arguments: str, call_id: str = "call_1") -> dict[str, Any]:
    """A chat completion whose one tool call carries ``arguments`` verbatim (e.g. invalid JSON,
    which :class:`Reply` cannot express): send it with ``Json(...)``."""
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return {
        "id": "x",
        "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}],
    }
