"""Conversations kept in the store: each turn persisted as it is added, rebuilt on demand.

:class:`StoredConversations` is the AI client's conversation source when the app has a
memory store. ``open(id)`` gives the conversation rebuilt from its live events (or the
cached one, when nothing was written since); every message added to it is written at once
as typed events (:class:`StoreJournal`). A provider session is only ever a cache of one such
conversation.

The discussion TOML and the store (direction of truth, also in ``docs/guide_memory.md``):

- what was *said* in a discussion (its entries) is the user's to edit: when the entries no
  longer match the stored conversation, the store follows them (:meth:`sync_discussion`
  rebases: old events superseded, new ones written from the entries);
- what the store has beyond the entries (turns after the last save, e.g. the app was killed)
  flows back into the discussion when the project loads (:meth:`missing_turns`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from manual_slop.ai.messages import Message, Role, ToolOutput, Usage
from manual_slop.ai.transcript import Conversation
from manual_slop.memory.compaction import summary_head
from manual_slop.memory.store import Event, EventStore
from manual_slop.tools.tool import ToolCall, ToolStatus

__all__ = [
    "StoreJournal",
    "StoredConversations",
    "SyncResult",
    "Turn",
    "discussion_id",
    "rebuild",
    "said_turns",
]

Turn = tuple[str, str]  # ("user" | "assistant", text)


def discussion_id(name: str) -> str:
    return f"discussion:{name}"


@dataclass(frozen=True, slots=True)
class SyncResult:
    """What :meth:`StoredConversations.sync_discussion` did: ``same``, ``rebased`` or ``view_behind``
    (the store has turns the entries lack: ``missing``)."""

    action: str
    missing: tuple[Turn, ...] = ()


class StoreJournal:
    """Writes one conversation's messages to the store the moment they are added."""

    def __init__(self, store: EventStore, conversation: str, tier: str = "", ticket: str = "") -> None:
        self.store = store
        self.conversation = conversation
        self.tier = tier
        self.ticket = ticket
        self.seq_of: dict[int, int] = {}  # message key -> its last event's seq
        self.head = 0

    def _append(self, kind: str, content: str, usage: Usage | None = None, **data: Any) -> int:
        event = self.store.append(
            self.conversation,
            kind,
            content,
            tier=self.tier,
            ticket=self.ticket,
            tokens_in=usage.input_tokens if usage else 0,
            tokens_out=usage.output_tokens if usage else 0,
            data=data,
        )
        self.head = event.seq
        return event.seq

    def record(self, message: Message, usage: Usage | None) -> None:
        seq = 0
        if message.role is Role.USER:
            seq = self._append("user", message.text)
        elif message.role is Role.ASSISTANT:
            for thought in _thoughts(message.native):
                self._append("think", thought)
            seq = self._append(
                "respond",
                message.text,
                usage,
                provider=message.native_provider,
                calls=len(message.tool_calls),
            )
            for call in message.tool_calls:
                seq = self._append(
                    "call",
                    f"{call.name} {json.dumps(call.args, ensure_ascii=False, default=str)}",
                    id=call.id,
                    name=call.name,
                    args=call.args,
                )
        else:
            for output in message.tool_outputs:
                seq = self._append(
                    "result",
                    output.content,
                    call_id=output.call_id,
                    name=output.name,
                    status=str(output.status),
                )
        if seq:
            self.seq_of[message.key] = seq

    def summarized(
        self, replaced: list[Message], summary: str, kept_users: list[str], usage: Usage | None
    ) -> None:
        upto = max((self.seq_of.get(m.key, 0) for m in replaced), default=0)
        self._append("summary", summary, usage, replaces_to=upto, users=len(kept_users))


class StoredConversations:
    """The AI client's conversations, backed by the store (``ai.transcript.ConversationSource``)."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._cache: dict[str, Conversation] = {}

    def open(
        self, conversation: str, *, kind: str = "chat", tier: str = "", ticket: str = ""
    ) -> Conversation:
        """The conversation as stored, with a journal that persists what is added to it."""
        with self._lock:
            cached = self._cache.get(conversation)
            journal = cached.journal if cached is not None else None
            if isinstance(journal, StoreJournal) and journal.head == self.store.head(conversation):
                return cached  # type: ignore[return-value]  # unchanged: keeps providers' native forms
            self.store.ensure_conversation(conversation, kind, tier=tier, ticket=ticket)
            journal = StoreJournal(self.store, conversation, tier, ticket)
            events = self.store.events(conversation)
            rebuilt = Conversation(rebuild(events, journal.seq_of), journal, conversation)
            journal.head = events[-1].seq if events else 0
            self._cache[conversation] = rebuilt
            return rebuilt

    def forget(self, conversation: str | None = None) -> None:
        """Drop cached conversations (they are rebuilt from the store on the next open)."""
        with self._lock:
            if conversation is None:
                self._cache.clear()
            else:
                self._cache.pop(conversation, None)

    def error(self, conversation: str, message: str, **data: Any) -> None:
        self.store.ensure_conversation(conversation, "chat")
        self.store.append(conversation, "error", message, data=data)

    # -- discussions ------------------------------------------------------------------------------
    def sync_discussion(self, conversation: str, entries: Sequence[Turn], title: str = "") -> SyncResult:
        """Make the stored conversation agree with what the discussion's entries say."""
        with self._lock:
            self.store.ensure_conversation(conversation, "discussion", title=title)
            stored = stored_turns(self.store.events(conversation))
            if _agrees(stored, entries):
                return SyncResult("same")
            missing = _beyond(stored, entries)
            if missing:
                return SyncResult("view_behind", tuple(missing))
            self.store.supersede(conversation)
            for role, text in entries:
                kind = "user" if role == "user" else "respond"
                self.store.append(conversation, kind, text, data={"source": "discussion"})
            self._cache.pop(conversation, None)
            return SyncResult("rebased")

    def missing_turns(self, conversation: str, entries: Sequence[Turn]) -> list[Turn]:
        """Turns the store has after the entries (a session that ended without saving)."""
        return _beyond(stored_turns(self.store.events(conversation)), entries)


def said_turns(entries: Sequence[Any], user_role: str, ai_role: str) -> list[Turn]:
    """A discussion's entries as turns: the user role speaks as the user, the AI role as the
    assistant, any other role as the user with its name in front."""
    turns: list[Turn] = []
    for entry in entries:
        role = str(entry.get("role", "")) if isinstance(entry, dict) else ""
        content = str(entry.get("content", "")) if isinstance(entry, dict) else str(entry)
        if role == ai_role:
            turns.append(("assistant", content))
        elif role == user_role:
            turns.append(("user", content))
        else:
            turns.append(("user", f"{role}: {content}"))
    return turns


def stored_turns(events: Sequence[Event]) -> list[Turn]:
    """What was said in a stored conversation: each user message and each exchange's last answer."""
    turns: list[Turn] = []
    answer: str | None = None
    for event in events:
        if event.kind == "user":
            if answer is not None:
                turns.append(("assistant", answer))
                answer = None
            turns.append(("user", event.content))
        elif event.kind == "respond":
            answer = event.content
    if answer is not None:
        turns.append(("assistant", answer))
    return turns


def _agrees(stored: Sequence[Turn], entries: Sequence[Turn]) -> bool:
    """Same turns; an entry may decorate an answer (a fallback note before it, a cut mark after)."""
    if len(stored) != len(entries):
        return False
    for (role, text), (entry_role, entry_text) in zip(stored, entries, strict=True):
        if role != entry_role:
            return False
        if role == "user" and text.strip() != entry_text.strip():
            return False
        if role == "assistant" and text.strip() not in entry_text:
            return False
    return True


def _beyond(stored: Sequence[Turn], entries: Sequence[Turn]) -> list[Turn]:
    """The stored turns after ``entries`` when the entries agree with the start of ``stored``."""
    if len(stored) > len(entries) and _agrees(stored[: len(entries)], entries):
        return list(stored[len(entries) :])
    return []


def rebuild(events: Sequence[Event], seq_of: dict[int, int] | None = None) -> list[Message]:
    """The messages a conversation's live events stand for (the latest summary folds what it covers)."""
    seq_of = seq_of if seq_of is not None else {}
    summaries = [e for e in events if e.kind == "summary"]
    latest = summaries[-1] if summaries else None
    upto = int(latest.data.get("replaces_to", 0)) if latest is not None else 0
    messages: list[Message] = []

    def add(message: Message, seq: int) -> None:
        messages.append(message)
        seq_of[message.key] = seq

    if latest is not None:
        users = [e.content for e in events if e.kind == "user" and e.seq <= upto]
        for message in summary_head(users, latest.content):
            add(message, latest.seq)
    for event in events:
        if event.seq <= upto or event.kind in ("summary", "think", "error"):
            continue
        last = messages[-1] if messages else None
        if event.kind == "user":
            add(Message.user(event.content), event.seq)
        elif event.kind == "respond":
            add(Message.assistant(event.content, provider=str(event.data.get("provider", ""))), event.seq)
        elif event.kind == "call" and last is not None and last.role is Role.ASSISTANT:
            call = ToolCall(
                str(event.data.get("id", "")),
                str(event.data.get("name", "")),
                dict(event.data.get("args") or {}),
            )
            messages[-1] = last.evolve(tool_calls=(*last.tool_calls, call))
            seq_of[messages[-1].key] = event.seq
        elif event.kind == "result":
            output = ToolOutput(
                str(event.data.get("call_id", "")),
                str(event.data.get("name", "")),
                event.content,
                _status(event.data.get("status")),
            )
            if last is not None and last.role is Role.TOOL:
                messages[-1] = last.evolve(tool_outputs=(*last.tool_outputs, output))
                seq_of[messages[-1].key] = event.seq
            else:
                add(Message.tool((output,)), event.seq)
    return messages


def _status(value: Any) -> ToolStatus:
    try:
        return ToolStatus(str(value))
    except ValueError:
        return ToolStatus.ERROR


def _thoughts(native: Any) -> list[str]:
    """Reasoning text a provider kept in its own form of a turn (Anthropic thinking blocks,
    Gemini thought parts)."""
    found: list[str] = []
    for item in native if isinstance(native, list | tuple) else ():
        if isinstance(item, dict) and item.get("type") == "thinking" and item.get("thinking"):
            found.append(str(item["thinking"]))
        elif getattr(item, "thought", False) and getattr(item, "text", None):
            found.append(str(item.text))
    return found
