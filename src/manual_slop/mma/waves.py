"""Kahn's walk by waves over a compact integer adjacency: in plain Python, or vectorised.

A wave holds the tickets whose dependencies all lie in earlier waves: wave k is the set of
tickets whose longest dependency chain has k links (what ``networkx.topological_generations``
yields). :class:`~manual_slop.mma.dag.TrackDAG` numbers its tickets in wave order once per
DAG and walks that numbering with one of two adjacencies, chosen by size (:func:`adjacency`):

- :class:`ListAdjacency`: one child list per ticket, walked in Python. Below
  :data:`VECTOR_FROM` tickets it is the faster of the two (numpy costs about a microsecond
  per call, a dozen calls per wave) and it needs no numpy: start-up time is a goal, so numpy
  is imported on the first large walk only.
- :class:`ArrayAdjacency`: the same graph as CSR arrays (``indptr``, ``indices``), walked one
  vectorised step per wave. On the wave-order numbering every wave is a contiguous range of
  numbers, so a wave's children are one slice of ``indices`` and its ids one slice of the id
  list: memory is read front to back, with no int object or child list per ticket. Those
  per-ticket objects are what made the Python walk grow 15-18x from 10k to 100k tickets
  (they fit the caches at 10k, not at 100k).

Both are real walks: they count down dependencies wave by wave and report a cycle when the
walk stops before every ticket is placed. They give the same waves in the same order on the
wave-order numbering (tests/unit/mma/test_waves.py checks it on random DAGs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain
from typing import TYPE_CHECKING

from manual_slop.mma.errors import CycleDetected

if TYPE_CHECKING:
    import numpy as np

__all__ = ["VECTOR_FROM", "ArrayAdjacency", "ListAdjacency", "adjacency"]

# Tickets from which the vectorised walk is used. Measured on bench_dag's random DAGs
# (2026-11-27, 2 cores, load 2.5): the Python walk is faster below ~500 tickets (3x at 100,
# 10x at 20), the arrays from ~500 up (0.8x at 700, 0.5x at 1,000, 0.2x at 5,000). A track of
# the usual 5-20 tickets never loads numpy; bench_dag's 10k and 100k both walk the arrays.
VECTOR_FROM = 600

FindCycle = Callable[[], "list[str] | None"]


class ListAdjacency:
    """Child lists by number; Kahn's walk in Python (small graphs, and the first numbering)."""

    __slots__ = ("children", "indegree")

    def __init__(self, children: list[list[int]], indegree: list[int]) -> None:
        self.children = children
        self.indegree = indegree

    def waves(self, ids: Sequence, find_cycle: FindCycle | None) -> list[list]:
        """``ids`` wave by wave, each wave in the order its tickets became ready.

        ``find_cycle`` None: stop at a cycle quietly (the waves reached so far).
        """
        children = self.children
        waiting = self.indegree.copy()
        wave = [i for i, n in enumerate(waiting) if not n]
        waves: list[list] = []
        placed = 0
        while wave:
            waves.append([ids[i] for i in wave])
            placed += len(wave)
            following: list[int] = []
            for i in wave:
                for child in children[i]:
                    waiting[child] -= 1
                    if not waiting[child]:
                        following.append(child)
            wave = following
        if placed != len(ids) and find_cycle is not None:
            raise CycleDetected(find_cycle() or sorted(ids[i] for i, n in enumerate(waiting) if n))
        return waves


class ArrayAdjacency:
    """The graph as CSR integer arrays; Kahn's walk with one vectorised step per wave.

    Each wave comes out in ascending number order: on the wave-order numbering that is the
    order in which Kahn's walk (:class:`ListAdjacency`) finds its tickets ready.
    """

    __slots__ = ("indegree", "indices", "indptr")

    def __init__(self, children: Sequence[Sequence[int]], indegree: Sequence[int]) -> None:
        import numpy as np  # here, not at the top: importing the DAG must not load numpy

        count = len(children)
        if len(indegree) != count:
            raise ValueError(f"{count} child lists but {len(indegree)} dependency counts")
        self.indptr = np.zeros(count + 1, dtype=np.intp)
        np.cumsum(np.fromiter(map(len, children), dtype=np.intp, count=count), out=self.indptr[1:])
        edges = int(self.indptr[-1])
        self.indices = np.fromiter(chain.from_iterable(children), dtype=np.intp, count=edges)
        # int32 counters: half the memory the walk reads at random (counts stay below 2**31)
        self.indegree = np.array(indegree, dtype=np.int32)

    def waves(self, ids: list, find_cycle: FindCycle | None) -> list[list]:
        """``ids`` wave by wave, each wave in ascending number order.

        ``find_cycle`` None: stop at a cycle quietly (the waves reached so far).
        """
        import numpy as np

        indptr, indices = self.indptr, self.indices
        waiting = self.indegree.copy()  # dependencies not yet placed; -1 once placed
        one = np.int32(1)  # of the counters' type: ufunc.at's fast path needs matching types
        waves: list[list] = []
        placed = 0
        # the current wave: numbers first..stop-1, or the sorted array `members` when not a range
        first, stop, members = _as_range(np.flatnonzero(waiting == 0), waiting)
        while stop > first:
            if members is None:
                waves.append(ids[first:stop])
                placed += stop - first
                children = indices[indptr[first] : indptr[stop]]
                waiting[first:stop] = -1
            else:
                waves.append([ids[i] for i in members.tolist()])
                placed += members.size
                children = indices[_ranges(indptr[members], indptr[members + 1])]
                waiting[members] = -1
            np.subtract.at(waiting, children, one)  # unbuffered: a child listed twice counts twice
            first, stop, members = _as_range(children[waiting[children] == 0], waiting)
        if placed != len(ids) and find_cycle is not None:
            stuck = np.flatnonzero(waiting > 0).tolist()
            raise CycleDetected(find_cycle() or sorted(ids[i] for i in stuck))
        return waves


def adjacency(children: list[list[int]], indegree: list[int]) -> ListAdjacency | ArrayAdjacency:
    """The faster adjacency for a graph of this size (see :data:`VECTOR_FROM`)."""
    if len(children) >= VECTOR_FROM:
        return ArrayAdjacency(children, indegree)
    return ListAdjacency(children, indegree)


def _as_range(reached: np.ndarray, waiting: np.ndarray) -> tuple[int, int, np.ndarray | None]:
    """The next wave from the numbers that reached zero (repeats allowed), as a range if it is one.

    The unplaced numbers at zero are exactly the ones reached this step, so the wave is the
    range lo..hi when every number in it is at zero: checked in O(hi - lo) <= O(len(reached)),
    no sort. Otherwise the distinct numbers, sorted.
    """
    if not reached.size:
        return 0, 0, None
    lo, hi = int(reached.min()), int(reached.max()) + 1
    if hi - lo <= reached.size and not waiting[lo:hi].any():
        return lo, hi, None
    import numpy as np

    distinct = np.unique(reached)  # sorted
    return int(distinct[0]), int(distinct[-1]) + 1, distinct


def _ranges(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """The positions start..stop-1 of every (start, stop) pair, concatenated (a CSR gather)."""
    import numpy as np

    lengths = stops - starts
    ends = np.cumsum(lengths)
    return np.repeat(starts - (ends - lengths), lengths) + np.arange(int(ends[-1]) if ends.size else 0)
