"""The project's memory as one object: store, conversations, recall, notes, profile, index.

Opened per project (:meth:`MemoryService.open`) and closed when the project changes or the
app stops. :meth:`prompt_block` is the long-term and episodic part of a request's system
prompt: the profile, the notes the retrieval rules select, and, for a conversation's first
request, what recall finds in earlier conversations, each cut to its share of the budget.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from manual_slop.memory.conversations import StoredConversations
from manual_slop.memory.notes import Note, Notes
from manual_slop.memory.profile import LEARN_PROMPT, Profile, parse_learned
from manual_slop.memory.recall import MAX_LIMIT as RECALL_MAX_LIMIT
from manual_slop.memory.recall import Recall, Scorer
from manual_slop.memory.store import CACHE_DIR_NAME, EventStore, memory_file_for

__all__ = ["MemoryService", "MemorySettings", "index_dir_for"]

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4
# the panel's search hides passages this far from the query (a close match scores 0.5-0.8)
SEARCH_MIN_PASSAGE_SCORE = 0.15


def index_dir_for(project_file: Path) -> Path:
    return project_file.parent / CACHE_DIR_NAME / f"{project_file.stem}_index"


@dataclass(frozen=True, slots=True)
class MemorySettings:
    """The project's ``[memory]`` and ``[rag]`` settings, as one request uses them."""

    history_window: int = 1
    budget_tokens: int = 0
    split: tuple[float, float, float] = (0.5, 0.3, 0.2)
    window_minutes: float = 30.0
    relevance_threshold: float = 0.35
    profile: bool = True
    learn_profile: bool = False
    profile_interval_s: float = 600.0
    rag_enabled: bool = False
    rag_top_k: int = 5
    categories: tuple[str, ...] = field(default=())  # the agent's note categories (all when empty)


class MemoryService:
    """One project's memory; safe to use from any thread."""

    def __init__(
        self,
        project_file: Path,
        *,
        refuse: Callable[[str], str | None] | None = None,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self.project_file = project_file
        self.store = EventStore(memory_file_for(project_file), redact=redact)
        self.conversations = StoredConversations(self.store)
        self.notes = Notes(self.store)
        self.profile = Profile(self.store)
        self.scorer = Scorer(None)
        self.recall = Recall(self.store, self.scorer)
        self.refuse = refuse
        self._embedder_tried = False
        self._index: Any = None
        self._lock = threading.Lock()
        self._last_learned = 0.0

    # -- the embedder and the index (loaded on first use) -----------------------------------
    def ensure_embedder(self) -> bool:
        """Load the offline embedder for recall and note relevance (False: keyword-only)."""
        with self._lock:
            if not self._embedder_tried:
                self._embedder_tried = True
                try:
                    from manual_slop.memory.embedder import default_embedder

                    embedder = default_embedder()
                    self.scorer.embed = embedder.embed
                    self.scorer.model = getattr(embedder, "name", "minilm")
                except Exception as exc:  # no model package: recall still works by keyword
                    log.warning("memory: no sentence embedder (%s); recall is keyword-only", exc)
            return self.scorer.embed is not None

    @property
    def index(self) -> Any:
        """The project index (``memory.index.ProjectIndex``), opened on first use."""
        with self._lock:
            if self._index is None:
                from manual_slop.memory.index import ProjectIndex

                self._index = ProjectIndex(
                    index_dir_for(self.project_file), refuse=self.refuse, redact=self.store.redact
                )
            return self._index

    def close(self) -> None:
        with self._lock:
            if self._index is not None:
                self._index.close()
                self._index = None
        self.store.close()

    # -- what a request carries -----------------------------------------------------------------
    def prompt_block(
        self,
        *,
        conversation: str,
        message: str,
        settings: MemorySettings,
        long_term_tokens: int,
        episodic_tokens: int,
        first_request: bool,
    ) -> str:
        """The memory part of the system prompt (empty when there is nothing to say)."""
        sections: list[str] = []
        room = max(0, long_term_tokens) * CHARS_PER_TOKEN
        if settings.profile:
            lines = [f"- {line.content}" for line in self.profile.lines()]
            text = _cut("\n".join(lines), room)
            if text:
                sections.append(
                    "### The user's profile (preferences they showed or wrote; they edit it)\n" + text
                )
                room -= len(text)
        notes = self.select_notes(message, settings)
        text = _cut("\n".join(f"- [{n.category}, {_when(n.ts)}] {n.content}" for n in notes), room)
        if text:
            sections.append("### Notes recorded in this project\n" + text)
        if first_request and message.strip() and episodic_tokens > 0:
            self.ensure_embedder()
            hits = [
                h
                for h in self.recall.search(message, exclude=conversation, limit=5)
                if h.score >= settings.relevance_threshold
            ]
            recalled = "\n".join(f"- ({h.role}, {h.conversation}, {_when(h.ts)}) {h.content}" for h in hits)
            text = _cut(recalled, episodic_tokens * CHARS_PER_TOKEN)
            if text:
                sections.append("### From earlier conversations (recalled; may be out of date)\n" + text)
        if not sections:
            return ""
        return "## Memory\n\n" + "\n\n".join(sections)

    def select_notes(self, message: str, settings: MemorySettings) -> list[Note]:
        """The notes a request loads by itself: the agent's categories, and written within the
        recency window or relevant to ``message`` (score ≥ the threshold); relevant ones first."""
        notes = self.notes.all(categories=settings.categories)
        if not notes:
            return []
        since = time.time() - settings.window_minutes * 60.0
        scores = self.note_relevance(message, notes)
        chosen = [
            (score, note)
            for score, note in zip(scores, notes, strict=True)
            if note.ts >= since or score >= settings.relevance_threshold
        ]
        chosen.sort(key=lambda pair: (-pair[0], -pair[1].ts))
        return [note for _, note in chosen]

    def note_relevance(self, message: str, notes: Sequence[Note]) -> list[float]:
        """How relevant each note is to ``message`` (0..1): cosine similarity of embeddings, the
        notes' vectors cached in the store; the share of a note's words in the message without
        an embedder."""
        if not message.strip():
            return [0.0] * len(notes)
        if self.ensure_embedder():
            model = self.scorer.model
            cached = self.store.vectors("note", [n.id for n in notes], model)
            missing = [n for n in notes if n.id not in cached]
            if missing:
                fresh = np.asarray(self.scorer.embed([n.content for n in missing]), dtype=np.float32)
                new = {n.id: fresh[i].tobytes() for i, n in enumerate(missing)}
                self.store.put_vectors("note", model, new)
                cached.update(new)
            query = np.asarray(self.scorer.embed([message]), dtype=np.float32)[0]
            return [float(np.frombuffer(cached[n.id], dtype=np.float32) @ query) for n in notes]
        words = set(_words(message))
        return [len(words & set(_words(n.content))) / max(1, len(set(_words(n.content)))) for n in notes]

    # -- search (the Memory panel, ``sloppy search``) -----------------------------------------------
    def search(
        self, query: str, *, top_k: int = 5, relevance_threshold: float = 0.35
    ) -> list[dict[str, Any]]:
        """Index passages for ``query`` (kind ``file``, those scoring under
        :data:`SEARCH_MIN_PASSAGE_SCORE` left out), then :meth:`search_memory`'s results; each
        a dict with ``kind``, ``source``, ``text`` and ``score``, best first within its kind."""
        if not query.strip():
            raise ValueError("type something to search for")
        results: list[dict[str, Any]] = []
        if int(self.index.status().get("chunks", 0)):
            for p in self.index.query(query, top_k=top_k):
                if p.score >= SEARCH_MIN_PASSAGE_SCORE:
                    results.append(
                        {"kind": "file", "source": p.source, "start_line": p.start_line,
                         "end_line": p.end_line, "text": p.text, "score": float(p.score)}
                    )  # fmt: skip
        return results + self.search_memory(query, top_k=top_k, relevance_threshold=relevance_threshold)

    def search_memory(
        self, query: str, *, top_k: int = 5, relevance_threshold: float = 0.35
    ) -> list[dict[str, Any]]:
        """Recalled events of every stored conversation (kind ``conversation``, as the
        ``recall`` tool finds them), then the notes scoring at least ``relevance_threshold``
        (kind ``note``, as a request selects them)."""
        self.ensure_embedder()
        results: list[dict[str, Any]] = [
            {"kind": "conversation", "source": hit.conversation, "role": hit.role, "text": hit.content,
             "ts": hit.ts, "score": float(hit.score)}
            for hit in self.recall.search(query, limit=min(top_k, RECALL_MAX_LIMIT))
        ]  # fmt: skip
        notes = self.notes.all()
        scored = sorted(zip(self.note_relevance(query, notes), notes, strict=True), key=lambda p: -p[0])
        results += [
            {"kind": "note", "source": note.category, "id": note.id, "text": note.content, "ts": note.ts,
             "score": float(score)}
            for score, note in scored[:top_k]
            if score >= relevance_threshold
        ]  # fmt: skip
        return results

    # -- the passive profile ------------------------------------------------------------------------
    def learn_profile(
        self,
        exchange: str,
        ask: Callable[[str, str], str],
        settings: MemorySettings,
        now: float | None = None,
    ) -> list[str]:
        """After a completed exchange: a sub-call proposes new profile lines (rate-limited);
        returns the lines added."""
        now = time.monotonic() if now is None else now
        if not (settings.profile and settings.learn_profile) or not exchange.strip():
            return []
        with self._lock:
            if self._last_learned and now - self._last_learned < settings.profile_interval_s:
                return []
            self._last_learned = now
        current = "\n".join(f"- {line.content}" for line in self.profile.lines()) or "(empty)"
        answer = ask(LEARN_PROMPT, f"Current profile:\n{current}\n\nExchange:\n{exchange[:8_000]}")
        added = []
        for line in parse_learned(answer):
            if self.profile.add(line, "learned") is not None:
                added.append(line)
        return added


def _cut(text: str, room: int) -> str:
    if room <= 0 or not text:
        return ""
    if len(text) <= room:
        return text
    cut = text[:room]
    return cut[: cut.rfind("\n")] if "\n" in cut else ""


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def _words(text: str) -> list[str]:
    return [w for w in "".join(c.lower() if c.isalnum() else " " for c in text).split() if len(w) > 2]
