"""OpenAI-compatible chat completions over raw HTTP (``httpx``, through the cancellable
transport of :mod:`.transport`): DeepSeek, MiniMax and any local or hosted server (Ollama,
llama.cpp server, vLLM, LM Studio).

One implementation, three names: :class:`OpenAICompatibleProvider` speaks the protocol
(``POST {base}/chat/completions``, JSON or SSE; ``GET {base}/models``);
:class:`DeepSeekProvider` and :class:`MiniMaxProvider` only add their endpoint, budget and
the structured error codes their services send.

Errors: an HTTP status >= 400, an in-band ``error`` object or MiniMax's
``base_resp.status_code`` become a :class:`~manual_slop.ai.errors.WireError`, then a
classified :class:`~manual_slop.ai.errors.ProviderError`; connection failures, timeouts and
bodies cut short are ``network``; a body that is not JSON is ``unknown``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, ClassVar

from manual_slop.ai.errors import ErrorKind, ProviderError, WireError
from manual_slop.ai.images import OPENAI_IMAGES
from manual_slop.ai.messages import (
    Message,
    ModelReply,
    ModelRequest,
    Role,
    StreamSink,
    ToolChoice,
    Usage,
    invalid_call,
)
from manual_slop.ai.providers.base import Provider, json_body, status_kind
from manual_slop.ai.providers.transport import cancellable_client
from manual_slop.ai.retry import parse_retry_after
from manual_slop.tools.tool import ToolCall

__all__ = ["DeepSeekProvider", "MiniMaxProvider", "OpenAICompatibleProvider"]

CONNECT_TIMEOUT_S = 10.0
WINDOW_LOOKUP_TIMEOUT_S = 5.0


class OpenAICompatibleProvider(Provider):
    """Any server that speaks OpenAI's ``/v1/chat/completions``; the key is optional."""

    name = "openai_compatible"
    needs_api_key = False
    default_base_url = "http://127.0.0.1:11434/v1"  # Ollama's OpenAI-compatible endpoint
    prompt_budget = (100_000, 100_000)
    asks_server_for_window: ClassVar[bool] = True  # False: a hosted catalogue (the app's table)
    # sent as image_url parts; a text-only model on the server answers with an error (shown as such)
    image_support = OPENAI_IMAGES
    # structured error codes (error.code / error.type) -> kind, checked before the HTTP status
    error_codes: ClassVar[dict[str, ErrorKind]] = {
        "insufficient_quota": ErrorKind.QUOTA,
        "rate_limit_exceeded": ErrorKind.RATE_LIMIT,
        "invalid_api_key": ErrorKind.AUTH,
        "authentication_error": ErrorKind.AUTH,
        "insufficient_balance": ErrorKind.BALANCE,
        "billing_hard_limit_reached": ErrorKind.BALANCE,
    }

    def __init__(self, config, hooks=None) -> None:
        super().__init__(config, hooks)
        self._session: Any = None
        self._windows: dict[str, int] = {}  # model -> window its server reported (0: none)

    # -- connection --------------------------------------------------------------------------
    def _http(self) -> Any:
        if self._session is None:
            self._session = cancellable_client(self.base_url, self.config.timeout_s, CONNECT_TIMEOUT_S)
        return self._session

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.config.key():
            headers["Authorization"] = f"Bearer {self.config.key()}"
        return headers

    # -- translation -------------------------------------------------------------------------
    def render_messages(self, request: ModelRequest) -> list[dict[str, Any]]:
        system = "\n\n".join(part for part in (request.system, request.context) if part.strip())
        out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        turn = request.user_turn() if request.images else -1
        for index, message in enumerate(request.messages):
            rendered = self._render(message)
            if index == turn:  # the text, then the images as data: URLs (image_url parts)
                rendered[0]["content"] = [
                    {"type": "text", "text": message.text},
                    *({"type": "image_url", "image_url": {"url": i.data_url()}} for i in request.images),
                ]
            out.extend(rendered)
        return out

    @staticmethod
    def _render(message: Message) -> list[dict[str, Any]]:
        if message.role is Role.USER:
            return [{"role": "user", "content": message.text}]
        if message.role is Role.TOOL:
            return [
                {"role": "tool", "tool_call_id": o.call_id, "content": o.content}
                for o in message.tool_outputs
            ]
        rendered: dict[str, Any] = {"role": "assistant", "content": message.text or None}
        if message.tool_calls:
            rendered["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.args)},
                }
                for call in message.tool_calls
            ]
        elif not message.text:
            rendered["content"] = ""
        return [rendered]

    def temperature(self) -> float:
        return self.config.temperature

    def payload(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": self.render_messages(request),
            "temperature": self.temperature(),
            "top_p": self.config.top_p,
            "max_tokens": self.config.max_tokens,
        }
        if request.declarations is not None:
            tools = request.declarations("openai")
            if tools:
                body["tools"] = tools
                body["tool_choice"] = "none" if request.tool_choice is ToolChoice.NONE else "auto"
        if request.stream.active:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    # -- the call ------------------------------------------------------------------------------
    def generate(self, request: ModelRequest) -> ModelReply:
        if self.needs_api_key and not self.config.key():
            raise self.missing_key()
        body = self.payload(request)
        url = f"{self.base_url}/chat/completions"
        try:
            if body.get("stream"):
                # a stream read to its end leaves the connection reusable
                with self._http().stream("POST", url, json=body, headers=self._headers()) as response:
                    if response.status_code >= 400:
                        response.read()
                        raise _wire_error(response)
                    _expect_event_stream(response)
                    return self._read_stream(response, request.stream)
            response = self._http().post(url, json=body, headers=self._headers())
            if response.status_code >= 400:
                raise _wire_error(response)
            return self._read_json(response)
        except ProviderError:
            raise
        except Exception as exc:
            raise self.classify(exc) from exc

    def _read_json(self, response: Any) -> ModelReply:
        data = json_body(response.content, response.status_code)
        self.check_body(data)
        choices = data.get("choices") or []
        if not choices or not isinstance(choices[0], dict):
            raise WireError("the answer has no choices", status=response.status_code, body=data)
        choice = choices[0]
        message = choice.get("message") or {}
        calls = tuple(
            _tool_call(
                c.get("id"),
                (c.get("function") or {}).get("name", ""),
                (c.get("function") or {}).get("arguments"),
            )
            for c in message.get("tool_calls") or []
        )
        return ModelReply(
            text=message.get("content") or "",
            tool_calls=calls,
            usage=_usage(data.get("usage")),
            stop_reason=str(choice.get("finish_reason") or ""),
        )

    def _read_stream(self, response: Any, sink: StreamSink) -> ModelReply:
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        usage = Usage()
        finish = ""
        done = False
        for data in _sse_events(response):
            if data == "[DONE]":
                done = True
                break
            try:
                event = json.loads(data)
            except ValueError as exc:
                raise WireError(f"a stream event is not JSON: {data[:200]!r}") from exc
            self.check_body(event)
            if event.get("usage"):
                usage = _usage(event["usage"])
            for choice in event.get("choices") or []:
                delta = choice.get("delta") or {}
                piece = delta.get("content")
                if piece:
                    text.append(piece)
                    sink.emit(piece)
                for part in delta.get("tool_calls") or []:
                    slot = calls.setdefault(
                        int(part.get("index", 0)), {"id": "", "name": "", "arguments": ""}
                    )
                    slot["id"] = part.get("id") or slot["id"]
                    function = part.get("function") or {}
                    slot["name"] += function.get("name") or ""
                    slot["arguments"] += function.get("arguments") or ""
                if choice.get("finish_reason"):
                    finish = str(choice["finish_reason"])
        if not done and not finish:
            raise self.error(
                ErrorKind.NETWORK, None, message="the stream ended before the answer was complete"
            )
        tool_calls = tuple(_tool_call(c["id"], c["name"], c["arguments"]) for _, c in sorted(calls.items()))
        return ModelReply("".join(text), tool_calls, usage, finish)

    def check_body(self, data: Any) -> None:
        """Raise WireError for an error reported inside a 200 answer."""
        if isinstance(data, dict) and isinstance(data.get("error"), dict):
            error = data["error"]
            raise WireError(
                str(error.get("message") or "error"), body=data, code=error.get("code") or error.get("type")
            )

    # -- errors --------------------------------------------------------------------------------
    def classify(self, exc: BaseException) -> ProviderError:
        import httpx

        if isinstance(exc, ProviderError):
            return exc
        if isinstance(exc, httpx.TransportError):  # timeouts, refused or broken connections, cut bodies
            return self.error(ErrorKind.NETWORK, exc)
        if isinstance(exc, WireError):
            kind = self.code_kind(exc.code)
            if kind is None:
                kind = self.code_kind(_nested_code(exc.body))
            if kind is None:
                kind = status_kind(exc.status)
            retry_after = parse_retry_after(exc.headers.get("retry-after"))
            return self.error(kind, exc, status=exc.status, retry_after=retry_after)
        if isinstance(exc, httpx.HTTPError):
            return self.error(ErrorKind.NETWORK, exc)
        return self.error(ErrorKind.UNKNOWN, exc, retryable=False)

    def code_kind(self, code: Any) -> ErrorKind | None:
        if code is None:
            return None
        return self.error_codes.get(str(code))

    # -- models --------------------------------------------------------------------------------
    def list_models(self) -> list[str]:
        return sorted(str(m["id"]) for m in self._model_list(30.0) if m.get("id"))

    def _model_list(self, timeout: float) -> list[dict[str, Any]]:
        try:
            response = self._http().get(f"{self.base_url}/models", headers=self._headers(), timeout=timeout)
            if response.status_code >= 400:
                raise _wire_error(response)
            data = json_body(response.content, response.status_code)
        except ProviderError:
            raise
        except Exception as exc:
            raise self.classify(exc) from exc
        items = data.get("data") if isinstance(data, dict) else None
        return [m for m in items or [] if isinstance(m, dict)]

    def known_window(self) -> int:
        """The window the server reports for the model in its model list (vLLM, LM Studio,
        OpenRouter and llama.cpp each name it differently); 0 when it reports none. Asked once
        per model; hosted providers with a fixed catalogue use the app's table instead."""
        model = self.config.model
        if not self.asks_server_for_window:
            return 0
        if model not in self._windows:
            try:
                entries = self._model_list(WINDOW_LOOKUP_TIMEOUT_S)
            except ProviderError:
                return 0  # not cached: the server may be up at the next send
            entry = next((m for m in entries if m.get("id") == model), {})
            self._windows[model] = _reported_window(entry)
        return self._windows[model]


class DeepSeekProvider(OpenAICompatibleProvider):
    name = "deepseek"
    needs_api_key = True
    default_base_url = "https://api.deepseek.com"
    prompt_budget = (110_000, 110_000)  # 128K context minus headroom
    asks_server_for_window = False
    image_support = None  # deepseek-chat and deepseek-reasoner are text-only models
    error_codes: ClassVar[dict[str, ErrorKind]] = {
        **OpenAICompatibleProvider.error_codes,
        "invalid_request_error": ErrorKind.UNKNOWN,
    }


class MiniMaxProvider(OpenAICompatibleProvider):
    """MiniMax answers some errors with HTTP 200 and ``base_resp.status_code`` != 0."""

    name = "minimax"
    needs_api_key = True
    default_base_url = "https://api.minimax.io/v1"
    prompt_budget = (180_000, 180_000)
    asks_server_for_window = False
    image_support = None  # the chat models of its OpenAI-compatible API (MiniMax-M1/M2) read text only
    error_codes: ClassVar[dict[str, ErrorKind]] = {
        **OpenAICompatibleProvider.error_codes,
        "1001": ErrorKind.NETWORK,  # request timeout
        "1002": ErrorKind.RATE_LIMIT,  # requests per minute
        "1039": ErrorKind.RATE_LIMIT,  # tokens per minute
        "1004": ErrorKind.AUTH,  # authentication failed
        "2049": ErrorKind.AUTH,  # invalid API key
        "1008": ErrorKind.BALANCE,  # insufficient balance
        "2056": ErrorKind.QUOTA,  # usage limit of the plan
    }

    def temperature(self) -> float:
        return min(1.0, max(0.01, self.config.temperature))  # MiniMax accepts (0, 1]

    def check_body(self, data: Any) -> None:
        super().check_body(data)
        base = data.get("base_resp") if isinstance(data, dict) else None
        if isinstance(base, dict) and base.get("status_code") not in (None, 0):
            raise WireError(
                str(base.get("status_msg") or "MiniMax error"), body=data, code=base["status_code"]
            )

    def classify(self, exc: BaseException) -> ProviderError:
        error = super().classify(exc)
        if isinstance(exc, WireError) and str(exc.code) == "1013":  # internal service error: transient
            error.retryable = True
        return error


# -- wire helpers ---------------------------------------------------------------------------------
_WINDOW_KEYS = ("context_length", "max_context_length", "max_model_len", "context_window", "n_ctx")


def _reported_window(entry: dict[str, Any]) -> int:
    """The context window in one model-list entry (0 when it has none)."""
    for where in (entry, entry.get("meta"), entry.get("top_provider")):
        if isinstance(where, dict):
            for key in _WINDOW_KEYS:
                value = where.get(key)
                if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                    return value
    return 0


def _expect_event_stream(response: Any) -> None:
    """A streamed request answered with something else (an HTML page from a proxy, JSON
    without streaming) is the server's answer, not a broken connection: no retry."""
    kind = str(response.headers.get("Content-Type", "")).split(";")[0].strip().lower()
    if kind and kind != "text/event-stream":
        snippet = next(response.iter_bytes(), b"")[:300].decode("utf-8", "replace")
        raise WireError(
            f"expected an event stream, got {kind}: {snippet!r}", status=response.status_code, body=snippet
        )


def _wire_error(response: Any) -> WireError:
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text[:500]
    code = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        code = body["error"].get("code") or body["error"].get("type")
        message = str(body["error"].get("message") or body)
    else:
        message = str(body)[:500] or response.reason_phrase
    return WireError(
        message, status=response.status_code, body=body, headers=dict(response.headers), code=code
    )


def _nested_code(body: Any) -> Any:
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return body["error"].get("type")
    return None


def _sse_events(response: Any) -> Iterator[str]:
    """The ``data:`` payloads of an SSE stream (multi-line data joined)."""
    lines: list[str] = []
    for raw in response.iter_lines():
        line = raw.rstrip("\r")
        if not line:
            if lines:
                yield "\n".join(lines)
                lines = []
            continue
        if line.startswith("data:"):
            lines.append(line[5:].lstrip())
    if lines:
        yield "\n".join(lines)


def _tool_call(call_id: str | None, name: str, arguments: Any) -> ToolCall:
    if isinstance(arguments, dict):
        return ToolCall.new(name, arguments, call_id or None)
    text = arguments or "{}"
    try:
        args = json.loads(text)
    except ValueError:
        return invalid_call(call_id, name, f"the arguments are not valid JSON: {text[:300]}")
    if not isinstance(args, dict):
        return invalid_call(call_id, name, "the arguments must be a JSON object")
    return ToolCall.new(name, args, call_id or None)


def _usage(data: Any) -> Usage:
    if not isinstance(data, dict):
        return Usage()
    details = data.get("prompt_tokens_details") or {}
    cached = data.get("prompt_cache_hit_tokens") or details.get("cached_tokens") or 0
    return Usage(
        input_tokens=int(data.get("prompt_tokens") or 0),
        output_tokens=int(data.get("completion_tokens") or 0),
        cache_read_tokens=int(cached),
    )
