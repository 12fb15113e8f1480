"""The memory tools: ``recall``, ``record_note`` and ``recall_notes`` (``manual_slop.memory``).

They reach the project's memory through ``ExecutionContext.memory`` (None when the app has no
store: the tools then say so) and know the conversation they run in from
``ExecutionContext.conversation``, which ``recall`` never searches.
"""

from __future__ import annotations

import time
from typing import Any

from manual_slop.memory.notes import MAX_CATEGORY_CHARS, MAX_NOTE_CHARS
from manual_slop.tools.errors import ToolInputError, ToolUnavailable
from manual_slop.tools.tool import Tool, ToolRun

__all__ = ["memory_tools"]


def _memory(run: ToolRun) -> Any:
    memory = run.ctx.memory
    if memory is None:
        raise ToolUnavailable("memory is not available here (no project memory store is open)")
    return memory


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def recall(args: dict[str, Any], run: ToolRun) -> str:
    memory = _memory(run)
    try:
        hits = memory.recall.search(args["query"], exclude=run.ctx.conversation, limit=args.get("limit", 5))
    except ValueError as exc:
        raise ToolInputError(str(exc)) from exc
    if not hits:
        return f"Nothing in earlier conversations matches {args['query']!r}."
    lines = [f"{len(hits)} result(s) from earlier conversations (best first):"]
    for hit in hits:
        lines.append(
            f"- [{hit.conversation}, {_when(hit.ts)}, {hit.role}, score {hit.score:.2f}] {hit.content}"
        )
    return "\n".join(lines)


def record_note(args: dict[str, Any], run: ToolRun) -> str:
    memory = _memory(run)
    try:
        note = memory.notes.add(
            args["content"],
            args.get("category") or "general",
            agent="model",
            conversation=run.ctx.conversation,
        )
    except ValueError as exc:
        raise ToolInputError(str(exc)) from exc
    return f"Recorded note {note.id} in category {note.category!r}."


def recall_notes(args: dict[str, Any], run: ToolRun) -> str:
    memory = _memory(run)
    try:
        notes = memory.notes.all(category=args.get("category") or None)
    except ValueError as exc:
        raise ToolInputError(str(exc)) from exc
    query = str(args.get("query") or "").strip()
    if query and notes:
        ranked = memory.rank_notes(query, notes)
        notes = [note for score, note in ranked if score > 0] or [note for _, note in ranked[:5]]
    if not notes:
        return "No notes recorded" + (
            f" in category {args.get('category')!r}." if args.get("category") else "."
        )
    lines = [f"{len(notes)} note(s):"]
    lines.extend(f"- #{n.id} [{n.category}, {_when(n.ts)}] {n.content}" for n in notes[:50])
    return "\n".join(lines)


def memory_tools() -> list[Tool]:
    return [
        Tool(
            "recall",
            "Search earlier conversations of this project (not the current one) by keywords and meaning; "
            "results name the conversation, date and who said it.",
            {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 1, "maxLength": 2000},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 5},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
            recall,
        ),
        Tool(
            "record_note",
            "Record a durable note for this project (a decision, a convention, a fact worth keeping) "
            "under a category; notes come back in later conversations.",
            {
                "type": "object",
                "properties": {
                    "content": {"type": "string", "minLength": 1, "maxLength": MAX_NOTE_CHARS},
                    "category": {"type": "string", "maxLength": MAX_CATEGORY_CHARS, "default": "general"},
                },
                "required": ["content"],
                "additionalProperties": False,
            },
            record_note,
        ),
        Tool(
            "recall_notes",
            "List this project's notes, optionally of one category, best matches of a query first.",
            {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "maxLength": 2000},
                    "category": {"type": "string", "maxLength": MAX_CATEGORY_CHARS},
                },
                "additionalProperties": False,
            },
            recall_notes,
        ),
    ]
