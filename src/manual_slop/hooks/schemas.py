"""JSON Schemas of every Hook API body, and the catalog of published event types.

One source of truth: the request schemas validate incoming bodies (:mod:`.routes`), and
all of them become ``components.schemas`` of the served OpenAPI 3.1 document
(:mod:`.openapi`), against which the tests validate every reply. Request schemas are
self-contained (no ``$ref``) so they can be checked without the whole document.
"""

from __future__ import annotations

from typing import Any

# the module itself, not through the package: the package's face imports the client and server
import manual_slop.hooks.agents_schemas as agents_schemas
import manual_slop.hooks.graph_schemas as graph_schemas
import manual_slop.hooks.mcp_schemas as mcp_schemas
import manual_slop.hooks.mcp_serve_schemas as mcp_serve_schemas
import manual_slop.hooks.memory_schemas as memory_schemas
import manual_slop.hooks.metrics_schemas as metrics_schemas
import manual_slop.hooks.plan_schemas as plan_schemas
import manual_slop.hooks.rules_schemas as rules_schemas
import manual_slop.hooks.runs_schemas as runs_schemas
import manual_slop.hooks.skills_schemas as skills_schemas
import manual_slop.hooks.usage_schemas as usage_schemas
from manual_slop.hooks.errors import ErrorCode
from manual_slop.hooks.schema_kit import ANY as _ANY
from manual_slop.hooks.schema_kit import NOT_BLANK, Schema
from manual_slop.hooks.schema_kit import NULLABLE_STR as _NULLABLE_STR
from manual_slop.hooks.schema_kit import OBJECT as _OBJECT
from manual_slop.hooks.schema_kit import STR as _STR
from manual_slop.hooks.schema_kit import obj as _obj

__all__ = [
    "DIALOG_PAYLOADS",
    "EVENT_TYPES",
    "GUI_ACTION_SCHEMAS",
    "REQUEST_SCHEMAS",
    "RESPONSE_SCHEMAS",
    "component_schemas",
    "json_type",
]

# =========================================================================================
# requests
# =========================================================================================
GUI_ACTION_SCHEMAS: dict[str, Schema] = {
    "set_value": _obj({"action": {"const": "set_value"}, "item": _STR, "value": _ANY}),
    "click": _obj({"action": {"const": "click"}, "item": _STR}, {"user_data": _ANY}),
    "select_list_item": _obj({"action": {"const": "select_list_item"}, "listbox": _STR, "item": _STR}),
    "select_tab": _obj({"action": {"const": "select_tab"}, "tab_bar": _STR, "tab": _STR}),
}

# a string with some text: the handlers strip() and refuse blanks, so the schema says it too
_NOT_BLANK: Schema = {
    "type": "string", "minLength": 1, "pattern": NOT_BLANK, "description": "not blank",
    "x-error": "must not be blank",
}  # fmt: skip

REQUEST_SCHEMAS: dict[str, Schema] = {
    "ResolvePending": _obj(
        {"approved": {"type": "boolean"}},
        {
            "payload": {
                "type": "object",
                "description": "edits of the dialog's editable keys (and 'reason'); others unchanged",
            },
            "abort": {"type": "boolean", "description": "reject and stop the whole track (mma_spawn)"},
        },
    ),
    "AskRequest": _obj(
        {"question": _STR},
        {
            "tool": _STR,
            "args": _OBJECT,
            "timeout_s": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 86400,
                "description": "how long to wait for a decision (default approval.timeout_s)",
            },
        },
    ),
    "SendRequest": _obj({"message": _NOT_BLANK}),
    "SessionEntryRequest": _obj({"role": _NOT_BLANK, "content": _STR}),
    **memory_schemas.REQUESTS,
    **agents_schemas.REQUESTS,
    **skills_schemas.REQUESTS,
    **plan_schemas.REQUESTS,
    **runs_schemas.REQUESTS,
    **rules_schemas.REQUESTS,
    **mcp_serve_schemas.REQUESTS,
    **mcp_schemas.REQUESTS,
}

# =========================================================================================
# responses
# =========================================================================================
_TICKET: Schema = _obj(
    {
        "id": _STR,
        "description": _STR,
        "status": _STR,
        "depends_on": {"type": "array", "items": _STR},
        "assigned_to": _NULLABLE_STR,
        "retry_count": {"type": "integer", "minimum": 0},
        "blocked_reason": _NULLABLE_STR,
        "model_override": _NULLABLE_STR,
    },
    closed=False,
)

DIALOG_PAYLOADS: dict[str, Schema] = {
    "confirm_script": _obj({"script": _STR, "base_dir": _STR}, closed=False),
    "tool_approval": _obj({"tool": _STR, "args": _OBJECT, "diff": _STR}, closed=False),
    "mma_step": _obj({"ticket_id": _STR, "payload": _STR}, closed=False),
    "mma_spawn": _obj({"ticket_id": _STR, "role": _STR, "prompt": _STR, "context_md": _STR}, closed=False),
    "ask": _obj({"question": _STR, "tool": _STR, "args": _OBJECT}, closed=False),
    "recovery": _obj(
        {
            "ticket_id": _STR,
            "track_id": _STR,
            "failure": _STR,
            "severity": _STR,
            "error": _STR,
            "tried": {"type": "array", "items": _STR},
            "choices": {"type": "array", "items": _STR},
            "choice": _STR,
            "description": _STR,
        },
        closed=False,
    ),
    "tool_result": _obj({"tool": _STR, "args": _OBJECT, "status": _STR, "result": _STR}, closed=False),
    "cost_check": _obj(
        {
            "track_id": _STR,
            "spent_usd": {"type": "number"},
            "since_usd": {"type": "number"},
            "threshold_usd": {"type": "number"},
            "message": _STR,
        },
        {"budget": _STR, "unknown_calls": {"type": "integer"}},
        closed=False,
    ),
}

_PENDING_DIALOG: Schema = {
    "oneOf": [
        _obj(
            {"id": _STR, "kind": {"const": kind}, "created": {"type": "number"}, "payload": payload},
            {
                "rule": {"type": "string", "description": "the approval rule that asked"},
                "on_timeout": {
                    "enum": ["reject", "approve", "keep_waiting", "escalate"],
                    "description": "what happens when nobody decides in time",
                },
                "escalated": {"type": "boolean", "description": "waited past its timeout and was escalated"},
            },
        )
        for kind, payload in DIALOG_PAYLOADS.items()
    ]
}

_LOG_ENTRY: Schema = {
    "type": "object",
    "properties": {"seq": {"type": "integer", "minimum": 1}, "local_ts": {"type": "number"}},
    "required": ["seq"],
}

RESPONSE_SCHEMAS: dict[str, Schema] = {
    "Error": _obj(
        {
            "error": _obj(
                {
                    "code": {"enum": [str(code) for code in ErrorCode]},
                    "message": _STR,
                }
            )
        }
    ),
    "Status": _obj(
        {
            "status": {"const": "ok"},
            "ready": {"type": "boolean", "description": "false while the app is still being built"},
            "mode": {"enum": ["gui", "headless"]},
            "version": _STR,
            "pid": {"type": "integer"},
            "uptime_s": {"type": "number", "minimum": 0},
        }
    ),
    "Health": _obj(
        {
            "healthy": {"type": "boolean"},
            "degraded_reason": _NULLABLE_STR,
            "frames": {"type": "integer", "minimum": 0},
            "last_frame_age_ms": {"type": "number", "description": "-1 before the first frame"},
        }
    ),
    "GuiState": _obj({"fields": {"type": "object", "description": "every gettable field by name"}}),
    "FieldValue": _obj({"field": _STR, "value": _ANY}),
    "Queued": _obj({"queued": {"const": True}, "task_id": _STR}),
    "TaskStatus": _obj({"state": {"enum": ["queued", "done", "error"]}, "error": _NULLABLE_STR}),
    "Events": _obj(
        {
            "events": {
                "type": "array",
                "items": _obj(
                    {
                        "seq": {"type": "integer", "minimum": 1},
                        "ts": {"type": "number"},
                        "type": _STR,
                        "payload": _OBJECT,
                    }
                ),
            },
            "next": {
                "type": "integer",
                "minimum": 0,
                "description": "pass as ?since= to get the following events",
            },
            "dropped": {
                "type": "integer",
                "minimum": 0,
                "description": "events after since that the buffer lost",
            },
        }
    ),
    "PendingList": _obj({"pending": {"type": "array", "items": _PENDING_DIALOG}}),
    "Resolved": _obj({"resolved": {"const": True}}),
    "AskAnswer": _obj(
        {
            "approved": {"type": "boolean"},
            "answer": _NULLABLE_STR,
            "args": {"type": "object", "description": "the tool arguments as approved (possibly edited)"},
            "id": {"type": "string", "description": "the ask dialog's id"},
            "reason": {
                "type": ["string", "null"],
                "description": "why it was rejected, when a reason was given",
            },
        }
    ),
    "RequestId": _obj({"request_id": _STR}),
    "RequestStatus": _obj(
        {
            "state": {"enum": ["queued", "running", "cancelling", "done", "error", "cancelled"]},
            "response": _NULLABLE_STR,
            "error": _NULLABLE_STR,
            "provider": _NULLABLE_STR,
            "model": _NULLABLE_STR,
            "fallback": _NULLABLE_STR,
            "context": {
                "type": ["object", "null"],
                "description": "how the context was fitted to the answering model's window: window, "
                "available, tokens, exact, degraded [{path, mode, effective_mode}], dropped [{path, reason}]",
            },
        }
    ),
    "CancelledRequest": _obj({"request_id": _STR, "state": {"enum": ["cancelling", "cancelled"]}}),
    "LogPage": _obj(
        {
            "entries": {"type": "array", "items": _LOG_ENTRY},
            "next": {
                "type": "integer",
                "minimum": 0,
                "description": "seq of the last entry returned (or since)",
            },
            "dropped": {
                "type": "integer",
                "minimum": 0,
                "description": "entries after since that the view no longer holds (its byte budget)",
            },
        }
    ),
    "Session": _obj(
        {
            "discussion": _STR,
            "entries": {"type": "array", "items": _obj({"role": _STR, "content": _STR, "ts": _STR})},
        }
    ),
    "EntryQueued": _obj({"queued": {"const": True}}),
    "MmaStatus": _obj(
        {
            "status": _STR,
            "active_tier": _NULLABLE_STR,
            "progress": _STR,
            "active_track": {"type": ["object", "null"]},
            "proposed_tracks": {"type": "array", "items": _OBJECT},
            "tickets": {"type": "array", "items": _TICKET},
            "tier_usage": _OBJECT,
        }
    ),
    "Diagnostics": {
        "type": "object",
        "properties": {"metrics": metrics_schemas.METRICS},
        "additionalProperties": {"type": "number"},
        "required": [
            "fps",
            "fps_avg",
            "last_frame_time_ms",
            "frame_time_ms_avg",
            "cpu_percent",
            "input_lag_ms",
            "metrics",
        ],
    },
    "OpenApiDocument": _obj({"openapi": _STR, "info": _OBJECT, "paths": _OBJECT}, closed=False),
    "ShuttingDown": _obj({"shutting_down": {"const": True}}),
    **memory_schemas.RESPONSES,
    **agents_schemas.RESPONSES,
    **skills_schemas.RESPONSES,
    **plan_schemas.RESPONSES,
    **graph_schemas.RESPONSES,
    **runs_schemas.RESPONSES,
    **rules_schemas.RESPONSES,
    **mcp_serve_schemas.RESPONSES,
    **mcp_schemas.RESPONSES,
    **usage_schemas.RESPONSES,
}

# =========================================================================================
# events (GET /api/events)
# =========================================================================================
EVENT_TYPES: dict[str, str] = {
    "ai_status": "the status line changed: {status}",
    "response": "a request finished: {request_id, text, status}",
    "ai_stream_chunk": "a chunk of the running request's answer arrived: {request_id, seq, text}",
    "models": "the active provider's model list was fetched: {provider, models}",
    "profile_learned": "the passive profile learned lines from an exchange: {lines}",
    "rag_index": "an index job ended: {job_id, state, files, chunks, done, total, error, cancelled}",
    "comms": "a comms entry was recorded (the entry, with seq and local_ts)",
    "tool_call": "a tool call was recorded (the entry, with seq and local_ts)",
    "pending_added": "a dialog waits for a decision: {id, kind, created, payload}",
    "pending_resolved": "a pending dialog was decided: {id, kind, approved, abort, decider}",
    "pending_escalated": "a dialog waited past its rule's timeout and was escalated: the dialog, and "
    "{message}",
    "mma_state": "the MMA view state changed: {status?, active_tier?, tier_usage?, tickets?, track?}",
    "project_opened": "another project file was opened: {project_file}",
    "ticket_status": (
        "a ticket changed: {track_id, ticket_id, status, retry_count, blocked_reason, assigned_to}"
    ),
    "track_proposal": "Tier 1 proposed tracks: {tracks}",
    "plan_status": "a plan changed: {plan_id, status, counts}",
    "recovery_step": (
        "the recovery orchestrator chose what follows a failed ticket attempt: "
        "{track_id, ticket_id, strategy, failure, severity, base_severity, backoff_s, tried}"
    ),
    "error": "something failed: {message, task_id?, action?}",
    "notification": "a warning or info message for the user: {level, message}",
    "context_compiled": "an aggregation finished: {purpose, tokens, files_tokens, omitted, elapsed_ms}",
    "md_written": "MD Only wrote a file: {path}",
    "context_edit": "an undoable discussion or context edit was made, undone or redone: {label, op}",
    "commit_stamped": "Update Commit recorded the git HEAD: {discussion, commit}",
    "discussion_compressed": "entries were replaced by a summary: {discussion, entries}",
}


def component_schemas() -> dict[str, Schema]:
    """Every schema of the API, as ``components.schemas`` of the OpenAPI document."""
    gui = {f"Gui_{name}": schema for name, schema in GUI_ACTION_SCHEMAS.items()}
    gui["GuiAction"] = {
        "oneOf": [{"$ref": f"#/components/schemas/Gui_{name}"} for name in GUI_ACTION_SCHEMAS],
        "discriminator": {
            "propertyName": "action",
            "mapping": {name: f"#/components/schemas/Gui_{name}" for name in GUI_ACTION_SCHEMAS},
        },
    }
    return {**RESPONSE_SCHEMAS, **REQUEST_SCHEMAS, **gui}


def json_type(value: Any) -> str:
    """How error messages name the type of a decoded JSON value (``an array``, ``null``, ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, dict) else type(value).__name__
