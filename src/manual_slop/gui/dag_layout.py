"""Layered layout of a ticket DAG: where each node of the Task DAG goes.

Pure geometry, no ImGui, so it is tested on its own. Layers run left to right::

    layer 0      layer 1      layer 2
    ┌────┐       ┌────┐
    │ T0 │──────▶│ T1 │───┐   ┌────┐
    └────┘   │   └────┘   └──▶│ T3 │
             │   ┌────┐   ┌──▶│    │
             └──▶│ T2 │───┘   └────┘
                 └────┘

A node's layer is the length of the longest dependency chain before it, so every edge
goes from a lower layer to a higher one. Within a layer nodes are stacked top to bottom,
ordered by where their dependencies sit (fewer crossings); a layer with more than
``max_per_column`` nodes wraps into several sub-columns. All nodes get the same box, and
boxes are separated by gaps, so no two overlap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Rect", "layer_of", "layered_layout"]


@dataclass(frozen=True, slots=True)
class Rect:
    """An axis-aligned box: top-left corner and size."""

    x: float
    y: float
    w: float
    h: float

    @property
    def right(self) -> float:
        return self.x + self.w

    @property
    def bottom(self) -> float:
        return self.y + self.h

    def intersects(self, other: Rect) -> bool:
        """True when the two boxes share interior area (touching edges do not count)."""
        return (
            self.x < other.right and other.x < self.right and self.y < other.bottom and other.y < self.bottom
        )


def _deps(ticket: Mapping[str, Any], known: Mapping[str, Any]) -> list[str]:
    return [str(d) for d in ticket.get("depends_on") or [] if str(d) in known]


def layer_of(tickets: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Layer per ticket id: 0 without dependencies, else 1 + the deepest dependency's layer.

    Unknown dependencies are ignored. A cycle (the DAG refuses them, but a view must not
    hang on bad data) is broken where it is met: the dependencies not yet placed are ignored.
    """
    by_id = {str(t.get("id")): t for t in tickets}
    deps = {tid: _deps(t, by_id) for tid, t in by_id.items()}
    dependents: dict[str, list[str]] = {tid: [] for tid in by_id}
    waiting = {tid: len(set(d)) for tid, d in deps.items()}
    for tid, ds in deps.items():
        for dep in set(ds):
            dependents[dep].append(tid)
    layer: dict[str, int] = {}
    ready = [tid for tid in by_id if waiting[tid] == 0]
    while len(layer) < len(by_id):
        if not ready:  # only cycles left: place the first unplaced node with what is known
            ready = [next(tid for tid in by_id if tid not in layer)]
        tid = ready.pop(0)
        layer[tid] = 1 + max((layer[d] for d in deps[tid] if d in layer), default=-1)
        for child in dependents[tid]:
            waiting[child] -= 1
            if waiting[child] == 0 and child not in layer:
                ready.append(child)
    return layer


def _ordered_layers(tickets: Sequence[Mapping[str, Any]], layer: Mapping[str, int]) -> list[list[str]]:
    """Ids per layer; each layer after the first sorted by the mean row of its dependencies."""
    by_id = {str(t.get("id")): t for t in tickets}
    columns: list[list[str]] = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    for tid in by_id:
        columns[layer[tid]].append(tid)
    row: dict[str, float] = {tid: float(n) for n, tid in enumerate(columns[0])} if columns else {}
    for column in columns[1:]:
        keys = {}
        for n, tid in enumerate(column):
            placed = [row[d] for d in _deps(by_id[tid], by_id) if d in row]
            keys[tid] = (sum(placed) / len(placed) if placed else float(n), n)
        column.sort(key=keys.__getitem__)
        row.update({tid: float(n) for n, tid in enumerate(column)})
    return columns


def layered_layout(
    tickets: Sequence[Mapping[str, Any]],
    node_size: tuple[float, float],
    gap: tuple[float, float],
    *,
    max_per_column: int = 12,
) -> dict[str, Rect]:
    """A box per ticket id; layers left to right, each centred vertically on the tallest.

    ``node_size`` is the (width, height) every node fits in; ``gap`` the (horizontal,
    vertical) space between boxes.
    """
    width, height = node_size
    gap_x, gap_y = gap
    per_column = max(1, max_per_column)
    layers = _ordered_layers(tickets, layer_of(tickets))
    # sub-columns: a wide layer wraps into several columns of at most per_column nodes
    columns: list[list[str]] = []
    for ids in layers:
        columns.extend(_chunks(ids, per_column))
    tallest = max((len(c) for c in columns), default=0)
    full_height = tallest * height + max(0, tallest - 1) * gap_y
    boxes: dict[str, Rect] = {}
    for n, column in enumerate(columns):
        x = n * (width + gap_x)
        column_height = len(column) * height + max(0, len(column) - 1) * gap_y
        top = (full_height - column_height) / 2
        for k, tid in enumerate(column):
            boxes[tid] = Rect(x, top + k * (height + gap_y), width, height)
    return boxes


def _chunks(ids: list[str], size: int) -> Iterable[list[str]]:
    for start in range(0, len(ids), size):
        yield ids[start : start + size]
