"""Recall: search over every stored conversation but the current one, by keyword and meaning.

Candidates are the events whose words match the query (SQLite FTS5, BM25) plus the newest
events; each is scored ``0.4 * keyword + 0.6 * cosine similarity`` of sentence embeddings
(the index's offline embedder; vectors cached in the store). Without an embedder the keyword
score alone counts. Sub-call conversations (compaction summaries, profile learning) are
never recalled: they repeat their parent conversation.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from manual_slop.memory.store import Event, EventStore

__all__ = ["RECALLED_KINDS", "ROLE_OF", "Recall", "RecallHit", "Scorer"]

RECALLED_KINDS = ("user", "respond", "summary", "result")
ROLE_OF = {"user": "user", "respond": "assistant", "summary": "summary", "result": "tool"}
KEYWORD_WEIGHT, MEANING_WEIGHT = 0.4, 0.6
MAX_LIMIT = 50
MAX_CONTENT_CHARS = 1_500
Embed = Callable[[Sequence[str]], Any]  # texts -> one normalised vector per text


@dataclass(frozen=True, slots=True)
class RecallHit:
    conversation: str
    role: str
    content: str
    ts: float
    score: float
    seq: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "conversation": self.conversation,
            "role": self.role,
            "content": self.content,
            "ts": self.ts,
            "score": round(self.score, 4),
        }


class Scorer:
    """Cosine similarity of texts to a query with the offline embedder (None: keyword only)."""

    def __init__(self, embed: Embed | None, model: str = "") -> None:
        self.embed = embed
        self.model = model

    def similarities(self, query: str, texts: Sequence[str]) -> list[float] | None:
        if self.embed is None or not texts:
            return None
        vectors = np.asarray(self.embed([query, *texts]), dtype=np.float32)
        return [float(v) for v in vectors[1:] @ vectors[0]]


class Recall:
    """Cross-conversation search over one project's store."""

    def __init__(self, store: EventStore, scorer: Scorer) -> None:
        self._store = store
        self._scorer = scorer
        self._kinds: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def search(self, query: str, *, exclude: str = "", limit: int = 5) -> list[RecallHit]:
        """The ``limit`` events that best answer ``query``, outside conversation ``exclude``."""
        if not isinstance(query, str) or not query.strip():
            raise ValueError("recall needs a query")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise ValueError(f"limit: a whole number from 1 to {MAX_LIMIT}, got {limit!r}")
        keyword = {e.seq: (e, s) for e, s in self._store.search(query, exclude=exclude, kinds=RECALLED_KINDS)}
        candidates: dict[int, Event] = {seq: e for seq, (e, _) in keyword.items()}
        for event in self._store.recent(exclude=exclude, kinds=RECALLED_KINDS, limit=200):
            candidates.setdefault(event.seq, event)
        events = [e for e in candidates.values() if e.content.strip() and self._recallable(e.conversation)]
        meaning = self._meaning(query, events)
        hits = []
        for index, event in enumerate(events):
            kw = keyword[event.seq][1] if event.seq in keyword else 0.0
            score = kw if meaning is None else KEYWORD_WEIGHT * kw + MEANING_WEIGHT * max(0.0, meaning[index])
            if score > 0:
                hits.append(
                    RecallHit(
                        event.conversation,
                        ROLE_OF.get(event.kind, event.kind),
                        _clip(event.content),
                        event.ts,
                        score,
                        event.seq,
                    )
                )
        hits.sort(key=lambda h: (-h.score, -h.seq))
        return hits[:limit]

    def _recallable(self, conversation: str) -> bool:
        with self._lock:
            if conversation not in self._kinds:
                self._kinds[conversation] = self._store.conversation_kind(conversation)
            return self._kinds[conversation] != "subcall"

    def _meaning(self, query: str, events: list[Event]) -> list[float] | None:
        """Cosine similarity of each event to ``query`` (vectors of events cached in the store)."""
        scorer = self._scorer
        if scorer.embed is None or not events:
            return None
        cached = self._store.vectors("event", [e.seq for e in events], scorer.model)
        missing = [e for e in events if e.seq not in cached]
        if missing:
            fresh = np.asarray(scorer.embed([e.content[:2_000] for e in missing]), dtype=np.float32)
            new = {e.seq: fresh[i].tobytes() for i, e in enumerate(missing)}
            self._store.put_vectors("event", scorer.model, new)
            cached.update(new)
        query_vector = np.asarray(scorer.embed([query]), dtype=np.float32)[0]
        matrix = np.stack([np.frombuffer(cached[e.seq], dtype=np.float32) for e in events])
        return [float(x) for x in matrix @ query_vector]


def _clip(text: str) -> str:
    return text if len(text) <= MAX_CONTENT_CHARS else text[: MAX_CONTENT_CHARS - 1] + "…"
