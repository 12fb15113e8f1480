"""Anthropic Messages API through the ``anthropic`` SDK (imported at the first call).

History is client-managed (the neutral conversation, rendered per call). Prompt caching
uses Anthropic's four ``cache_control`` breakpoints:

    1. the last block of the stable system prompt          (instructions)
    2. the last block of the context chunks                 (files; <= 120,000 chars a chunk)
    3. the last tool definition                             (tool schemas)
    4. the last block of the second-to-last user message    (the conversation so far)

Breakpoints already in the rendered history are stripped before number 4 is placed, so
a request never carries more than four.
"""

from __future__ import annotations

import copy
import os
from typing import Any

from manual_slop.ai.errors import ErrorKind, ProviderError, WireError
from manual_slop.ai.images import ANTHROPIC_IMAGES, ImageAttachment
from manual_slop.ai.messages import Message, ModelReply, ModelRequest, Role, ToolChoice, Usage
from manual_slop.ai.providers.base import Provider, json_body, status_kind, token_count, transport_errors
from manual_slop.ai.providers.transport import cancellable_client
from manual_slop.ai.retry import parse_retry_after
from manual_slop.tools.tool import ToolCall, ToolStatus

__all__ = ["CHUNK_CHARS", "AnthropicProvider", "place_cache_breakpoints"]

CHUNK_CHARS = 120_000
EPHEMERAL = {"type": "ephemeral"}
_ERROR_TYPES = {
    "rate_limit_error": ErrorKind.RATE_LIMIT,
    "authentication_error": ErrorKind.AUTH,
    "permission_error": ErrorKind.AUTH,
    "billing_error": ErrorKind.BALANCE,
    "overloaded_error": ErrorKind.UNKNOWN,  # transient: retried through its 529 status
}


class AnthropicProvider(Provider):
    name = "anthropic"
    default_base_url = ""  # the SDK's own default
    prompt_budget = (180_000, 180_000)  # 200K window minus headroom
    image_support = ANTHROPIC_IMAGES

    def __init__(self, config, hooks=None) -> None:
        super().__init__(config, hooks)
        self._client: Any = None

    def _sdk(self) -> Any:
        if self._client is None:
            import anthropic

            options: dict[str, Any] = {
                "api_key": self.config.key(),
                "max_retries": 0,
                "timeout": self.config.timeout_s,
            }
            if self.config.base_url:
                options["base_url"] = self.config.base_url.rstrip("/")
            # reads a cancel can interrupt (a stalled stream, a slow first byte)
            endpoint = options.get("base_url") or "https://api.anthropic.com"
            options["http_client"] = cancellable_client(endpoint, self.config.timeout_s, library="httpx2")
            if not _otel_configured():
                # The SDK builds an OpenTelemetry span (some 40 attributes) on every call even when
                # no tracer records it: ~5 % of a call's CPU. The app sets up no tracer; spans stay
                # on only when the environment configures OpenTelemetry.
                options["open_telemetry"] = False
            self._client = anthropic.Anthropic(**options)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- translation -------------------------------------------------------------------------
    def render(self, request: ModelRequest) -> dict[str, Any]:
        system: list[dict[str, Any]] = []
        if request.system.strip():
            system.append({"type": "text", "text": request.system})
        chunks = [request.context[i : i + CHUNK_CHARS] for i in range(0, len(request.context), CHUNK_CHARS)]
        context_blocks = [{"type": "text", "text": chunk} for chunk in chunks if chunk.strip()]
        messages: list[dict[str, Any]] = []
        turn = request.user_turn() if request.images else -1
        for index, message in enumerate(request.messages):
            rendered = self._render(message)
            if index == turn:  # images first: Anthropic reads them best before the question
                rendered["content"][:0] = [_image_block(image) for image in request.images]
            if messages and messages[-1]["role"] == rendered["role"]:
                messages[-1]["content"].extend(rendered["content"])  # the API wants alternation
            else:
                messages.append(rendered)
        tools = request.declarations("anthropic") if request.declarations is not None else []
        place_cache_breakpoints(system, context_blocks, tools, messages)
        # The anthropic SDK (2.x) takes no sampling parameters (temperature, top_p): none are sent.
        body: dict[str, Any] = {
            "model": self.config.model,
            "max_tokens": self.config.max_tokens,
            "messages": messages,
        }
        if system or context_blocks:
            body["system"] = system + context_blocks
        if tools:
            body["tools"] = tools
            body["tool_choice"] = {"type": "none" if request.tool_choice is ToolChoice.NONE else "auto"}
        return body

    def _render(self, message: Message) -> dict[str, Any]:
        if message.role is Role.USER:
            return {"role": "user", "content": [{"type": "text", "text": message.text or "(empty)"}]}
        if message.role is Role.TOOL:
            return {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": o.call_id,
                        "content": o.content,
                        **({"is_error": True} if o.status is not ToolStatus.SUCCESS else {}),
                    }
                    for o in message.tool_outputs
                ],
            }
        if message.native_provider == self.name and message.native:
            return {"role": "assistant", "content": copy.deepcopy(message.native)}
        content: list[dict[str, Any]] = []
        if message.text:
            content.append({"type": "text", "text": message.text})
        content += [
            {"type": "tool_use", "id": c.id, "name": c.name, "input": c.args} for c in message.tool_calls
        ]
        return {"role": "assistant", "content": content or [{"type": "text", "text": "(no text)"}]}

    # -- the call ------------------------------------------------------------------------------
    def generate(self, request: ModelRequest) -> ModelReply:
        if not self.config.key():
            raise self.missing_key()
        body = self.render(request)
        try:
            client = self._sdk()
            if request.stream.active:
                with client.messages.stream(**body) as stream:
                    for text in stream.text_stream:
                        request.stream.emit(text)
                    message = stream.get_final_message().to_dict()
            else:
                # The raw body, read as JSON: building the SDK's Message model (every block and
                # the usage, ~0.4 ms a call) only for _reply to copy its fields out was a fifth of
                # a call's CPU. Status errors still raise the SDK's exceptions.
                message = json_body(client.messages.with_raw_response.create(**body).http_response.content)
        except Exception as exc:
            raise self.classify(exc) from exc
        return self._reply(message)

    def _reply(self, message: Any) -> ModelReply:
        """The reply of a Messages API message, as its JSON object (``type: message``)."""
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            raise self.classify(
                WireError(f"the server answered with something that is not a message: {str(message)[:200]!r}")
            )
        text: list[str] = []
        calls: list[ToolCall] = []
        native: list[dict[str, Any]] = []
        for block in content:
            kind = block.get("type", "") if isinstance(block, dict) else ""
            if kind == "text":
                text.append(str(block.get("text") or ""))
                native.append({"type": "text", "text": text[-1]})
            elif kind == "tool_use":
                args = block.get("input")
                args = args if isinstance(args, dict) else {}
                call_id, name = str(block.get("id") or ""), str(block.get("name") or "")
                calls.append(ToolCall(call_id, name, dict(args)))
                native.append({"type": "tool_use", "id": call_id, "name": name, "input": args})
            elif kind in ("thinking", "redacted_thinking"):  # must be sent back unchanged
                native.append({k: v for k, v in block.items() if v is not None})
        usage = message.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        return ModelReply(
            text="".join(text),
            tool_calls=tuple(calls),
            usage=Usage(
                input_tokens=token_count(usage, "input_tokens"),
                output_tokens=token_count(usage, "output_tokens"),
                cache_read_tokens=token_count(usage, "cache_read_input_tokens"),
                cache_write_tokens=token_count(usage, "cache_creation_input_tokens"),
            ),
            stop_reason=str(message.get("stop_reason") or ""),
            native=native,
        )

    # -- errors --------------------------------------------------------------------------------
    def classify(self, exc: BaseException) -> ProviderError:
        if isinstance(exc, ProviderError):
            return exc
        if isinstance(exc, WireError):
            return self.error(ErrorKind.UNKNOWN, exc, status=exc.status, retryable=False)
        import anthropic

        if isinstance(exc, (anthropic.APIConnectionError, *transport_errors())):  # timeouts, cut streams
            return self.error(ErrorKind.NETWORK, exc)
        if isinstance(exc, anthropic.APIStatusError):
            status = exc.status_code
            body = exc.body if isinstance(exc.body, dict) else {}
            error = body.get("error") if isinstance(body.get("error"), dict) else {}
            kind = _ERROR_TYPES.get(str(error.get("type")), status_kind(status))
            retry_after = parse_retry_after(exc.response.headers.get("retry-after"))
            return self.error(kind, exc, status=status, retry_after=retry_after)
        return self.error(ErrorKind.UNKNOWN, exc, retryable=False)

    def list_models(self) -> list[str]:
        if not self.config.key():
            raise self.missing_key()
        try:
            return sorted(m.id for m in self._sdk().models.list(limit=100))
        except Exception as exc:
            raise self.classify(exc) from exc


def _otel_configured() -> bool:
    """Whether the environment sets up OpenTelemetry for this process or the SDK's own spans."""
    return any(name.startswith(("OTEL_", "ANTHROPIC_OPEN_TELEMETRY")) for name in os.environ)


def _image_block(image: ImageAttachment) -> dict[str, Any]:
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": image.media_type, "data": image.base64()},
    }


def place_cache_breakpoints(
    system: list[dict[str, Any]],
    context: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    messages: list[dict[str, Any]],
) -> None:
    """Put the four ``cache_control`` markers in place (in the lists given, which are mutated)."""
    for block in (*system, *context, *tools):
        block.pop("cache_control", None)
    for message in messages:
        for block in message["content"]:
            if isinstance(block, dict):
                block.pop("cache_control", None)
    if system:
        system[-1]["cache_control"] = dict(EPHEMERAL)
    if context:
        context[-1]["cache_control"] = dict(EPHEMERAL)
    if tools:
        tools[-1]["cache_control"] = dict(EPHEMERAL)
    users = [m for m in messages if m["role"] == "user"]
    if len(users) >= 2 and users[-2]["content"]:
        users[-2]["content"][-1]["cache_control"] = dict(EPHEMERAL)
