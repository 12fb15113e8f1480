"""A provider session's conversation, and the three ways it is kept sendable.

- :meth:`Conversation.repair` — a history left dangling by an interrupted call (tool
  calls without outputs, outputs without calls, a question with no answer) is made
  valid again before the next call.
- :meth:`Conversation.compact` — older tool outputs are cut to ``history_trunc_limit``
  characters and their stale ``[SYSTEM: FILES UPDATED]`` blocks are dropped; the latest
  round stays whole.
- :meth:`Conversation.trim` — when the estimated prompt passes a provider's trigger, the
  oldest *exchanges* (a user message and everything up to the next one) are dropped until
  it is under the target. Dropping whole exchanges never separates a tool call from its
  output.

Token counts are estimates: :data:`CHARS_PER_TOKEN` characters per token.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from manual_slop.ai.messages import Message, Role, ToolOutput, Usage
from manual_slop.tools.tool import ToolStatus

__all__ = [
    "CHARS_PER_TOKEN",
    "REFRESH_MARKER",
    "Conversation",
    "ConversationSource",
    "InMemoryConversations",
    "Journal",
    "estimate_tokens",
    "strip_refresh",
    "truncate_output",
]

CHARS_PER_TOKEN = 4
REFRESH_MARKER = "[SYSTEM: FILES UPDATED]"
STALE_REFRESH_NOTE = "[SYSTEM: FILES UPDATED block removed: a later turn has the current files]"
INTERRUPTED_OUTPUT = "(not executed: the request was interrupted before this call ran)"
INTERRUPTED_REPLY = "(no reply: the request was interrupted)"
_TRUNCATED = re.compile(r"\n\[\.\.\. [\d,]+ more characters of this old tool output were truncated\]\Z")


def estimate_tokens(chars: int) -> int:
    return (chars + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def strip_refresh(text: str) -> str:
    """``text`` without its ``[SYSTEM: FILES UPDATED]`` block (everything from the marker on)."""
    at = text.find(REFRESH_MARKER)
    if at < 0:
        return text
    return text[:at].rstrip() + "\n\n" + STALE_REFRESH_NOTE


def truncate_output(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with a note saying how much was cut (idempotent)."""
    if len(text) <= limit:
        return text
    already = _TRUNCATED.search(text)
    if already is not None and already.start() <= limit:
        return text
    cut = len(text) - limit
    return f"{text[:limit]}\n[... {cut:,} more characters of this old tool output were truncated]"


class Journal(Protocol):
    """Where a conversation's turns are persisted the moment they are added (memory.store)."""

    def record(self, message: Message, usage: Usage | None) -> None: ...

    def summarized(self, replaced: int, summary: str, kept_users: list[str], usage: Usage | None) -> None: ...


@dataclass(slots=True)
class Conversation:
    """The messages of one conversation, oldest first; ``journal`` persists each turn as added."""

    messages: list[Message] = field(default_factory=list)
    journal: Journal | None = None
    id: str = ""

    def __len__(self) -> int:
        return len(self.messages)

    def add(self, message: Message, usage: Usage | None = None) -> None:
        self.messages.append(message)
        if self.journal is not None:
            self.journal.record(message, usage)

    def clear(self) -> None:
        self.messages.clear()

    def chars(self) -> int:
        return sum(m.size() for m in self.messages)

    def text(self) -> str:
        """Every turn's text, calls and outputs as plain text (for counting its tokens)."""
        parts: list[str] = []
        for message in self.messages:
            parts.append(message.text)
            parts.extend(f"{call.name} {call.args}" for call in message.tool_calls)
            parts.extend(output.content for output in message.tool_outputs)
        return "\n".join(part for part in parts if part)

    # -- repair --------------------------------------------------------------------------
    def repair(self) -> list[str]:
        """Make the history valid for any provider; returns a note per fix (empty: nothing to fix)."""
        notes: list[str] = []
        fixed: list[Message] = []
        for message in self.messages:
            if not fixed and message.role is not Role.USER:
                notes.append(f"dropped a leading {message.role} message")
                continue
            previous = fixed[-1] if fixed else None
            if message.role is Role.TOOL:
                if previous is None or previous.role is not Role.ASSISTANT or not previous.tool_calls:
                    notes.append("dropped tool outputs with no tool calls before them")
                    continue
                fixed.append(_match_outputs(previous, message, notes))
                continue
            if previous is not None and previous.role is Role.ASSISTANT and previous.tool_calls:
                fixed.append(_match_outputs(previous, Message.tool(()), notes))
                previous = fixed[-1]
            if message.role is Role.USER and previous is not None and previous.role is Role.TOOL:
                notes.append("added a placeholder reply after tool outputs that got no answer")
                fixed.append(Message.assistant(INTERRUPTED_REPLY))
            elif message.role is Role.USER and previous is not None and previous.role is Role.USER:
                notes.append("merged two user messages in a row")
                fixed[-1] = previous.evolve(text=f"{previous.text}\n\n{message.text}")
                continue
            fixed.append(message)
        if fixed and fixed[-1].role is Role.ASSISTANT and fixed[-1].tool_calls:
            fixed.append(_match_outputs(fixed[-1], Message.tool(()), notes))
        if fixed and fixed[-1].role is Role.TOOL:
            notes.append("added a placeholder reply after tool outputs that got no answer")
            fixed.append(Message.assistant(INTERRUPTED_REPLY))
        if fixed and fixed[-1].role is Role.USER:
            notes.append("dropped a question that never got an answer")
            fixed.pop()
        if notes:
            self.messages = fixed
        return notes

    # -- compaction ----------------------------------------------------------------------
    def compact(self, trunc_limit: int) -> int:
        """Truncate older tool outputs and drop their stale refresh blocks; returns messages changed.

        Only the latest round of the exchange in progress stays whole: once the user has
        asked something new, the outputs of earlier exchanges are old too.
        """
        tool_indexes = [i for i, m in enumerate(self.messages) if m.role is Role.TOOL]
        if not tool_indexes:  # no tool outputs: nothing to truncate (every send without tools)
            return 0
        last_user = max((i for i, m in enumerate(self.messages) if m.role is Role.USER), default=-1)
        if tool_indexes[-1] > last_user:
            tool_indexes.pop()
        changed = 0
        for index in tool_indexes:
            message = self.messages[index]
            outputs = tuple(
                ToolOutput(
                    o.call_id, o.name, truncate_output(strip_refresh(o.content), trunc_limit), o.status
                )
                for o in message.tool_outputs
            )
            if outputs != message.tool_outputs:
                self.messages[index] = message.evolve(tool_outputs=outputs)
                changed += 1
        return changed

    # -- trimming ------------------------------------------------------------------------
    def exchanges(self) -> list[list[Message]]:
        """The messages grouped by user turn."""
        groups: list[list[Message]] = []
        for message in self.messages:
            if message.role is Role.USER or not groups:
                groups.append([])
            groups[-1].append(message)
        return groups

    def trim(self, trigger_tokens: int, target_tokens: int, fixed_tokens: int = 0) -> int:
        """Drop the oldest exchanges when the estimate passes ``trigger_tokens``, down to
        ``target_tokens`` (the latest exchange is always kept); returns messages dropped."""
        estimate = fixed_tokens + estimate_tokens(self.chars())
        if estimate <= trigger_tokens:
            return 0
        groups = self.exchanges()
        dropped = 0
        while len(groups) > 1 and estimate > target_tokens:
            group = groups.pop(0)
            dropped += len(group)
            estimate -= estimate_tokens(sum(m.size() for m in group))
        if dropped:
            self.messages = [m for g in groups for m in g]
        return dropped


class ConversationSource(Protocol):
    """Where the AI client gets a conversation by id (``memory.conversations`` persists them)."""

    def open(
        self, conversation: str, *, kind: str = "chat", tier: str = "", ticket: str = ""
    ) -> Conversation: ...

    def forget(self, conversation: str | None = None) -> None: ...

    def error(self, conversation: str, message: str, **data: Any) -> None:
        """Record a request's final error with the conversation (a stored one keeps it)."""


class InMemoryConversations:
    """Conversations by id for a client without a memory store (they end with the process)."""

    def __init__(self) -> None:
        self._conversations: dict[str, Conversation] = {}

    def open(
        self, conversation: str, *, kind: str = "chat", tier: str = "", ticket: str = ""
    ) -> Conversation:
        return self._conversations.setdefault(conversation, Conversation(id=conversation))

    def forget(self, conversation: str | None = None) -> None:
        if conversation is None:
            self._conversations.clear()
        else:
            self._conversations.pop(conversation, None)

    def error(self, conversation: str, message: str, **data: Any) -> None:
        """Nothing to record: these conversations end with the process."""


def _match_outputs(assistant: Message, tool: Message, notes: list[str]) -> Message:
    """``tool`` with exactly one output per call of ``assistant``, in call order."""
    by_id = {o.call_id: o for o in tool.tool_outputs}
    outputs: list[ToolOutput] = []
    for call in assistant.tool_calls:
        output = by_id.pop(call.id, None)
        if output is None:
            notes.append(f"added a placeholder output for interrupted call {call.name} ({call.id})")
            output = ToolOutput(call.id, call.name, INTERRUPTED_OUTPUT, ToolStatus.ERROR)
        outputs.append(output)
    if by_id:
        notes.append(f"dropped {len(by_id)} tool output(s) matching no call")
    if tuple(outputs) == tool.tool_outputs:
        return tool
    return tool.evolve(tool_outputs=tuple(outputs))
