"""Provider-neutral conversation records: what every provider translates to and from.

A conversation is a list of :class:`Message` records (user text, assistant text with
tool calls, tool outputs). Providers render it into their wire format for each call
and turn the answer back into a :class:`ModelReply`. Records are immutable; changing
history (truncating, trimming, repairing) replaces records, and every record carries a
fresh ``key`` so a provider that keeps server- or SDK-side state can tell what changed.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from manual_slop.cancel import CancelToken
from manual_slop.tools.tool import ToolCall, ToolStatus

if TYPE_CHECKING:
    from manual_slop.ai.images import ImageAttachment

__all__ = [
    "INVALID_CALL_KEY",
    "Message",
    "ModelReply",
    "ModelRequest",
    "Role",
    "StreamSink",
    "ToolChoice",
    "ToolOutput",
    "Usage",
    "invalid_call",
]

INVALID_CALL_KEY = "__invalid_call__"  # in ToolCall.args: the model's call could not be parsed

_keys = itertools.count(1)


def _next_key() -> int:
    return next(_keys)


def invalid_call(call_id: str | None, name: str, problem: str) -> ToolCall:
    """A call the model made that cannot run (bad JSON arguments, a malformed execute block).

    The tool loop answers it with ``problem`` as an error output instead of executing it.
    """
    return ToolCall.new(name or "unknown", {INVALID_CALL_KEY: problem}, call_id or None)


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"  # the outputs of the previous assistant message's tool calls


class ToolChoice(StrEnum):
    AUTO = "auto"  # the model may call tools
    NONE = "none"  # the model must answer in text (grace rounds)


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """The result of one tool call as the model will see it."""

    call_id: str
    name: str
    content: str
    status: ToolStatus = ToolStatus.SUCCESS


@dataclass(frozen=True, slots=True)
class Message:
    """One turn. ``native`` keeps a provider's own form of an assistant turn (e.g. Gemini
    parts with thought signatures) so it can be sent back to that provider unchanged."""

    role: Role
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_outputs: tuple[ToolOutput, ...] = ()
    native: Any = None
    native_provider: str = ""
    key: int = field(default_factory=_next_key, compare=False)

    @classmethod
    def user(cls, text: str) -> Message:
        return cls(Role.USER, text)

    @classmethod
    def assistant(
        cls, text: str, tool_calls: Sequence[ToolCall] = (), native: Any = None, provider: str = ""
    ) -> Message:
        return cls(Role.ASSISTANT, text, tuple(tool_calls), native=native, native_provider=provider)

    @classmethod
    def tool(cls, outputs: Sequence[ToolOutput]) -> Message:
        return cls(Role.TOOL, tool_outputs=tuple(outputs))

    def evolve(self, **changes: Any) -> Message:
        """A copy with ``changes`` and a new key (a changed text invalidates ``native``)."""
        if "text" in changes or "tool_outputs" in changes:
            changes.setdefault("native", None)
        return replace(self, key=_next_key(), **changes)

    def size(self) -> int:
        """Characters this turn costs (for token estimates)."""
        total = len(self.text)
        for call in self.tool_calls:
            total += len(call.name) + len(str(call.args)) + 16
        for output in self.tool_outputs:
            total += len(output.content) + len(output.name) + 16
        return total


@dataclass(slots=True)
class Usage:
    """Token counts of one call, or summed over the calls of one send."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_write_tokens += other.cache_write_tokens

    def to_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }


@dataclass(frozen=True, slots=True)
class ModelReply:
    """What one model call produced."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    stop_reason: str = ""
    native: Any = None  # the provider's own form of this assistant turn, kept in the Message


class StreamSink:
    """Where streamed text goes: the caller's ``stream_callback``, in order, from one thread.

    A provider calls :meth:`emit` per chunk. When a streamed attempt breaks and is retried,
    :meth:`restart` tells the reader that what follows replaces the partial text.
    """

    def __init__(self, callback: Callable[[str], None] | None) -> None:
        self._callback = callback
        self.chars = 0  # emitted since the last restart
        self.chunks = 0
        self._parts: list[str] = []  # since the last restart: the partial answer of a cut call

    @property
    def active(self) -> bool:
        return self._callback is not None

    @property
    def text(self) -> str:
        """What this attempt emitted so far (the answer as far as it got)."""
        return "".join(self._parts)

    def emit(self, text: str) -> None:
        if text and self._callback is not None:
            self.chars += len(text)
            self.chunks += 1
            self._parts.append(text)
            self._callback(text)

    def restart(self) -> None:
        if self.chars:
            self.emit("\n\n[connection lost; retrying]\n\n")
        self.chars = 0
        self._parts = []


@dataclass(slots=True)
class ModelRequest:
    """One model call, provider-neutral.

    ``system`` is the stable instruction text, ``context`` the curated files and
    discussion (``md_content``); both go into the provider's system slot, split so that
    caching can treat them separately. ``declarations(fmt)`` gives the tool definitions in
    a provider format (``None``: no tools offered). ``workdir`` and ``on_tool_call`` serve a
    provider that runs tools itself (the Gemini CLI): the folder it works in, and where the
    tool calls it ran are logged (the Tool Calls view, ``toolcalls.log``).
    """

    system: str
    context: str
    messages: list[Message]
    declarations: Callable[[str], list[dict[str, Any]]] | None = None
    tool_choice: ToolChoice = ToolChoice.AUTO
    stream: StreamSink = field(default_factory=lambda: StreamSink(None))
    context_files: list[str] = field(default_factory=list)  # paths the context was built from
    workdir: str = "."
    on_tool_call: Callable[[dict[str, Any]], Any] | None = None
    cancel: CancelToken = field(default_factory=CancelToken)  # the request's; providers stop on it
    # the JSON schema the answer must be one object of (a provider that can constrain its output
    # does; the others rely on the prompt, which describes the shape too)
    answer_schema: dict[str, Any] | None = None
    asked_tools: tuple[str, ...] = ()  # tools the user's message names (see ai.grammar.named_tools)
    asked_paths: tuple[str, ...] = ()  # paths it mentions (ai.grammar.mentioned_paths)
    # the context's images the provider takes (ai.images.admit): they go with the user message of
    # the current turn (see user_turn), never into the stored conversation
    images: tuple[ImageAttachment, ...] = ()

    def user_turn(self) -> int:
        """Index of the message the images go with: the last user message (-1: none)."""
        for index in range(len(self.messages) - 1, -1, -1):
            if self.messages[index].role is Role.USER:
                return index
        return -1

    @property
    def tools_enabled(self) -> bool:
        return self.declarations is not None
