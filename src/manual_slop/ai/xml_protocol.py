"""Tool calls for models without native function calling: the XML-marker protocol.

The model writes tool calls as a JSON array inside ``<execute>`` markers and gets the
outcomes back inside ``<results>``::

    I will read the file first.
    <execute>[{"name": "read_file", "args": {"path": "app.py"}}]</execute>
    --- next user turn ---
    <results>[{"tool": "read_file", "id": "...", "status": "success", "content": "..."}]</results>

:class:`StreamParser` turns a token stream into events. Markers may be split across
tokens (``"<exe"`` + ``"cute>"``): text that could be the start of a marker is held back
until the next token decides it. Inside ``<execute>`` the JSON is scanned with its string
state, so a ``</execute>`` inside a JSON string is content, not the end of the block.
Text inside ``<think>`` is reasoning, reported separately. A ``<results>`` written by the
model itself ends its turn (it must not invent tool outputs).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from manual_slop.ai.messages import Message, Role, ToolOutput
from manual_slop.tools.tool import ToolCall

__all__ = [
    "EventKind",
    "ParsedTurn",
    "ProtocolEvent",
    "StreamParser",
    "parse_text",
    "protocol_prompt",
    "render_results",
    "render_text_messages",
]

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
EXECUTE_OPEN, EXECUTE_CLOSE = "<execute>", "</execute>"
RESULTS_OPEN, RESULTS_CLOSE = "<results>", "</results>"
_OPENERS = (THINK_OPEN, EXECUTE_OPEN, RESULTS_OPEN)


class EventKind(StrEnum):
    TEXT = "text"  # answer text, safe to show
    THINK = "think"  # reasoning inside <think>
    CALLS = "calls"  # a complete <execute> block: its calls
    ERROR = "error"  # a malformed <execute> block; the message says what is wrong
    RESULTS = "results"  # the model started writing <results> itself: its turn is over


@dataclass(frozen=True, slots=True)
class ProtocolEvent:
    kind: EventKind
    text: str = ""
    calls: tuple[ToolCall, ...] = ()


class StreamParser:
    """Feed tokens with :meth:`feed`, then call :meth:`finish`; both return new events."""

    def __init__(self) -> None:
        self._mode = "text"  # text | think | execute | done
        self._pending = ""  # text held back: it may be the start of a marker
        self._body: list[str] = []  # the current <execute> JSON
        self._tail = ""  # last characters of the execute body, to spot </execute>
        self._in_string = False
        self._escaped = False
        self.blocks = 0  # complete <execute> blocks seen

    @property
    def in_block(self) -> bool:
        """True while an execute block is being written (its arguments may repeat legitimately)."""
        return self._mode == "execute"

    @property
    def done(self) -> bool:
        """True once the turn is over for tool purposes (an <execute> block closed or <results> began)."""
        return self._mode == "done"

    def feed(self, token: str) -> list[ProtocolEvent]:
        events: list[ProtocolEvent] = []
        if self._mode == "done" or not token:
            return events
        text = self._pending + token
        self._pending = ""
        while text and self._mode != "done":
            if self._mode == "execute":
                text = self._scan_execute(text, events)
            elif self._mode == "think":
                text = self._scan_until(text, THINK_CLOSE, EventKind.THINK, events)
            else:
                text = self._scan_text(text, events)
        return events

    def finish(self) -> list[ProtocolEvent]:
        events: list[ProtocolEvent] = []
        if self._mode == "execute":
            events.append(ProtocolEvent(EventKind.ERROR, f"the {EXECUTE_OPEN} block was never closed"))
        elif self._pending:
            kind = EventKind.THINK if self._mode == "think" else EventKind.TEXT
            events.append(ProtocolEvent(kind, self._pending))
        self._pending = ""
        if self._mode != "done":
            self._mode = "done"
        return events

    # -- modes -------------------------------------------------------------------------------
    def _scan_text(self, text: str, events: list[ProtocolEvent]) -> str:
        at, marker = _first_marker(text, _OPENERS)
        if marker is None:
            keep = _partial_suffix(text, _OPENERS)
            if len(text) > keep:
                events.append(ProtocolEvent(EventKind.TEXT, text[: len(text) - keep]))
            self._pending = text[len(text) - keep :] if keep else ""
            return ""
        if at:
            events.append(ProtocolEvent(EventKind.TEXT, text[:at]))
        rest = text[at + len(marker) :]
        if marker == THINK_OPEN:
            self._mode = "think"
        elif marker == EXECUTE_OPEN:
            self._mode = "execute"
            self._body, self._tail, self._in_string, self._escaped = [], "", False, False
        else:
            self._mode = "done"
            events.append(ProtocolEvent(EventKind.RESULTS))
        return rest

    def _scan_until(self, text: str, closer: str, kind: EventKind, events: list[ProtocolEvent]) -> str:
        at = text.find(closer)
        if at < 0:
            keep = _partial_suffix(text, (closer,))
            if len(text) > keep:
                events.append(ProtocolEvent(kind, text[: len(text) - keep]))
            self._pending = text[len(text) - keep :] if keep else ""
            return ""
        if at:
            events.append(ProtocolEvent(kind, text[:at]))
        self._mode = "text"
        return text[at + len(closer) :]

    def _scan_execute(self, text: str, events: list[ProtocolEvent]) -> str:
        for char in text:
            self._body.append(char)
            if self._in_string:
                if self._escaped:
                    self._escaped = False
                elif char == "\\":
                    self._escaped = True
                elif char == '"':
                    self._in_string = False
                self._tail = ""
                continue
            if char == '"':
                self._in_string = True
                self._tail = ""
                continue
            self._tail = (self._tail + char)[-len(EXECUTE_CLOSE) :]
            if self._tail == EXECUTE_CLOSE:
                body = "".join(self._body)[: -len(EXECUTE_CLOSE)]
                events.append(_calls_event(body, self.blocks))
                self.blocks += 1
                self._mode = "done"
                return ""
        return ""


def _first_marker(text: str, markers: Sequence[str]) -> tuple[int, str | None]:
    best, found = len(text), None
    for marker in markers:
        at = text.find(marker)
        if 0 <= at < best:
            best, found = at, marker
    return best, found


def _partial_suffix(text: str, markers: Iterable[str]) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of a marker."""
    longest = 0
    for marker in markers:
        for size in range(min(len(marker) - 1, len(text)), 0, -1):
            if text.endswith(marker[:size]):
                longest = max(longest, size)
                break
    return longest


def _calls_event(body: str, block: int) -> ProtocolEvent:
    try:
        data = json.loads(body)
    except ValueError as exc:
        return ProtocolEvent(EventKind.ERROR, f"the {EXECUTE_OPEN} block is not valid JSON ({exc})")
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not data:
        return ProtocolEvent(EventKind.ERROR, f"the {EXECUTE_OPEN} block must hold a JSON array of calls")
    calls: list[ToolCall] = []
    for n, item in enumerate(data):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            return ProtocolEvent(EventKind.ERROR, f'call {n} needs a "name" string and an "args" object')
        args = item.get("args", item.get("arguments", {}))
        if not isinstance(args, dict):
            return ProtocolEvent(EventKind.ERROR, f'call {n} ({item["name"]}): "args" must be an object')
        calls.append(ToolCall.new(item["name"], args, item.get("id") or f"xml_{block}_{n}"))
    return ProtocolEvent(EventKind.CALLS, calls=tuple(calls))


@dataclass(slots=True)
class ParsedTurn:
    """A whole model turn, parsed: the visible text, the reasoning, the calls, any protocol error."""

    text: str = ""
    thinking: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def apply(self, events: Iterable[ProtocolEvent]) -> list[str]:
        """Record ``events``; returns the visible text pieces among them (for streaming)."""
        shown: list[str] = []
        for event in events:
            if event.kind is EventKind.TEXT:
                self.text += event.text
                shown.append(event.text)
            elif event.kind is EventKind.THINK:
                self.thinking += event.text
            elif event.kind is EventKind.CALLS:
                self.calls.extend(event.calls)
            elif event.kind is EventKind.ERROR:
                self.errors.append(event.text)
        return shown


def parse_text(text: str) -> ParsedTurn:
    """Parse a complete turn (non-streaming)."""
    parser = StreamParser()
    turn = ParsedTurn()
    turn.apply(parser.feed(text))
    turn.apply(parser.finish())
    turn.text = turn.text.strip()
    return turn


# -- rendering -----------------------------------------------------------------------------
def render_results(outputs: Sequence[ToolOutput]) -> str:
    items = [
        {"tool": o.name, "id": o.call_id, "status": str(o.status), "content": o.content} for o in outputs
    ]
    return f"{RESULTS_OPEN}{json.dumps(items, ensure_ascii=False)}{RESULTS_CLOSE}"


def render_calls(calls: Sequence[ToolCall]) -> str:
    items = [{"name": c.name, "args": c.args} for c in calls]
    return f"{EXECUTE_OPEN}{json.dumps(items, ensure_ascii=False)}{EXECUTE_CLOSE}"


def render_text_messages(messages: Sequence[Message]) -> list[dict[str, str]]:
    """The conversation as plain chat messages, tool traffic in the protocol's markers."""
    out: list[dict[str, str]] = []
    for message in messages:
        if message.role is Role.USER:
            out.append({"role": "user", "content": message.text})
        elif message.role is Role.ASSISTANT:
            text = message.text
            if message.tool_calls:
                text = f"{text}\n{render_calls(message.tool_calls)}".strip()
            out.append({"role": "assistant", "content": text})
        else:
            out.append({"role": "user", "content": render_results(message.tool_outputs)})
    return out


def protocol_prompt(declarations: Sequence[dict[str, Any]], *, compact: bool = False) -> str:
    """The system-prompt section that teaches the protocol and lists the tools.

    ``declarations`` are tools in the ``openai`` format. ``compact`` lists each tool on one
    line — its parameters and the first sentence of its description — for models whose
    window is small (the full list takes about 3,000 tokens, the compact one about 800).
    """
    lines = [
        "## Tools",
        "You can call tools. To call them, write one execute block holding a JSON array of calls",
        "and stop writing; the results come back in the next message:",
        f'{EXECUTE_OPEN}[{{"name": "TOOL_NAME", "args": {{"PARAM": "VALUE"}}}}]{EXECUTE_CLOSE}',
        f'Results arrive as {RESULTS_OPEN}[{{"tool": ..., "status": ..., "content": ...}}]{RESULTS_CLOSE}.',
        f"Calls in one block run at the same time. Never write {RESULTS_OPEN} yourself.",
        "When you have what you need, answer in plain text without an execute block.",
        "",
        "Available tools:" if not compact else "Available tools (name(parameters); ? marks optional ones):",
    ]
    for declaration in declarations:
        function = declaration.get("function", declaration)
        description = function.get("description", "").strip()
        if compact:
            lines.append(
                f"- {function['name']}({_signature(function.get('parameters', {}))}): "
                f"{_first_sentence(description)}"
            )
            continue
        params = json.dumps(function.get("parameters", {}), separators=(",", ":"))
        lines.append(f"- {function['name']}: {description}")
        lines.append(f"  parameters: {params}")
    return "\n".join(lines)


def _signature(schema: dict[str, Any]) -> str:
    required = set(schema.get("required") or ())
    parts = []
    for name, spec in (schema.get("properties") or {}).items():
        kind = spec.get("type", "") if isinstance(spec, dict) else ""
        typed = f"{name}: {kind}" if kind and kind != "string" else name
        parts.append(typed if name in required else f"{typed}?")
    return ", ".join(parts)


_SENTENCE_END = re.compile(r"(?<!e\.g)(?<!i\.e)\.\s+(?=[A-Z])")


def _first_sentence(text: str) -> str:
    end = _SENTENCE_END.search(text)
    return text if end is None else text[: end.start() + 1]
