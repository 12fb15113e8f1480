"""The project index as the AI client's RAG engine (``ai.rag.RagEngine``): passages with their
source and lines, ``top_k`` of them, for one send."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from manual_slop.memory.service import MemoryService

__all__ = ["IndexEngine"]


@dataclass(frozen=True, slots=True)
class _Shown:
    text: str
    source: str


class IndexEngine:
    """``query(text, top_k)`` over a memory service's index; an empty index gives nothing.
    Passages of the ``skip`` files (already in the context in full) are left out."""

    def __init__(self, service: MemoryService, top_k: int, skip: Iterable[str] = ()) -> None:
        self._service = service
        self._top_k = top_k
        self._skip = {s.replace("\\", "/").removeprefix("./") for s in skip}

    def query(self, text: str, top_k: int = 5) -> list[_Shown]:
        wanted = min(top_k, self._top_k)
        from manual_slop.memory.index import MAX_TOP_K  # chromadb: loaded by now, never at start

        passages = self._service.index.query(text, top_k=min(MAX_TOP_K, wanted + len(self._skip)))
        kept = [p for p in passages if p.source not in self._skip][:wanted]
        return [_Shown(p.text, f"{p.source}:{p.start_line}-{p.end_line}") for p in kept]
