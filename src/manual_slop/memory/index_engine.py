"""The project index as the AI client's RAG engine (``ai.rag.RagEngine``): passages with their
source and lines, ``top_k`` of them, for one send."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["IndexEngine"]


@dataclass(frozen=True, slots=True)
class _Shown:
    text: str
    source: str


class IndexEngine:
    """``query(text, top_k)`` over a memory service's index; an empty index gives nothing."""

    def __init__(self, service: Any, top_k: int) -> None:
        self._service = service
        self._top_k = top_k

    def query(self, text: str, top_k: int = 5) -> list[_Shown]:
        passages = self._service.index.query(text, top_k=min(top_k, self._top_k))
        return [_Shown(p.text, f"{p.source}:{p.start_line}-{p.end_line}") for p in passages]
