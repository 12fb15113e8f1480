"""The project's memory as one object: store, conversations, recall, notes, profile, index.

Opened per project (:meth:`MemoryService.open`) and closed when the project changes or the
app stops. :meth:`prompt_block` is the long-term and episodic part of a request's system
prompt: the profile, the notes the retrieval rules select, and, for a conversation's first
request, what recall finds in earlier conversations, each cut to its share of the budget.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from manual_slop.ai.transcript import CHARS_PER_TOKEN
from manual_slop.memory.conversations import StoredConversations
from manual_slop.memory.notes import Note, Notes
from manual_slop.memory.profile import LEARN_PROMPT, Profile, parse_learned
from manual_slop.memory.recall import MAX_LIMIT as RECALL_MAX_LIMIT
from manual_slop.memory.recall import Recall, Scorer
from manual_slop.memory.store import CACHE_DIR_NAME, EventStore, memory_file_for

if TYPE_CHECKING:
    from manual_slop.memory.embedder import Embedder
    from manual_slop.memory.index import ProjectIndex

__all__ = ["MemoryService", "MemorySettings", "index_dir_for"]

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
        self.scorer = Scorer(self.store, _load_embedder)  # recall's and the notes' embedder
        self.recall = Recall(self.store, self.scorer)
        self.refuse = refuse
        self._index: ProjectIndex | None = None
        self._lock = threading.Lock()
        self._last_learned = 0.0

    # -- the index (opened on first use) --------------------------------------------------------
    @property
    def index(self) -> ProjectIndex:
        """The project index, opened on first use."""
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
        since = time.time() - settings.window_minutes * 60.0
        ranked = self.rank_notes(message, self.notes.all(categories=settings.categories))
        return [note for score, note in ranked if note.ts >= since or score >= settings.relevance_threshold]

    def rank_notes(self, message: str, notes: Sequence[Note]) -> list[tuple[float, Note]]:
        """``notes`` with how relevant each is to ``message`` (0..1), most relevant first (ties
        keep their order): cosine similarity of embeddings, the notes' vectors cached in the
        store; without an embedder, the share of a note's words in the message."""
        items = [(n.id, n.content) for n in notes]
        scores = self.scorer.similarities("note", items, message) if message.strip() else [0.0] * len(notes)
        if scores is None:
            words = set(_words(message))
            scores = [_share(set(_words(n.content)), words) for n in notes]
        return sorted(zip(scores, notes, strict=True), key=lambda pair: -pair[0])

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
            passages = self.index.query(query, top_k=top_k)
            results = [
                {"kind": "file", **p.to_dict()} for p in passages if p.score >= SEARCH_MIN_PASSAGE_SCORE
            ]
        return results + self.search_memory(query, top_k=top_k, relevance_threshold=relevance_threshold)

    def search_memory(
        self, query: str, *, top_k: int = 5, relevance_threshold: float = 0.35
    ) -> list[dict[str, Any]]:
        """Recalled events of every stored conversation (kind ``conversation``, as the
        ``recall`` tool finds them), then the notes scoring at least ``relevance_threshold``
        (kind ``note``, as a request selects them)."""
        results: list[dict[str, Any]] = [
            {"kind": "conversation", "source": hit.conversation, "role": hit.role, "text": hit.content,
             "ts": hit.ts, "score": float(hit.score)}
            for hit in self.recall.search(query, limit=min(top_k, RECALL_MAX_LIMIT))
        ]  # fmt: skip
        results += [
            {"kind": "note", "source": note.category, "id": note.id, "text": note.content, "ts": note.ts,
             "score": float(score)}
            for score, note in self.rank_notes(query, self.notes.all())[:top_k]
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


def _load_embedder() -> Embedder:
    from manual_slop.memory.embedder import default_embedder  # chromadb: only when first needed

    return default_embedder()


def _cut(text: str, room: int) -> str:
    if room <= 0 or not text:
        return ""
    if len(text) <= room:
        return text
    cut = text[:room]
    return cut[: cut.rfind("\n")] if "\n" in cut else ""


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def _share(words: set[str], of: set[str]) -> float:
    """How many of ``words`` are in ``of``, as a fraction."""
    return len(words & of) / max(1, len(words))


def _words(text: str) -> list[str]:
    return [w for w in "".join(c.lower() if c.isalnum() else " " for c in text).split() if len(w) > 2]
