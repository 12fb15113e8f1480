"""A fake Gemini API on both ``/v1/`` and ``/v1beta/``.

- ``POST models/{model}:generateContent`` and ``:streamGenerateContent?alt=sse``
- ``POST cachedContents``, ``GET cachedContents[/{id}]``, ``DELETE cachedContents/{id}``
- ``GET models`` (the model list)

Like the real service, a request that names ``cachedContent`` and also sets
``systemInstruction``, ``tools`` or ``toolConfig`` is refused with a 400, and a
request naming an unknown (deleted) cache gets a 404. The key arrives as
``x-goog-api-key``; with ``api_key`` set any other key gets a 400
``API_KEY_INVALID`` like the real API.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from tests.fakes.http import FakeServer, Recorded, Response, Stream
from tests.fakes.script import Reply

__all__ = ["GeminiFake"]

_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_MODEL_CALL = re.compile(r"^/(v1|v1beta)/models/([^/:]+):(generateContent|streamGenerateContent)$")
_CACHES = re.compile(r"^/(v1|v1beta)/cachedContents(?:/([^/]+))?$")
_MODELS = re.compile(r"^/(v1|v1beta)/models$")


class GeminiFake(FakeServer):
    protocol = "gemini"

    def __init__(self, turns=(), *, api_key: str | None = None, models: list[str] | None = None) -> None:
        super().__init__(turns)
        self.api_key = api_key
        self.models = models or ["gemini-2.5-flash-lite", "gemini-2.5-flash"]
        self.caches: dict[str, dict[str, Any]] = {}  # live caches by name
        self.cache_log: list[tuple[str, str]] = []  # ("create" | "delete", name) in order
        self._ids = itertools.count(1)

    def is_model_call(self, request: Recorded) -> bool:
        return request.method == "POST" and bool(_MODEL_CALL.match(request.path))

    def error_body(self, status: int, message: str) -> Any:
        return {"error": {"code": status, "message": message, "status": _STATUS.get(status, "UNKNOWN")}}

    def route(self, request: Recorded):
        if self.api_key is not None and request.header("x-goog-api-key") != self.api_key:
            body = self.error_body(400, "API key not valid. Please pass a valid API key.")
            body["error"]["details"] = [
                {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}
            ]
            return Response(400, body)
        body = request.body if isinstance(request.body, dict) else {}
        match = _MODEL_CALL.match(request.path)
        if match and request.method == "POST":
            cached = body.get("cachedContent")
            if cached:
                if any(body.get(k) for k in ("systemInstruction", "tools", "toolConfig")):
                    return Response(
                        400,
                        self.error_body(
                            400,
                            "CachedContent can not be used with GenerateContent request setting "
                            "system_instruction, tools or tool_config.",
                        ),
                    )
                if cached not in self.caches:
                    self.next_turn()  # the call is consumed as it would be upstream
                    return Response(404, self.error_body(404, f"{cached} not found"))
            return self.answer_model_call(request, match.group(3) == "streamGenerateContent")
        match = _CACHES.match(request.path)
        if match:
            return self._caches(request, match.group(2), body)
        if _MODELS.match(request.path) and request.method == "GET":
            return Response(
                200,
                {
                    "models": [
                        {
                            "name": f"models/{m}",
                            "displayName": m,
                            "supportedGenerationMethods": [
                                "generateContent",
                                "countTokens",
                                "createCachedContent",
                            ],
                        }
                        for m in self.models
                    ]
                },
            )
        return super().route(request)

    def _caches(self, request: Recorded, cache_id: str | None, body: dict[str, Any]):
        if request.method == "POST" and cache_id is None:
            name = f"cachedContents/fake{next(self._ids):04d}"
            tokens = self.estimate_tokens(body)
            cache = {
                "name": name,
                "model": body.get("model", ""),
                "displayName": body.get("displayName", ""),
                "createTime": "2025-01-01T00:00:00Z",
                "updateTime": "2025-01-01T00:00:00Z",
                "expireTime": "2025-01-01T01:00:00Z",
                "usageMetadata": {"totalTokenCount": tokens},
            }
            self.caches[name] = {**cache, "body": body}
            self.cache_log.append(("create", name))
            return Response(200, cache)
        if request.method == "GET" and cache_id is None:
            return Response(
                200,
                {
                    "cachedContents": [
                        {k: v for k, v in c.items() if k != "body"} for c in self.caches.values()
                    ]
                },
            )
        name = f"cachedContents/{cache_id}"
        if name not in self.caches:
            return Response(404, self.error_body(404, f"{name} not found"))
        if request.method == "DELETE":
            del self.caches[name]
            self.cache_log.append(("delete", name))
            return Response(200, {})
        if request.method == "GET":
            return Response(200, {k: v for k, v in self.caches[name].items() if k != "body"})
        return super().route(request)

    # -- rendering ---------------------------------------------------------------------------
    def _usage(self, request: Recorded, reply: Reply) -> dict[str, int]:
        body = request.body if isinstance(request.body, dict) else {}
        prompt = self.estimate_tokens(body.get("contents"))
        cached = 0
        if body.get("cachedContent") in self.caches:
            cached = self.caches[body["cachedContent"]]["usageMetadata"]["totalTokenCount"]
        out = max(1, len(reply.text) // 4 + 10 * len(reply.calls))
        usage = {
            "promptTokenCount": prompt + cached,
            "candidatesTokenCount": out,
            "totalTokenCount": prompt + cached + out,
        }
        if cached:
            usage["cachedContentTokenCount"] = cached
        usage.update(reply.usage or {})
        return usage

    def render_reply(self, request: Recorded, reply: Reply, stream: bool) -> Response | Stream:
        model = _MODEL_CALL.match(request.path).group(2)  # type: ignore[union-attr]
        calls = [
            {"functionCall": {"name": c.name, "args": c.args, **({"id": c.id} if c.id else {})}}
            for c in reply.calls
        ]
        usage = self._usage(request, reply)

        def chunk(parts: list[dict[str, Any]], final: bool) -> dict[str, Any]:
            candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
            out: dict[str, Any] = {"candidates": [candidate], "modelVersion": model}
            if final:
                candidate["finishReason"] = "STOP"
                out["usageMetadata"] = usage
            return out

        if not stream:
            parts = ([{"text": reply.text}] if reply.text else []) + calls
            return Response(200, chunk(parts, final=True))
        pieces = reply.text_chunks()
        frames = [chunk([{"text": p}], final=False) for p in pieces]
        if calls or not frames:
            frames.append(chunk(calls, final=True))
        else:
            frames[-1] = chunk([{"text": pieces[-1]}], final=True)
        return Stream([self.sse(f) for f in frames], chunk_delay=reply.chunk_delay)
