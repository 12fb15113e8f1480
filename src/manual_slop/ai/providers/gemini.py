"""Gemini through the ``google-genai`` SDK (imported at the first call).

The provider keeps the history it sent as the SDK's ``Content`` objects (what a
``client.chats`` session keeps), so each call builds only the new turn. The neutral
conversation stays the record: when it no longer matches (history was trimmed or truncated,
the cache or system text changed) the contents are rebuilt from it, reusing the ``Content``
of earlier model turns (they carry thought signatures that must go back unchanged).

A reply that is not streamed is read from the raw body (``should_return_http_response``):
the SDK's response model (candidates, usage, metadata) was a tenth of a call's CPU, and
only the model's ``Content`` is built, as the SDK builds it, for the history.

System context cache (:class:`GeminiCache`): when the system instruction and tool
definitions reach :data:`CACHE_MIN_TOKENS` (estimated), they are stored server-side as a
``CachedContent`` keyed by a hash of that content. It is rebuilt when the hash changes or
at 90% of its :data:`CACHE_TTL_S` TTL, and deleted by ``cleanup()``. A request that uses a
cache must not set the system instruction, tools or tool config itself (the API refuses).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from manual_slop.ai.errors import ErrorKind, ProviderError, WireError
from manual_slop.ai.images import GEMINI_IMAGES, ImageAttachment
from manual_slop.ai.messages import Message, ModelReply, ModelRequest, Role, ToolChoice, Usage
from manual_slop.ai.providers.base import Provider, json_body, status_kind, token_count, transport_errors
from manual_slop.ai.providers.transport import cancellable_client
from manual_slop.ai.retry import parse_retry_after
from manual_slop.ai.transcript import estimate_tokens
from manual_slop.tools.tool import ToolCall

__all__ = ["CACHE_MIN_TOKENS", "CACHE_TTL_S", "GeminiCache", "GeminiProvider"]

CACHE_MIN_TOKENS = 2048
CACHE_TTL_S = 3600
CACHE_RENEW_AT = 0.9  # of the TTL
MAX_INPUT_TOKENS = 900_000


class GeminiCache:
    """The server-side cache of the system context (one at a time)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.name: str | None = None
        self.digest: str | None = None
        self.created_at: float | None = None
        self.file_paths: list[str] = []
        self.tokens = 0

    def age(self) -> float | None:
        return None if self.created_at is None else self.clock() - self.created_at

    def decide(self, digest: str, tokens: int) -> str:
        """``reuse``, ``create``, ``rebuild:<reason>``, ``drop`` (content too small now) or ``inline``."""
        if tokens < CACHE_MIN_TOKENS:
            return "drop" if self.name else "inline"
        if self.name is None:
            return "create"
        if digest != self.digest:
            return "rebuild:content changed"
        age = self.age() or 0.0
        if age >= CACHE_TTL_S * CACHE_RENEW_AT:
            return f"rebuild:{age:.0f} s old, renewed at {CACHE_RENEW_AT:.0%} of the {CACHE_TTL_S} s TTL"
        return "reuse"

    def forget(self) -> None:
        self.name = self.digest = self.created_at = None
        self.file_paths = []
        self.tokens = 0

    def info(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "age_s": self.age(),
            "ttl_s": CACHE_TTL_S,
            "tokens": self.tokens,
            "file_paths": list(self.file_paths),
        }


class GeminiProvider(Provider):
    name = "gemini"
    default_base_url = ""
    prompt_budget = (int(MAX_INPUT_TOKENS * 0.4), int(MAX_INPUT_TOKENS * 0.3))
    image_support = GEMINI_IMAGES

    def __init__(self, config, hooks=None) -> None:
        super().__init__(config, hooks)
        self._client: Any = None
        self._history: list[Any] | None = None  # the Contents sent last time, and the answer
        self._history_signature: tuple[Any, ...] | None = None  # (config digest, message keys)
        self._last_reply: Any = None  # the Content recorded for our last answer
        self._tool_objects: dict[str, list[Any]] = {}
        # (digest, raw body?, GenerateContentConfig) of the last call
        self._last_config: tuple[str, bool, Any] | None = None
        self.cache = GeminiCache(self.hooks.clock)

    # -- connection --------------------------------------------------------------------------
    def _sdk(self) -> Any:
        if self._client is None:
            from google import genai
            from google.genai import types

            base_url = self.config.base_url.rstrip("/") or None
            http = types.HttpOptions(
                api_version=str(self.config.options.get("api_version", "v1beta")),
                timeout=int(self.config.timeout_s * 1000),
                base_url=base_url,
                # reads a cancel can interrupt (a stalled stream, a slow first byte)
                httpx_client=cancellable_client(
                    base_url or "https://generativelanguage.googleapis.com", self.config.timeout_s
                ),
            )
            self._client = genai.Client(api_key=self.config.key(), http_options=http)
        return self._client

    def close(self) -> None:
        self._history = self._history_signature = self._last_reply = None
        if self._client is not None:
            self._client.close()
            self._client = None

    def reset(self) -> None:
        self._history = self._history_signature = self._last_reply = None

    # -- cache -------------------------------------------------------------------------------
    def _cached_content(
        self, client: Any, system: str, tools: list[Any], tool_json: str, request: ModelRequest
    ) -> str | None:
        from google.genai import types

        digest = hashlib.sha256(f"{self.config.model}\0{system}\0{tool_json}".encode()).hexdigest()
        tokens = estimate_tokens(len(system) + len(tool_json))
        decision = self.cache.decide(digest, tokens)
        if decision == "reuse":
            return self.cache.name
        if decision == "inline":
            return None
        if self.cache.name:
            reason = "content too small to cache" if decision == "drop" else decision.partition(":")[2]
            self._delete_cache(client, reason)
        if decision == "drop":
            return None
        try:
            cache = client.caches.create(
                model=self.config.model,
                config=types.CreateCachedContentConfig(
                    system_instruction=system,
                    tools=tools or None,
                    ttl=f"{CACHE_TTL_S}s",
                    display_name="manual-slop-context",
                ),
            )
        except Exception as exc:  # caching is an optimisation: fall back to inline context
            error = self.classify(exc)
            self.hooks.comms("IN", "cache_error", {"action": "create", "error": error.detail})
            if error.kind is ErrorKind.AUTH:
                raise error from exc
            return None
        self.cache.name, self.cache.digest, self.cache.created_at = cache.name, digest, self.hooks.clock()
        self.cache.file_paths, self.cache.tokens = list(request.context_files), tokens
        created = {"name": cache.name, "tokens": tokens, "ttl_s": CACHE_TTL_S, "reason": decision}
        self.hooks.comms("IN", "cache_created", created)
        return cache.name

    def _delete_cache(self, client: Any, reason: str) -> None:
        name = self.cache.name
        self.cache.forget()
        self._history = None
        try:
            client.caches.delete(name=name)
        except Exception as exc:  # it expires on its own
            self.hooks.comms("IN", "cache_error", {"action": "delete", "name": name, "error": str(exc)[:300]})
            return
        self.hooks.comms("OUT", "cache_deleted", {"name": name, "reason": reason})

    def cleanup(self) -> None:
        if self.cache.name and self._client is not None:
            self._delete_cache(self._client, "cleanup")
        self.cache.forget()

    def cache_info(self) -> dict[str, Any]:
        return self.cache.info() if self.cache.name else {}

    # -- translation -------------------------------------------------------------------------
    def _contents(
        self, messages: list[Message], images: Sequence[ImageAttachment] = (), turn: int = -1
    ) -> list[Any]:
        """``messages`` as SDK contents; ``images`` go (as inline data) with message ``turn``."""
        from google.genai import types

        contents: list[Any] = []
        for index, message in enumerate(messages):
            if message.role is Role.USER:
                parts = (
                    [types.Part.from_bytes(data=i.data, mime_type=i.media_type) for i in images]
                    if index == turn
                    else []
                )
                contents.append(
                    types.Content(role="user", parts=[*parts, types.Part(text=message.text or "(empty)")])
                )
            elif message.role is Role.TOOL:
                parts = []
                for output in message.tool_outputs:
                    response = types.FunctionResponse(
                        name=output.name,
                        response={"output": output.content}
                        if output.status == "success"
                        else {"error": output.content},
                        id=None if output.call_id.startswith("gemini_") else output.call_id,
                    )
                    parts.append(types.Part(function_response=response))
                contents.append(types.Content(role="user", parts=parts))
            elif message.native_provider == self.name and message.native is not None:
                contents.append(message.native)
            else:
                parts = [types.Part(text=message.text)] if message.text else []
                parts += [
                    types.Part(function_call=types.FunctionCall(name=c.name, args=c.args, id=c.id))
                    for c in message.tool_calls
                ]
                contents.append(types.Content(role="model", parts=parts or [types.Part(text="(no text)")]))
        return contents

    def _tools(self, request: ModelRequest) -> tuple[list[Any], str]:
        """The request's tools as SDK objects, and their JSON (built once per distinct set)."""
        from google.genai import types

        declarations = request.declarations("gemini") if request.declarations is not None else []
        if not declarations:
            return [], ""
        tool_json = json.dumps(declarations, sort_keys=True)
        cached = self._tool_objects.get(tool_json)
        if cached is None:
            cached = [
                types.Tool(function_declarations=[types.FunctionDeclaration(**d) for d in declarations])
            ]
            self._tool_objects = {tool_json: cached}  # keep one set: tools rarely change
        return cached, tool_json

    def _config(self, request: ModelRequest, client: Any) -> tuple[Any, str]:
        """The chat's config, and a digest that changes whenever the config does."""
        from google.genai import types

        system = "\n\n".join(part for part in (request.system, request.context) if part.strip())
        tools, tool_json = self._tools(request)
        cache_name = self._cached_content(client, system, tools, tool_json, request) if system else None
        options: dict[str, Any] = {
            "temperature": self.config.temperature,
            "top_p": self.config.top_p,
            "max_output_tokens": self.config.max_tokens,
        }
        force_text = bool(tools) and request.tool_choice is ToolChoice.NONE
        if cache_name:
            options["cached_content"] = cache_name  # system text and tools live in the cache
        else:
            options["system_instruction"] = system or None
            options["tools"] = tools or None
            if force_text:
                options["tool_config"] = types.ToolConfig(
                    function_calling_config=types.FunctionCallingConfig(mode="NONE")
                )
        shape = (self.config.model, options["temperature"], options["top_p"], options["max_output_tokens"])
        digest = hashlib.sha256(
            f"{shape}\0{cache_name}\0{force_text and not cache_name}\0{system}\0{tool_json}".encode()
        ).hexdigest()
        raw = not request.stream.active  # the reply's raw body (see the module's docstring)
        last = self._last_config
        if last is not None and last[:2] == (digest, raw):  # the SDK object is ~0.2 ms to build: reuse it
            return last[2], digest
        config = types.GenerateContentConfig(**options, should_return_http_response=raw or None)
        self._last_config = (digest, raw, config)
        return config, digest

    # -- the call ------------------------------------------------------------------------------
    def generate(self, request: ModelRequest) -> ModelReply:
        if not self.config.key():
            raise self.missing_key()
        try:
            client = self._sdk()
            config, digest = self._config(request, client)
            prefix, last = request.messages[:-1], request.messages[-1]
            signature = (digest, tuple(m.key for m in prefix))
            turn = request.user_turn()
            history = self._history
            if history is None or not self._history_matches(signature, prefix):
                history = self._contents(prefix, request.images, turn)
            self._history = self._history_signature = None  # unknown until this call succeeds
            last_turn = 0 if turn == len(request.messages) - 1 else -1
            contents = [*history, self._contents([last], request.images, last_turn)[0]]
            if request.stream.active:
                content, usage = self._stream(client, contents, config, request)
            else:
                response = client.models.generate_content(
                    model=self.config.model, contents=contents, config=config
                )
                content, usage = self._raw_reply(response.sdk_http_response)
        except ProviderError:
            raise
        except Exception as exc:
            raise self.classify(exc) from exc
        if content is not None:  # (an answer without content is not kept: the next call rebuilds)
            self._history = [*contents, content]
            self._history_signature = (digest, tuple(m.key for m in request.messages))
        self._last_reply = content
        return self._reply(content, usage)

    def _raw_reply(self, http_response: Any) -> tuple[Any, Usage]:
        """The first candidate's ``Content`` (built as the SDK builds it) and the usage, from
        the raw body of a ``generateContent`` reply."""
        from google.genai import types

        body = json_body(http_response.body or "{}")
        if not isinstance(body, dict):
            raise WireError(f"the server answered with something that is not a reply: {str(body)[:200]!r}")
        candidates = body.get("candidates")
        first = candidates[0] if isinstance(candidates, list) and candidates else None
        content = first.get("content") if isinstance(first, dict) else None
        usage = body.get("usageMetadata")
        usage = usage if isinstance(usage, dict) else {}
        tokens = Usage(
            input_tokens=token_count(usage, "promptTokenCount"),
            output_tokens=token_count(usage, "candidatesTokenCount"),
            cache_read_tokens=token_count(usage, "cachedContentTokenCount"),
        )
        if not isinstance(content, dict):
            return None, tokens
        # the SDK's own reading: fields newer than the SDK dropped, then validated
        return types.Content._from_response(response=content, kwargs={}), tokens

    def _history_matches(self, signature: tuple[Any, ...], prefix: list[Message]) -> bool:
        if self._history_signature is None or not prefix:
            return False
        digest, keys = signature
        known_digest, known_keys = self._history_signature
        # the history holds known_keys plus our last answer, which the caller recorded as prefix[-1]
        return (
            digest == known_digest
            and keys[:-1] == known_keys
            and prefix[-1].role is Role.ASSISTANT
            and prefix[-1].native is self._last_reply
        )

    def _stream(
        self, client: Any, contents: list[Any], config: Any, request: ModelRequest
    ) -> tuple[Any, Usage]:
        from google.genai import types

        collected: list[Any] = []
        usage = None
        model = self.config.model
        for chunk in client.models.generate_content_stream(model=model, contents=contents, config=config):
            content = _first_content(chunk)
            for part in content.parts or [] if content is not None else []:
                if part.text and not part.thought:
                    request.stream.emit(part.text)
                collected.append(part)
            if chunk.usage_metadata is not None:
                usage = chunk.usage_metadata
        merged: list[Any] = []
        for part in collected:
            plain = part.text is not None and not part.thought and part.thought_signature is None
            if (
                plain
                and merged
                and merged[-1].text is not None
                and not merged[-1].thought
                and not merged[-1].function_call
            ):
                merged[-1] = types.Part(text=merged[-1].text + part.text)
            else:
                merged.append(part)
        tokens = Usage(
            input_tokens=int(getattr(usage, "prompt_token_count", 0) or 0),
            output_tokens=int(getattr(usage, "candidates_token_count", 0) or 0),
            cache_read_tokens=int(getattr(usage, "cached_content_token_count", 0) or 0),
        )
        return (types.Content(role="model", parts=merged) if collected else None), tokens

    def _reply(self, content: Any, usage: Usage) -> ModelReply:
        text: list[str] = []
        calls: list[ToolCall] = []
        for n, part in enumerate(content.parts or [] if content is not None else []):
            if part.function_call is not None:
                call = part.function_call
                calls.append(
                    ToolCall(call.id or f"gemini_{n}_{call.name}", call.name or "", dict(call.args or {}))
                )
            elif part.text and not part.thought:
                text.append(part.text)
        return ModelReply(
            text="".join(text),
            tool_calls=tuple(calls),
            usage=usage,
            stop_reason="tool_calls" if calls else "stop",
            native=content,
        )

    # -- errors --------------------------------------------------------------------------------
    def classify(self, exc: BaseException) -> ProviderError:
        if isinstance(exc, ProviderError):
            return exc
        if isinstance(exc, WireError):
            return self.error(ErrorKind.UNKNOWN, exc, status=exc.status, retryable=False)
        from google.genai import errors

        if isinstance(exc, errors.APIError):
            status = int(exc.code or 0) or None
            kind = _gemini_kind(status, exc.status, exc.details)
            headers = exc.response.headers if getattr(exc, "response", None) is not None else {}
            retry_after = parse_retry_after(headers.get("retry-after")) or _retry_delay(exc.details)
            return self.error(kind, exc, status=status, retry_after=retry_after)
        if isinstance(exc, transport_errors()):  # timeouts, refused connections, bodies cut short
            return self.error(ErrorKind.NETWORK, exc)
        return self.error(ErrorKind.UNKNOWN, exc, retryable=False)

    def list_models(self) -> list[str]:
        if not self.config.key():
            raise self.missing_key()
        try:
            return sorted((m.name or "").removeprefix("models/") for m in self._sdk().models.list())
        except Exception as exc:
            raise self.classify(exc) from exc


def _first_content(response: Any) -> Any:
    candidates = getattr(response, "candidates", None) or []
    return candidates[0].content if candidates else None


def _details(details: Any) -> list[dict[str, Any]]:
    error = details.get("error", details) if isinstance(details, dict) else {}
    items = error.get("details") if isinstance(error, dict) else None
    return [d for d in items or [] if isinstance(d, dict)]


def _gemini_kind(status: int | None, rpc_status: Any, details: Any) -> ErrorKind:
    items = _details(details)
    reasons = {str(d.get("reason")) for d in items}
    if reasons & {"API_KEY_INVALID", "API_KEY_EXPIRED", "ACCESS_TOKEN_EXPIRED"}:
        return ErrorKind.AUTH
    if rpc_status in ("UNAUTHENTICATED", "PERMISSION_DENIED"):
        return ErrorKind.AUTH
    if status == 429:
        for item in items:
            for violation in item.get("violations") or []:
                if "PerDay" in str(violation.get("quotaId", "")):  # a daily quota is not a rate limit
                    return ErrorKind.QUOTA
        return ErrorKind.RATE_LIMIT
    if rpc_status == "FAILED_PRECONDITION":  # e.g. billing must be enabled for this project
        return ErrorKind.BALANCE
    return status_kind(status)


def _retry_delay(details: Any) -> float | None:
    for item in _details(details):
        delay = item.get("retryDelay")
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return float(delay[:-1])
            except ValueError:
                return None
    return None
