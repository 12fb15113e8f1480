"""The RAG hook: retrieved passages added to the context of one send.

The retrieval engine belongs to the caller (the controller or an MMA worker); the client
only asks it for the :data:`TOP_K` passages closest to the user's message and appends them
to ``md_content`` under a ``## Retrieved context`` heading. Any object with
``query(text, top_k=...)`` returning strings, or mappings/objects with ``text`` (or
``content``/``document``) and optionally ``source``, will do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

__all__ = ["TOP_K", "RagEngine", "append_retrieved", "inject_rag_context", "retrieve"]

TOP_K = 5


class RagEngine(Protocol):
    def query(self, text: str, top_k: int = TOP_K) -> list[Any]: ...


def inject_rag_context(
    md_content: str,
    user_message: str,
    engine: RagEngine,
    log: Callable[[str, str, dict[str, Any]], Any] | None = None,
) -> str:
    """``md_content`` with the engine's top results for ``user_message`` appended."""
    return append_retrieved(md_content, retrieve(user_message, engine, log))


def retrieve(
    user_message: str, engine: RagEngine, log: Callable[[str, str, dict[str, Any]], Any] | None = None
) -> str:
    """The ``## Retrieved context`` section for ``user_message`` (``''`` when nothing was found
    or the engine failed: retrieval is an aid, a failing index must not block the request)."""
    try:
        results = list(engine.query(user_message, top_k=TOP_K))[:TOP_K]
    except Exception as exc:
        if log is not None:
            log("IN", "rag_error", {"error": f"{type(exc).__name__}: {exc}"})
        return ""
    sections = []
    for n, result in enumerate(results, 1):
        text, source = _text_and_source(result)
        if text.strip():
            head = f"### [{n}] {source}" if source else f"### [{n}]"
            sections.append(f"{head}\n{text.strip()}")
    if log is not None:
        log("OUT", "rag", {"results": len(sections)})
    return "## Retrieved context\n\n" + "\n\n".join(sections) if sections else ""


def append_retrieved(md_content: str, block: str) -> str:
    """``md_content`` with a :func:`retrieve` section after it (unchanged when ``block`` is empty)."""
    if not block:
        return md_content
    return f"{md_content.rstrip()}\n\n{block}\n" if md_content.strip() else block + "\n"


def _text_and_source(result: Any) -> tuple[str, str]:
    if isinstance(result, str):
        return result, ""
    if isinstance(result, Mapping):
        text = result.get("text") or result.get("content") or result.get("document") or ""
        source = result.get("source") or (result.get("metadata") or {}).get("source", "")
        return str(text), str(source or "")
    text = getattr(result, "text", None) or getattr(result, "content", None) or str(result)
    return str(text), str(getattr(result, "source", "") or "")
