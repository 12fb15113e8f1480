"""Recall: search over every stored conversation but the current one, by keyword and meaning.

Candidates are the events whose words match the query (SQLite FTS5, BM25) plus the newest
events; each is scored ``0.4 * keyword + 0.6 * cosine similarity`` of sentence embeddings
(the index's offline embedder, loaded on first use; vectors cached in the store). Without
an embedder the keyword score alone counts. Sub-call conversations (compaction summaries,
profile learning) are never recalled: they repeat their parent conversation.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from manual_slop.memory.store import EventStore

__all__ = ["MAX_LIMIT", "RECALLED_KINDS", "ROLE_OF", "Recall", "RecallHit", "Scorer"]

log = logging.getLogger(__name__)

RECALLED_KINDS = ("user", "respond", "summary", "result")
ROLE_OF = {"user": "user", "respond": "assistant", "summary": "summary", "result": "tool"}
KEYWORD_WEIGHT, MEANING_WEIGHT = 0.4, 0.6
MAX_LIMIT = 50
MAX_CONTENT_CHARS = 1_500
EMBEDDED_CHARS = 2_000  # of an event's text (the model reads 256 tokens of it anyway)
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
    """Cosine similarity of stored texts to a query with the offline embedder, which ``load``
    gives on first use (a failure means keyword-only); each text's vector is cached in the
    store under its kind and ref. Safe to use from any thread."""

    def __init__(self, store: EventStore, load: Callable[[], Any] | None = None) -> None:
        self._store = store
        self._load = load  # -> an object with embed(texts) and name (the model id)
        self._lock = threading.Lock()
        self.embed: Embed | None = None
        self.model = ""
        # the last query's vector: a request ranks notes and recalls events for the same message
        self._last_query: tuple[str, Any] | None = None

    def ready(self) -> bool:
        """Load the embedder if that was not tried yet; False: keyword-only."""
        with self._lock:
            load, self._load = self._load, None
            if load is not None:
                try:
                    embedder = load()
                    self.embed, self.model = embedder.embed, embedder.name
                except Exception as exc:  # no model package: recall still works by keyword
                    log.warning("memory: no sentence embedder (%s); recall is keyword-only", exc)
            return self.embed is not None

    def similarities(self, kind: str, items: Sequence[tuple[int, str]], query: str) -> list[float] | None:
        """Cosine similarity to ``query`` of each ``(ref, text)``, in order (None: no embedder);
        only texts without a cached vector of ``kind`` are embedded."""
        if not items or not self.ready():
            return None
        import numpy as np  # here, not at module level: numpy costs a headless start ~60 ms

        embed = self.embed
        assert embed is not None
        cached = self._store.vectors(kind, [ref for ref, _ in items], self.model)
        missing = [(ref, text) for ref, text in items if ref not in cached]
        if missing:
            fresh = np.asarray(embed([text for _, text in missing]), dtype=np.float32)
            new = {ref: fresh[i].tobytes() for i, (ref, _) in enumerate(missing)}
            self._store.put_vectors(kind, self.model, new)
            cached.update(new)
        matrix = np.stack([np.frombuffer(cached[ref], dtype=np.float32) for ref, _ in items])
        return [float(x) for x in matrix @ self._query_vector(embed, query)]

    def _query_vector(self, embed: Embed, query: str) -> Any:
        last = self._last_query
        if last is not None and last[0] == query:
            return last[1]
        import numpy as np

        vector = np.asarray(embed([query]), dtype=np.float32)[0]
        self._last_query = (query, vector)  # one assignment: readers see the old pair or the new
        return vector


class Recall:
    """Cross-conversation search over one project's store."""

    def __init__(self, store: EventStore, scorer: Scorer) -> None:
        self._store = store
        self._scorer = scorer

    def search(self, query: str, *, exclude: str = "", limit: int = 5) -> list[RecallHit]:
        """The ``limit`` events that best answer ``query``, outside conversation ``exclude``."""
        if not isinstance(query, str) or not query.strip():
            raise ValueError("recall needs a query")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise ValueError(f"limit: a whole number from 1 to {MAX_LIMIT}, got {limit!r}")
        found = self._store.search(query, exclude=exclude, kinds=RECALLED_KINDS, skip_kind="subcall")
        keyword = {event.seq: score for event, score in found}
        candidates = {event.seq: event for event, _ in found}
        for event in self._store.recent(
            exclude=exclude, kinds=RECALLED_KINDS, skip_kind="subcall", limit=200
        ):
            candidates.setdefault(event.seq, event)
        events = [e for e in candidates.values() if e.content.strip()]
        texts = [(e.seq, e.content[:EMBEDDED_CHARS]) for e in events]
        meaning = self._scorer.similarities("event", texts, query)
        hits = []
        for index, event in enumerate(events):
            kw = keyword.get(event.seq, 0.0)
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


def _clip(text: str) -> str:
    return text if len(text) <= MAX_CONTENT_CHARS else text[: MAX_CONTENT_CHARS - 1] + "…"
