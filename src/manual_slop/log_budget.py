"""Byte budgets for the app's in-memory logs (comms and tool-call views, the event journal).

Those logs were bounded by entry COUNT only (50,000 view entries, 20,000 journal events), and
an entry may carry text fields of up to 20,000 characters each: a count bound let them hold
gigabytes, and in the R7 soak they kept filling for the whole hour. Each log now also has a
budget in bytes, estimated by :func:`approx_size` when an entry is added (once; entries are
never mutated after). The session log on disk keeps everything; a view counts what it dropped.
"""

from __future__ import annotations

import sys
from collections import deque
from typing import Any

__all__ = ["LogBudget", "approx_size"]

_sizeof = sys.getsizeof
_SCALAR_SIZE = 32  # an int, float, bool or None: most are shared or small
_SCALARS = (int, float, bool, type(None))
_MAX_DEPTH = 64  # deeper values are counted as one node: entries are JSON snapshots, never that deep


def approx_size(value: Any, _depth: int = 0) -> int:
    """Bytes ``value`` (a JSON-like tree of dicts, lists, strings, numbers) holds, roughly:
    ``sys.getsizeof`` of every container and string in it (shared keys counted each time).
    Strings and numbers inside a container are counted inline: a call per leaf was half the cost."""
    kind = type(value)
    if kind is str:
        return _sizeof(value)
    if kind in _SCALARS:
        return _SCALAR_SIZE
    if _depth >= _MAX_DEPTH or kind not in (dict, list, tuple):
        return _sizeof(value)
    total = _sizeof(value)
    items = value.values() if kind is dict else value
    if kind is dict:
        total += sum(map(_sizeof, value))  # the keys
    for item in items:
        item_kind = type(item)
        if item_kind is str:
            total += _sizeof(item)
        elif item_kind in _SCALARS:
            total += _SCALAR_SIZE
        else:
            total += approx_size(item, _depth + 1)
    return total


class LogBudget:
    """Keeps a list of entries (oldest first) within ``max_bytes`` and ``max_entries``.

    Trimming drops the oldest entries down to 90 % of the bound that was passed, so a list at
    its bound is not shifted on every append (``del entries[:n]`` moves the whole list). The
    newest entry is always kept, however large (its fields are clipped where it is made).
    Not thread-safe: one owner (the main thread for the views) calls it.
    """

    __slots__ = ("_sizes", "dropped", "max_bytes", "max_entries", "total")

    def __init__(self, max_bytes: int, max_entries: int) -> None:
        if max_bytes < 1 or max_entries < 1:
            raise ValueError("log budgets must be positive")
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self.total = 0  # estimated bytes of the entries held
        self.dropped = 0  # entries dropped since the start
        self._sizes: deque[int] = deque()

    def extend(self, entries: list[Any], new: list[Any], sizes: list[int] | None = None) -> int:
        """Append ``new`` to ``entries`` and drop the oldest beyond the bounds; how many were
        dropped now. ``sizes``: the new entries' :func:`approx_size`, when the caller measured
        them already (off the main thread)."""
        if len(self._sizes) != len(entries):  # someone else changed the list: count it again
            self._sizes = deque(approx_size(e) for e in entries)
            self.total = sum(self._sizes)
        for size in sizes if sizes is not None else map(approx_size, new):
            self._sizes.append(size)
            self.total += size
        entries.extend(new)
        if self.total <= self.max_bytes and len(entries) <= self.max_entries:
            return 0
        keep_bytes, keep_entries = self.max_bytes * 9 // 10, self.max_entries * 9 // 10
        cut = 0
        sizes = self._sizes
        while len(sizes) > 1 and (self.total > keep_bytes or len(entries) - cut > keep_entries):
            self.total -= sizes.popleft()
            cut += 1
        del entries[:cut]
        self.dropped += cut
        return cut
