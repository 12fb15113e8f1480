"""A fake Anthropic Messages API: ``POST /v1/messages`` (JSON and SSE) and ``GET /v1/models``.

Accepts the key as ``x-api-key`` or ``Authorization: Bearer``; with ``api_key``
set, any other key gets a 401 ``authentication_error``. Prompt caching is
simulated from the ``cache_control`` breakpoints it receives: the prefix up to
each breakpoint is remembered, so a later request with the same prefix reports
``cache_read_input_tokens`` instead of ``cache_creation_input_tokens``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from typing import Any

from tests.fakes.http import FakeServer, Recorded, Response, Stream
from tests.fakes.script import Reply, split_text

__all__ = ["AnthropicFake"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


class AnthropicFake(FakeServer):
    protocol = "anthropic"

    def __init__(self, turns=(), *, api_key: str | None = None, models: list[str] | None = None) -> None:
        super().__init__(turns)
        self.api_key = api_key
        self.models = models or ["claude-sonnet-4-6", "claude-haiku-4-5"]
        self._ids = itertools.count(1)
        self._cached_prefixes: set[str] = set()

    def is_model_call(self, request: Recorded) -> bool:
        return request.method == "POST" and request.path.rstrip("/") == "/v1/messages"

    def error_body(self, status: int, message: str) -> Any:
        return {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message}}

    def route(self, request: Recorded):
        key = request.header("x-api-key") or (request.header("authorization") or "").removeprefix("Bearer ")
        if self.api_key is not None and key != self.api_key:
            return Response(401, self.error_body(401, "invalid x-api-key"))
        if self.is_model_call(request):
            body = request.body if isinstance(request.body, dict) else {}
            return self.answer_model_call(request, bool(body.get("stream")))
        if request.method == "GET" and request.path.rstrip("/") == "/v1/models":
            data = [
                {"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"}
                for m in self.models
            ]
            return Response(
                200, {"data": data, "has_more": False, "first_id": data[0]["id"], "last_id": data[-1]["id"]}
            )
        return super().route(request)

    # -- rendering ---------------------------------------------------------------------------
    def _usage(self, request: Recorded, reply: Reply) -> dict[str, int]:
        body = request.body if isinstance(request.body, dict) else {}
        write = read = 0
        for prefix, tokens in _cache_prefixes(body):
            if prefix in self._cached_prefixes:
                read = tokens
            else:
                self._cached_prefixes.add(prefix)
                write = tokens - read
        total = self.estimate_tokens({k: body.get(k) for k in ("system", "messages", "tools")})
        usage = {
            "input_tokens": max(1, total - read - write),
            "output_tokens": max(1, len(reply.text) // 4 + 10 * len(reply.calls)),
            "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read,
        }
        usage.update(reply.usage or {})
        return usage

    def render_reply(self, request: Recorded, reply: Reply, stream: bool) -> Response | Stream:
        body = request.body if isinstance(request.body, dict) else {}
        msg_id = f"msg_fake{next(self._ids):04d}"
        model = body.get("model", "claude-fake")
        content: list[dict[str, Any]] = []
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        for n, call in enumerate(reply.calls):
            call_id = call.id or f"toolu_{msg_id[-4:]}_{n}"
            content.append({"type": "tool_use", "id": call_id, "name": call.name, "input": call.args})
        stop_reason = "tool_use" if reply.calls else "end_turn"
        usage = self._usage(request, reply)
        if not stream:
            return Response(
                200,
                {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": content,
                    "stop_reason": stop_reason,
                    "stop_sequence": None,
                    "usage": usage,
                },
            )
        start_usage = {**usage, "output_tokens": 1}
        events = [
            self.sse(
                {
                    "type": "message_start",
                    "message": {
                        "id": msg_id,
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": start_usage,
                    },
                },
                "message_start",
            )
        ]
        for index, block in enumerate(content):
            if block["type"] == "text":
                events.append(
                    self.sse(
                        {
                            "type": "content_block_start",
                            "index": index,
                            "content_block": {"type": "text", "text": ""},
                        },
                        "content_block_start",
                    )
                )
                for piece in reply.text_chunks():
                    events.append(
                        self.sse(
                            {
                                "type": "content_block_delta",
                                "index": index,
                                "delta": {"type": "text_delta", "text": piece},
                            },
                            "content_block_delta",
                        )
                    )
            else:
                start = {**block, "input": {}}
                events.append(
                    self.sse(
                        {"type": "content_block_start", "index": index, "content_block": start},
                        "content_block_start",
                    )
                )
                for piece in split_text(json.dumps(block["input"]), 7):
                    events.append(
                        self.sse(
                            {
                                "type": "content_block_delta",
                                "index": index,
                                "delta": {"type": "input_json_delta", "partial_json": piece},
                            },
                            "content_block_delta",
                        )
                    )
            events.append(self.sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
        events.append(
            self.sse(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": usage["output_tokens"]},
                },
                "message_delta",
            )
        )
        events.append(self.sse({"type": "message_stop"}, "message_stop"))
        return Stream(events, chunk_delay=reply.chunk_delay)

    # -- inspection helpers for tests --------------------------------------------------------------
    @staticmethod
    def breakpoints(body: dict[str, Any]) -> list[str]:
        """Where ``cache_control`` markers sit: ``system[i]``, ``tools[i]``, ``messages[i].content[j]``."""
        found: list[str] = []
        system = body.get("system")
        if isinstance(system, list):
            found += [
                f"system[{i}]" for i, b in enumerate(system) if isinstance(b, dict) and "cache_control" in b
            ]
        found += [f"tools[{i}]" for i, t in enumerate(body.get("tools") or []) if "cache_control" in t]
        for i, message in enumerate(body.get("messages") or []):
            content = message.get("content")
            if isinstance(content, list):
                found += [
                    f"messages[{i}].content[{j}]"
                    for j, b in enumerate(content)
                    if isinstance(b, dict) and "cache_control" in b
                ]
        return found


def _cache_prefixes(body: dict[str, Any]) -> list[tuple[str, int]]:
    """(hash of the request prefix up to each breakpoint, its token estimate), in order."""
    ordered: list[Any] = []
    marks: list[int] = []
    for block in body.get("tools") or []:
        ordered.append(block)
        if "cache_control" in block:
            marks.append(len(ordered))
    system = body.get("system")
    for block in system if isinstance(system, list) else [system]:
        ordered.append(block)
        if isinstance(block, dict) and "cache_control" in block:
            marks.append(len(ordered))
    for message in body.get("messages") or []:
        content = message.get("content")
        for block in content if isinstance(content, list) else [content]:
            ordered.append({"role": message.get("role"), "block": block})
            if isinstance(block, dict) and "cache_control" in block:
                marks.append(len(ordered))
    out = []
    for mark in marks:
        prefix = _strip_cache_control(ordered[:mark])
        text = json.dumps(prefix, sort_keys=True, default=str)
        out.append((hashlib.sha256(text.encode()).hexdigest(), max(1, len(text) // 4)))
    return out


def _strip_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_cache_control(v) for v in value]
    return value
