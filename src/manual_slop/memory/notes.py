"""Durable notes per project: what the model (``record_note``) or the user chose to remember.

Each note has a category (``general`` unless given), the agent that wrote it and a time. What
loads into a request by itself follows SelfAI's file-memory rules: the agent's categories,
and a note is taken when it was written within ``memory.window_minutes`` or is relevant to
the message (score ≥ ``memory.relevance_threshold``).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from manual_slop.memory.store import EventStore

__all__ = ["MAX_CATEGORY_CHARS", "MAX_NOTE_CHARS", "Note", "NoteError", "Notes", "check_category"]

MAX_NOTE_CHARS = 4_000
MAX_CATEGORY_CHARS = 40
_CATEGORY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\- ]*$")


class NoteError(ValueError):
    """A note or category the store refuses; the message names the problem."""


@dataclass(frozen=True, slots=True)
class Note:
    id: int
    content: str
    category: str
    agent: str
    conversation: str
    ts: float
    updated: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_category(category: str) -> str:
    category = (category or "").strip() or "general"  # blank (also all spaces) is "general"
    if len(category) > MAX_CATEGORY_CHARS or not _CATEGORY.match(category):
        raise NoteError(
            f"category {category[:60]!r}: letters, digits, space, '_', '-' or '.', "
            f"at most {MAX_CATEGORY_CHARS} characters"
        )
    return category.lower()


def _check_content(content: str) -> str:
    if not isinstance(content, str) or not content.strip():
        raise NoteError("a note needs some text")
    if len(content) > MAX_NOTE_CHARS:
        raise NoteError(f"a note is at most {MAX_NOTE_CHARS:,} characters (got {len(content):,})")
    return content.strip()


class Notes:
    """The notes table of a project's memory store."""

    def __init__(self, store: EventStore) -> None:
        self._store = store

    def add(
        self, content: str, category: str = "general", *, agent: str = "", conversation: str = ""
    ) -> Note:
        content, category = self._store.redact(_check_content(content)), check_category(category)
        now = self._store.now()
        cursor = self._store.execute(
            "INSERT INTO notes (content, category, agent, conversation, ts, updated)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (content, category, agent, conversation, now, now),
        )
        self._store.changed("notes")
        return Note(int(cursor.lastrowid or 0), content, category, agent, conversation, now, now)

    def edit(self, note_id: int, content: str | None = None, category: str | None = None) -> Note:
        note = self.get(note_id)
        content = self._store.redact(_check_content(content)) if content is not None else note.content
        category = check_category(category) if category is not None else note.category
        now = self._store.now()
        self._store.execute(
            "UPDATE notes SET content = ?, category = ?, updated = ? WHERE id = ?",
            (content, category, now, note_id),
        )
        self._store.forget_vectors("note", note.id)  # its text changed: embed it again
        self._store.changed("notes")
        return Note(note.id, content, category, note.agent, note.conversation, note.ts, now)

    def delete(self, note_id: int) -> None:
        if self._store.execute("DELETE FROM notes WHERE id = ?", (int(note_id),)).rowcount == 0:
            raise KeyError(f"no note {note_id}")
        self._store.forget_vectors("note", int(note_id))
        self._store.changed("notes")

    def get(self, note_id: int) -> Note:
        row = self._store.execute(f"SELECT {_COLUMNS} FROM notes WHERE id = ?", (int(note_id),)).fetchone()
        if row is None:
            raise KeyError(f"no note {note_id}")
        return Note(*row)

    def all(self, category: str | None = None, categories: tuple[str, ...] = ()) -> list[Note]:
        """Notes, newest first; only ``category`` (or any of ``categories``) when given."""
        wanted = [check_category(category)] if category else [c.lower() for c in categories]
        sql = f"SELECT {_COLUMNS} FROM notes"
        if wanted:
            sql += f" WHERE category IN ({', '.join('?' for _ in wanted)})"
        rows = self._store.execute(sql + " ORDER BY ts DESC, id DESC", wanted).fetchall()
        return [Note(*row) for row in rows]


_COLUMNS = "id, content, category, agent, conversation, ts, updated"
