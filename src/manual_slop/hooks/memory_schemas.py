"""JSON Schemas of the memory endpoints' bodies (:mod:`.memory_api`); part of
``hooks.schemas`` and so of the served OpenAPI document."""

from __future__ import annotations

from typing import Any

from manual_slop.hooks.schema_kit import INT as _INT
from manual_slop.hooks.schema_kit import NOT_BLANK, SPACE
from manual_slop.hooks.schema_kit import NUM as _NUM
from manual_slop.hooks.schema_kit import STR as _STR
from manual_slop.hooks.schema_kit import obj as _obj
from manual_slop.memory.notes import MAX_CATEGORY_CHARS, MAX_NOTE_CHARS
from manual_slop.memory.profile import MAX_LINE_CHARS, MAX_LINES

__all__ = ["REQUESTS", "RESPONSES"]

_NOTE = _obj(
    {"id": _INT, "content": _STR, "category": _STR, "agent": _STR, "conversation": _STR, "ts": _NUM,
     "updated": _NUM}
)  # fmt: skip
_PROFILE_LINE = _obj({"id": _INT, "content": _STR, "source": {"enum": ["learned", "user"]}, "ts": _NUM})

REQUESTS: dict[str, Any] = {
    "RagIndexRequest": _obj(
        {}, {"paths": {"type": "array", "items": {"type": "string", "minLength": 1}, "maxItems": 100_000}}
    ),
    "RagQueryRequest": _obj(
        {"query": {"type": "string", "minLength": 1, "maxLength": 10_000}},
        {"top_k": {"type": "integer", "minimum": 1, "maximum": 100}},
    ),
    "RecallRequest": _obj(
        {"query": {"type": "string", "minLength": 1, "maxLength": 10_000}},
        {"limit": {"type": "integer", "minimum": 1, "maximum": 50}},
    ),
    "NoteRequest": _obj(
        {
            "content": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_NOTE_CHARS,
                "pattern": NOT_BLANK,
                "x-error": "a note needs some text",
            }
        },
        {
            "category": {
                "type": "string",
                "maxLength": MAX_CATEGORY_CHARS,
                # as memory.notes.check_category: blank is "general", else letters, digits, " _-."
                "pattern": f"^{SPACE}*([A-Za-z0-9][A-Za-z0-9_.\\- ]*)?{SPACE}*$",
                "x-error": "a category is letters, digits, space, '_', '-' or '.' (blank: general)",
            }
        },
    ),
    "ProfileRequest": _obj(
        {
            "lines": {
                "type": "array",
                "items": {
                    "type": "string",
                    "maxLength": MAX_LINE_CHARS,
                    "pattern": NOT_BLANK,
                    "x-error": "a profile line needs some text",
                },
                "maxItems": MAX_LINES,
            }
        },
        {"enabled": {"type": "boolean"}},
    ),
}

RESPONSES: dict[str, Any] = {
    "RagJob": _obj({"job_id": _STR}),
    "RagStatus": _obj(
        {
            "state": {"enum": ["idle", "indexing", "error"]},
            "files": _INT,
            "chunks": _INT,
            "done": _INT,
            "total": _INT,
            "error": {"type": ["string", "null"]},
        },
        {"job_id": {"type": ["string", "null"]}, "cancelled": {"type": "boolean"}},
    ),
    "RagCancelled": _obj({"cancelled": {"type": "boolean"}}),
    "RagResults": _obj(
        {
            "results": {
                "type": "array",
                "items": _obj(
                    {"source": _STR, "start_line": _INT, "end_line": _INT, "text": _STR, "score": _NUM}
                ),
            }
        }
    ),
    "RecallResults": _obj(
        {
            "results": {
                "type": "array",
                "items": _obj(
                    {"conversation": _STR, "role": _STR, "content": _STR, "ts": _NUM, "score": _NUM}
                ),
            }
        }
    ),
    "Notes": _obj({"notes": {"type": "array", "items": _NOTE}}),
    "NoteCreated": _obj({"note": _NOTE}),
    "NoteDeleted": _obj({"deleted": _INT}),
    "ProfileLines": _obj(
        {"enabled": {"type": "boolean"}, "lines": {"type": "array", "items": _PROFILE_LINE}}
    ),
}
