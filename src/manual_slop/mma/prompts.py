"""The instructions each tier is given, and the markers its answers may start with.

Kept in one module so the contract between the engine and the models (JSON
shapes, ``BLOCKED:`` / ``FAILED:`` markers, diff format) is read in one place.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from manual_slop.mma.models import Ticket, Track

__all__ = [
    "BLOCKED_MARKER",
    "FAILED_MARKER",
    "tier1_epic_prompt",
    "tier2_replan_prompt",
    "tier2_track_prompt",
    "tier3_worker_prompt",
    "tier4_patch_prompt",
    "tier4_qa_prompt",
]

BLOCKED_MARKER = "BLOCKED:"  # a worker cannot go on; the rest of the line is the reason
FAILED_MARKER = "FAILED:"  # a worker's verification failed; the rest is the failure output

_TRACKS_SHAPE = '{"tracks": [{"title": str, "description": str, "priority": "high" | "medium" | "low"}]}'
_TICKETS_SHAPE = (
    '{"tickets": [{"id": str, "description": str, "depends_on": [str], "priority"?: "high" | "medium" | '
    '"low", "target_files"?: [str], "model_override"?: str, "critical"?: bool}]}'
)


def tier1_epic_prompt(epic: str) -> str:
    return (
        "You are Tier 1, the orchestrator of a software project. Split the epic below into a few "
        "independent tracks (deliverables that can be planned and reviewed separately; usually 1-5).\n"
        f"Answer with only one JSON object of this shape: {_TRACKS_SHAPE}\n\n"
        f"Epic:\n{epic.strip()}\n"
    )


def tier2_track_prompt(track: Track) -> str:
    return (
        "You are Tier 2, the tech lead. Break the track below into tickets for stateless workers. "
        "Each ticket is one coherent change a worker can make and verify alone (avoid nano-tasks; "
        "usually 3-20 tickets). Ticket ids are short and unique (letters, digits, '_', '-', '.'); "
        "depends_on lists only ids of this answer; there must be no cycles. target_files are paths "
        "relative to the project root that the worker should see in full. Mark a ticket critical when "
        "the rest of the track cannot succeed without it.\n"
        f"Answer with only one JSON object of this shape: {_TICKETS_SHAPE}\n\n"
        f"Track: {track.title}\nPriority: {track.priority}\n\n{track.description.strip()}\n"
    )


def tier2_replan_prompt(track: Track, failed: Ticket, error: str, remaining: Sequence[Ticket]) -> str:
    done = [t for t in track.tickets if t.status == "completed"]
    running = [t for t in track.tickets if t.status == "in_progress"]
    left = [{"id": t.id, "description": t.description, "depends_on": t.depends_on} for t in remaining]
    return (
        "You are Tier 2, the tech lead. A ticket of the track below failed; replan the work that is "
        "left. Replace the remaining tickets with a new list that reaches the track's goal another way. "
        "New tickets may depend on completed or running tickets (by id) and on each other; do not reuse "
        "the id of a completed or running ticket; no cycles.\n"
        f"Answer with only one JSON object of this shape: {_TICKETS_SHAPE}\n\n"
        f"Track: {track.title}\n\n{track.description.strip()}\n\n"
        f"Completed: {json.dumps([{'id': t.id, 'description': t.description} for t in done])}\n"
        f"Running: {json.dumps([{'id': t.id, 'description': t.description} for t in running])}\n"
        f"Failed ticket {failed.id}: {failed.description}\nError:\n{error.strip()}\n\n"
        f"Remaining tickets to replace: "
        f"{json.dumps(left)}\n"
    )


def tier3_worker_prompt(ticket: Ticket, track: Track | None = None, notes: Sequence[str] = ()) -> str:
    lines = [
        "You are a Tier 3 worker. Do exactly the ticket below with the tools you have, then answer with a "
        "short summary of what you changed.",
        f"If you cannot proceed, answer with a line starting '{BLOCKED_MARKER}' and the reason.",
        f"If your verification (e.g. the tests) fails, answer with a line starting '{FAILED_MARKER}' "
        "followed by the failure output.",
        "",
    ]
    if track is not None:
        lines.append(f"Track: {track.title}")
    lines.append(f"Ticket {ticket.id}: {ticket.description}")
    if ticket.target_files:
        lines.append("Target files: " + ", ".join(ticket.target_files))
    lines.extend(notes)
    return "\n".join(lines) + "\n"


def tier4_qa_prompt(error_text: str) -> str:
    return (
        "You are Tier 4, QA. Summarize the failure below for the worker's next attempt in at most five "
        "lines: the root cause, where it is, and what to change. No preamble.\n\n"
        f"Failure:\n{error_text.strip()}\n"
    )


def tier4_patch_prompt(error: str) -> str:
    return (
        "You are Tier 4, QA. Write a patch that fixes the failure below, as one unified diff with "
        "'--- a/PATH' and '+++ b/PATH' headers and paths relative to the project root. Answer with only "
        "the diff (a ```diff fence is fine).\n\n"
        f"Failure:\n{error.strip()}\n"
    )
