"""A track's ticket DAG as a Mermaid ``flowchart``: one node per ticket, one edge per dependency,
nodes coloured by status.

The text is safe to render whatever the tickets say. Ticket ids may hold ``.``, ``:`` and ``-``
(which Mermaid reads as edge and class syntax) or be words Mermaid reserves (``end``,
``graph``), so nodes get generated ids (``t1``, ``t2``, … in ticket order) and the real id is
in the label. Labels are always double-quoted, on one line, and every character that could end
the quote or the statement, start an entity or be taken as HTML or Markdown is written as a
Mermaid entity code (``#34;`` for ``"``); everything else, non-ASCII included, stays as it is.

:func:`track_to_mermaid` is pure; :class:`~manual_slop.mma.persistence.TrackStore` writes its
text to ``plan.mmd`` beside ``plan.md``, and ``GET /api/mma/graph?format=mermaid`` serves it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from manual_slop.mma.models import TicketStatus, Track

__all__ = ["STATUS_STYLES", "TITLE_CHARS", "mermaid_label", "track_graph", "track_to_mermaid"]

TITLE_CHARS = 48  # of a ticket's first description line shown in its node

# One class per ticket status (the GUI's status hues: grey, blue, green, amber, red).
STATUS_STYLES: dict[TicketStatus, str] = {
    TicketStatus.TODO: "fill:#f2f2f2,stroke:#8c8c8c,color:#1a1a1a",
    TicketStatus.IN_PROGRESS: "fill:#dcebff,stroke:#3d8bff,color:#0b2a55,stroke-width:2px",
    TicketStatus.COMPLETED: "fill:#ddf5e0,stroke:#3fae4f,color:#0f3d16",
    TicketStatus.BLOCKED: "fill:#fff0d6,stroke:#e69a12,color:#4d3000",
    TicketStatus.KILLED: "fill:#fde0e0,stroke:#d94040,color:#4d0b0b,stroke-dasharray:5 3",
}

# Characters written as entity codes: the quote; '#' (starts an entity); '&', '<', '>' (HTML);
# '`' (Markdown strings); '%' ('%%{…}%%' is a config directive wherever it appears, even in a
# label or a comment); brackets and '|' (shape and edge-label syntax; some renderers read them
# inside quotes too); ';' (a statement end); every control character.
_UNSAFE = re.compile(r'["#&<>`%{}\[\]|;\x00-\x1f\x7f]')
_SPACE = re.compile(r"\s+")


def mermaid_label(text: str) -> str:
    """``text`` as the inside of a double-quoted Mermaid label: one line, entity-coded."""
    return _UNSAFE.sub(lambda m: f"#{ord(m.group())};", _SPACE.sub(" ", text).strip())


def _title(description: str) -> str:
    lines = [line.strip() for line in description.splitlines() if line.strip()]
    first = lines[0] if lines else ""
    return first if len(first) <= TITLE_CHARS else first[: TITLE_CHARS - 1].rstrip() + "…"


def track_graph(track: Track, redact: Callable[[str], str] = str) -> dict[str, Any]:
    """The DAG as data: ``nodes`` (id, node, title, status, depends_on) and ``edges`` (from, to;
    dependency first). A dependency outside the track is an edge to a node with status None.
    ``redact`` runs over every title (a description may quote a secret)."""
    node_of = {ticket.id: f"t{index}" for index, ticket in enumerate(track.tickets, start=1)}
    nodes: list[dict[str, Any]] = []
    edges: list[dict[str, str]] = []
    outside: dict[str, str] = {}
    for ticket in track.tickets:
        nodes.append(
            {
                "id": ticket.id,
                "node": node_of[ticket.id],
                "title": _title(redact(ticket.description)),
                "status": str(ticket.status),
                "depends_on": list(ticket.depends_on),
            }
        )
        for dep in dict.fromkeys(ticket.depends_on):
            if dep not in node_of and dep not in outside:
                outside[dep] = f"x{len(outside) + 1}"
            edges.append({"from": dep, "to": ticket.id})
    for dep, node in outside.items():
        nodes.append({"id": dep, "node": node, "title": "not in this track", "status": None,
                      "depends_on": []})  # fmt: skip
    return {"nodes": nodes, "edges": edges}


def track_to_mermaid(track: Track, redact: Callable[[str], str] = str) -> str:
    """The track as a Mermaid ``flowchart LR`` (dependencies on the left of their dependents);
    ``redact`` runs over the track's title and every ticket's before they are escaped."""
    graph = track_graph(track, redact)
    node_of = {node["id"]: node["node"] for node in graph["nodes"]}
    lines = [
        "flowchart LR",
        f"    %% track {track.id}: {mermaid_label(redact(track.title))} ({track.status})",
    ]
    for status, style in STATUS_STYLES.items():
        lines.append(f"    classDef {status} {style}")
    for node in graph["nodes"]:
        label = mermaid_label(node["id"]) + (f": {mermaid_label(node['title'])}" if node["title"] else "")
        if node["status"] is None:
            lines.append(f'    {node["node"]}["{label}"]')
        else:
            lines.append(f'    {node["node"]}["{label}"]:::{node["status"]}')
    for edge in graph["edges"]:
        lines.append(f"    {node_of[edge['from']]} --> {node_of[edge['to']]}")
    return "\n".join(lines) + "\n"
