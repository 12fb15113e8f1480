"""The memory store: every event of every conversation, notes, profile lines, in one SQLite file.

One file per project (``<project dir>/.slop_cache/<project>_memory.sqlite3``) in WAL mode:
a committed event survives ``kill -9`` of the app, and readers never wait for the writer.
Each event is written the moment it happens, in its own transaction (persist-then-rebuild:
the next request's conversation is rebuilt from what is here).

Events are typed records of one conversation: ``user``, ``think``, ``call``, ``result``,
``respond``, ``summary``, ``error``, with the tier, ticket, time and token counts. A
discussion whose entries were edited is *rebased*: its earlier events are marked superseded
(kept, and still found by recall) and new ones written from the entries.

A file SQLite cannot open (not a database, malformed) is moved aside as
``<name>.corrupt-<time>`` and a new store started; ``recovered_from`` says where it went.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from manual_slop.atomic_io import move_aside

__all__ = [
    "EVENT_KINDS",
    "MAX_CONVERSATION_ID",
    "Event",
    "EventStore",
    "fts_query",
    "memory_file_for",
]

log = logging.getLogger(__name__)

EVENT_KINDS = ("user", "think", "call", "result", "respond", "summary", "error")
MAX_CONVERSATION_ID = 300
CACHE_DIR_NAME = ".slop_cache"
_WORD = re.compile(r"\w{2,}", re.UNICODE)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    tier TEXT NOT NULL DEFAULT '',
    ticket TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation TEXT NOT NULL,
    kind TEXT NOT NULL,
    content TEXT NOT NULL,
    tier TEXT NOT NULL DEFAULT '',
    ticket TEXT NOT NULL DEFAULT '',
    ts REAL NOT NULL,
    tokens_in INTEGER NOT NULL DEFAULT 0,
    tokens_out INTEGER NOT NULL DEFAULT 0,
    data TEXT NOT NULL DEFAULT '{}',
    superseded INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS events_by_conversation ON events (conversation, superseded, seq);
CREATE VIRTUAL TABLE IF NOT EXISTS events_fts USING fts5 (
    content, content='events', content_rowid='seq', tokenize='porter unicode61'
);
CREATE TRIGGER IF NOT EXISTS events_fts_insert AFTER INSERT ON events BEGIN
    INSERT INTO events_fts (rowid, content) VALUES (new.seq, new.content);
END;
CREATE TABLE IF NOT EXISTS notes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    content TEXT NOT NULL,
    category TEXT NOT NULL DEFAULT 'general',
    agent TEXT NOT NULL DEFAULT '',
    conversation TEXT NOT NULL DEFAULT '',
    ts REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS profile (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    content TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT 'learned',
    ts REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS vectors (
    kind TEXT NOT NULL,
    ref INTEGER NOT NULL,
    model TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (kind, ref, model)
);
"""


def memory_file_for(project_file: Path) -> Path:
    """``dir/foo.toml`` → ``dir/.slop_cache/foo_memory.sqlite3``."""
    return project_file.parent / CACHE_DIR_NAME / f"{project_file.stem}_memory.sqlite3"


def fts_query(text: str) -> str:
    """A user's words as an FTS5 query that cannot be a syntax error: each word quoted, OR-ed."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))[:32]
    return " OR ".join(f'"{w}"' for w in words)


@dataclass(frozen=True, slots=True)
class Event:
    """One stored record of a conversation."""

    seq: int
    conversation: str
    kind: str
    content: str
    ts: float
    tier: str = ""
    ticket: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    data: dict[str, Any] = field(default_factory=dict)
    superseded: bool = False


class EventStore:
    """The project's memory database; safe to use from any thread (one connection, one lock)."""

    def __init__(
        self,
        path: Path,
        *,
        clock: Callable[[], float] = time.time,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self.path = path
        self._clock = clock
        # the app's redactor: no known secret is written to disk, whatever the model said
        self.redact: Callable[[str], str] = redact or (lambda text: text)
        self._lock = threading.RLock()
        self.recovered_from: Path | None = None
        # told "notes" or "profile" after the user-visible tables change (from any thread)
        self.on_change: Callable[[str], None] | None = None
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = self._open()
        except sqlite3.DatabaseError as exc:
            self.recovered_from = self._move_aside(exc)
            self._db = self._open()

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=10.0)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")  # in WAL mode: durable against a killed process
            db.executescript(_SCHEMA)
            db.execute("SELECT count(*) FROM events").fetchone()
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def _move_aside(self, exc: sqlite3.DatabaseError) -> Path:
        target = move_aside(self.path)
        for suffix in ("-wal", "-shm"):
            side = self.path.with_name(self.path.name + suffix)
            if side.exists():
                os.replace(side, target.with_name(target.name + suffix))
        log.warning("memory store %s could not be opened (%s); moved aside to %s", self.path, exc, target)
        return target

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def execute(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Cursor:
        """One statement under the store's lock (the notes and profile modules use this)."""
        with self._lock:
            return self._db.execute(sql, tuple(params))

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """Statements that commit together or not at all, under the store's lock."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def now(self) -> float:
        return self._clock()

    def changed(self, table: str) -> None:
        """Tell the listener (the GUI's lists) that ``table`` changed; never raises into a write."""
        listener = self.on_change
        if listener is not None:
            try:
                listener(table)
            except Exception:
                log.exception("memory: a change listener failed")

    # -- conversations -------------------------------------------------------------------------
    def ensure_conversation(
        self, conversation: str, kind: str, *, title: str = "", tier: str = "", ticket: str = ""
    ) -> None:
        _check_id(conversation)
        now = self._clock()
        self.execute(
            "INSERT OR IGNORE INTO conversations (id, kind, title, tier, ticket, created, updated) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (conversation, kind, title, tier, ticket, now, now),
        )

    def conversations(self, kind: str | None = None) -> list[dict[str, Any]]:
        """Every conversation (newest first) with its live event count."""
        sql = (
            "SELECT c.id, c.kind, c.title, c.tier, c.ticket, c.created, c.updated, "
            "(SELECT count(*) FROM events e WHERE e.conversation = c.id AND e.superseded = 0) "
            "FROM conversations c"
        )
        params: tuple[Any, ...] = ()
        if kind is not None:
            sql += " WHERE c.kind = ?"
            params = (kind,)
        rows = self.execute(sql + " ORDER BY c.updated DESC", params).fetchall()
        keys = ("id", "kind", "title", "tier", "ticket", "created", "updated", "events")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    # -- events -------------------------------------------------------------------------------------
    def append(
        self,
        conversation: str,
        kind: str,
        content: str,
        *,
        tier: str = "",
        ticket: str = "",
        tokens_in: int = 0,
        tokens_out: int = 0,
        data: Mapping[str, Any] | None = None,
    ) -> Event:
        """Write one event now (its own transaction) and return it with its sequence number."""
        if kind not in EVENT_KINDS:
            raise ValueError(f"unknown event kind {kind!r}; known: {', '.join(EVENT_KINDS)}")
        _check_id(conversation)
        now = self._clock()
        content = self.redact(content)
        payload = self.redact(json.dumps(dict(data or {}), ensure_ascii=False, default=str))
        with self.transaction() as db:
            cursor = db.execute(
                "INSERT INTO events (conversation, kind, content, tier, ticket, ts, tokens_in, tokens_out,"
                " data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (conversation, kind, content, tier, ticket, now, int(tokens_in), int(tokens_out), payload),
            )
            db.execute("UPDATE conversations SET updated = ? WHERE id = ?", (now, conversation))
            seq = int(cursor.lastrowid or 0)
        return Event(
            seq, conversation, kind, content, now, tier, ticket, tokens_in, tokens_out, json.loads(payload)
        )

    def events(self, conversation: str, *, include_superseded: bool = False) -> list[Event]:
        """The conversation's events, oldest first (live ones only unless asked)."""
        sql = f"SELECT {_EVENT_COLUMNS} FROM events WHERE conversation = ?"
        if not include_superseded:
            sql += " AND superseded = 0"
        rows = self.execute(sql + " ORDER BY seq", (conversation,)).fetchall()
        return [_event(row) for row in rows]

    def head(self, conversation: str) -> int:
        """The sequence number of the conversation's last live event (0: none)."""
        row = self.execute(
            "SELECT max(seq) FROM events WHERE conversation = ? AND superseded = 0", (conversation,)
        ).fetchone()
        return int(row[0] or 0)

    def supersede(self, conversation: str) -> int:
        """Mark every live event of ``conversation`` superseded (a rebase); how many."""
        cursor = self.execute(
            "UPDATE events SET superseded = 1 WHERE conversation = ? AND superseded = 0", (conversation,)
        )
        return cursor.rowcount

    def search(
        self,
        query: str,
        *,
        exclude: str = "",
        kinds: Iterable[str] = (),
        skip_kind: str = "",
        limit: int = 50,
    ) -> list[tuple[Event, float]]:
        """Events whose text matches words of ``query`` (FTS5, BM25), best first, with a score
        in (0, 1]; ``exclude``: a conversation left out, ``skip_kind``: conversations of that
        kind left out."""
        match = fts_query(query)
        if not match:
            return []
        where, params = _filters(exclude, kinds, skip_kind)
        rows = self.execute(
            f"SELECT {_E_COLUMNS}, bm25(events_fts) FROM events_fts "
            f"JOIN events e ON e.seq = events_fts.rowid WHERE events_fts MATCH ? AND {where} "
            "ORDER BY bm25(events_fts) LIMIT ?",
            (match, *params, int(limit)),
        ).fetchall()
        if not rows:
            return []
        best = min(row[-1] for row in rows)  # bm25: more negative is better
        return [(_event(row[:-1]), (row[-1] / best) if best < 0 else 1.0) for row in rows]

    def recent(
        self,
        *,
        exclude: str = "",
        kinds: Iterable[str] = (),
        skip_kind: str = "",
        since: float = 0.0,
        limit: int = 50,
    ) -> list[Event]:
        """The newest events (newest first) since ``since``, filtered as :meth:`search` does."""
        where, params = _filters(exclude, kinds, skip_kind)
        rows = self.execute(
            f"SELECT {_E_COLUMNS} FROM events e WHERE e.ts >= ? AND {where} ORDER BY e.seq DESC LIMIT ?",
            (since, *params, int(limit)),
        ).fetchall()
        return [_event(row) for row in rows]

    # -- cached embeddings (recall's semantic half) ---------------------------------------------
    def vectors(self, kind: str, refs: Iterable[int], model: str) -> dict[int, bytes]:
        refs = list(refs)
        found: dict[int, bytes] = {}
        for start in range(0, len(refs), 500):
            part = refs[start : start + 500]
            rows = self.execute(
                f"SELECT ref, vector FROM vectors WHERE kind = ? AND model = ? "
                f"AND ref IN ({', '.join('?' for _ in part)})",
                (kind, model, *part),
            ).fetchall()
            found.update({int(ref): bytes(blob) for ref, blob in rows})
        return found

    def forget_vectors(self, kind: str, ref: int) -> None:
        self.execute("DELETE FROM vectors WHERE kind = ? AND ref = ?", (kind, int(ref)))

    def put_vectors(self, kind: str, model: str, vectors: Mapping[int, bytes]) -> None:
        with self.transaction() as db:
            db.executemany(
                "INSERT OR REPLACE INTO vectors (kind, ref, model, vector) VALUES (?, ?, ?, ?)",
                [(kind, ref, model, blob) for ref, blob in vectors.items()],
            )


_EVENT_COLUMNS = "seq, conversation, kind, content, ts, tier, ticket, tokens_in, tokens_out, data, superseded"
_E_COLUMNS = ", ".join(f"e.{c.strip()}" for c in _EVENT_COLUMNS.split(","))


def _filters(exclude: str, kinds: Iterable[str], skip_kind: str) -> tuple[str, list[Any]]:
    """The WHERE conditions (on ``events e``) that :meth:`EventStore.search` and
    :meth:`EventStore.recent` share, and their parameters."""
    kinds = tuple(kinds)
    clauses, params = ["e.conversation != ?"], [exclude, *kinds]
    if kinds:
        clauses.append(f"e.kind IN ({', '.join('?' for _ in kinds)})")
    if skip_kind:
        clauses.append("e.conversation NOT IN (SELECT id FROM conversations WHERE kind = ?)")
        params.append(skip_kind)
    return " AND ".join(clauses), params


def _event(row: tuple[Any, ...]) -> Event:
    seq, conversation, kind, content, ts, tier, ticket, tokens_in, tokens_out, data, superseded = row
    try:
        payload = json.loads(data) if data else {}
    except ValueError:
        payload = {}
    return Event(
        int(seq),
        conversation,
        kind,
        content,
        float(ts),
        tier,
        ticket,
        int(tokens_in),
        int(tokens_out),
        payload if isinstance(payload, dict) else {},
        bool(superseded),
    )


def _check_id(conversation: str) -> None:
    if not isinstance(conversation, str) or not conversation.strip():
        raise ValueError("a conversation id must be a non-empty string")
    if len(conversation) > MAX_CONVERSATION_ID:
        raise ValueError(f"a conversation id is at most {MAX_CONVERSATION_ID} characters")
