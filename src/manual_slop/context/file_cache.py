"""AST cache: parse results and rendered views keyed by (path, mtime), with small LRUs.

Two layers, both validated by the file's *stamp* ``(st_mtime_ns, st_size)``:

- **trees** — ``ast.Module`` per path (a syntax error is cached too, so a broken file
  is not re-parsed every send). Trees are large, so only ``max_trees`` are kept, and only
  as many as fit ``max_tree_chars`` characters of source (least recently used first out).
- **views** — the text of a skeleton, outline, summary or provider summary per
  (path, view). Views are small; they are bounded by their total size in characters.

A stamp that differs from the cached one is a miss and replaces the entry: a file is
re-parsed only when it changed. The cache is shared by the request thread, preview
and MD Only jobs and MMA workers, so every method takes one lock (never held while
parsing or rendering). A view being built is built once: a second thread missing the same
view waits for the first (up to ``VIEW_WAIT_S``, then builds it too; the results are
identical). Four MMA workers starting at once parsed every file four times, each parse one
C call holding the GIL for up to 20 ms while the window waited to draw (issue #22c).
"""

from __future__ import annotations

import ast
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from manual_slop import pyparse

__all__ = ["CacheStats", "FileCache", "Stamp"]

Stamp = tuple[int, int]  # (st_mtime_ns, st_size)

DEFAULT_MAX_TREES = 32
# Trees are bounded by their sources' size, not only their number: a 60,000-character module
# parses to a 4 MB tree, so 32 of them held 130 MB (in the R7 soak the app's RSS rose ~4.6 MB a
# loop for 17 loops, to ~316 MB; with this budget it levels off after ~6 loops, ~50 MB lower).
# Trees only serve to render views, which are cached on their own, so a small budget costs little.
DEFAULT_MAX_TREE_CHARS = 250_000
DEFAULT_MAX_VIEW_CHARS = 64_000_000
# A parsed tree takes ~180 bytes per source character (15 MB of Python peaked at 2.8 GB):
# bigger sources are not parsed (their views fall back to text), and trees of sources
# over KEEP_TREE_CHARS are not kept (their views are cached; the tree would only hold memory).
MAX_PARSE_CHARS = 1_000_000
KEEP_TREE_CHARS = 200_000
VIEW_WAIT_S = 10.0  # a view another thread builds is waited for this long, then built again


@dataclass(frozen=True, slots=True)
class CacheStats:
    """Counters since the cache was created (or cleared)."""

    tree_hits: int
    tree_misses: int
    view_hits: int
    view_misses: int
    trees: int
    tree_chars: int
    views: int
    view_chars: int


@dataclass(frozen=True, slots=True)
class _BrokenSource:
    msg: str
    lineno: int | None
    offset: int | None

    def raise_(self) -> None:
        raise SyntaxError(self.msg, (None, self.lineno, self.offset, None))


class FileCache:
    """Thread-safe LRU of parsed trees and rendered views, keyed by path and stamp."""

    def __init__(
        self,
        max_trees: int = DEFAULT_MAX_TREES,
        max_view_chars: int = DEFAULT_MAX_VIEW_CHARS,
        max_tree_chars: int = DEFAULT_MAX_TREE_CHARS,
    ) -> None:
        if max_trees < 1 or max_view_chars < 1 or max_tree_chars < 1:
            raise ValueError("cache sizes must be positive")
        self.max_trees = max_trees
        self.max_tree_chars = max_tree_chars
        self.max_view_chars = max_view_chars
        self._lock = threading.Lock()
        # path -> (stamp, tree or error, characters of its source counted against the budget)
        self._trees: OrderedDict[str, tuple[Stamp, ast.Module | _BrokenSource, int]] = OrderedDict()
        self._tree_chars = 0
        self._views: OrderedDict[tuple[str, str], tuple[Stamp, str]] = OrderedDict()
        self._view_chars = 0
        self._counts = [0, 0, 0, 0]  # tree hits, tree misses, view hits, view misses
        # (path, view) -> (set when built, the building thread's id): views being built now
        self._building: dict[tuple[str, str], tuple[threading.Event, int]] = {}

    # -- trees ----------------------------------------------------------------------
    def tree(self, path: str, stamp: Stamp, source: str) -> ast.Module:
        """The parsed tree of ``source`` (the text of ``path`` at ``stamp``); raises SyntaxError."""
        with self._lock:
            cached = self._trees.get(path)
            if cached is not None and cached[0] == stamp:
                self._trees.move_to_end(path)
                self._counts[0] += 1
                result = cached[1]
            else:
                self._counts[1] += 1
                result = None
        if result is None:
            if len(source) > MAX_PARSE_CHARS:
                too_large = f"too large to parse ({len(source):,} characters; limit {MAX_PARSE_CHARS:,})"
                result = _BrokenSource(too_large, None, None)
            else:
                try:
                    result = pyparse.parse(source, filename=path)
                except SyntaxError as exc:
                    result = _BrokenSource(str(exc.msg), exc.lineno, exc.offset)
                except ValueError as exc:  # null bytes and the like
                    result = _BrokenSource(str(exc), None, None)
            cost = 0 if isinstance(result, _BrokenSource) else len(source)
            if cost <= min(KEEP_TREE_CHARS, self.max_tree_chars):
                self._keep_tree(path, (stamp, result, cost))
        if isinstance(result, _BrokenSource):
            result.raise_()
        assert isinstance(result, ast.Module)
        return result

    def _keep_tree(self, path: str, entry: tuple[Stamp, ast.Module | _BrokenSource, int]) -> None:
        with self._lock:
            old = self._trees.pop(path, None)
            if old is not None:
                self._tree_chars -= old[2]
            self._trees[path] = entry
            self._tree_chars += entry[2]
            while len(self._trees) > self.max_trees or self._tree_chars > self.max_tree_chars:
                _, (_, _, dropped) = self._trees.popitem(last=False)
                self._tree_chars -= dropped

    # -- views ----------------------------------------------------------------------
    def view(self, path: str, stamp: Stamp, view: str, build: Callable[[], str]) -> str:
        """The cached ``view`` of ``path`` at ``stamp``, built with ``build()`` on a miss."""
        key = (path, view)
        me = threading.get_ident()
        for attempt in range(2):  # at most one wait for another thread's build
            with self._lock:
                cached = self._views.get(key)
                if cached is not None and cached[0] == stamp:
                    self._views.move_to_end(key)
                    self._counts[2] += 1
                    return cached[1]
                flight = self._building.get(key)
                if flight is None or flight[1] == me or attempt:
                    self._counts[3] += 1
                    done = threading.Event()
                    if flight is None:
                        self._building[key] = (done, me)
                    break
            flight[0].wait(VIEW_WAIT_S)  # outside the lock and the GIL; then look again
        try:
            text = build()
        finally:
            with self._lock:
                if self._building.get(key, (None, 0))[0] is done:
                    del self._building[key]
            done.set()
        with self._lock:
            old = self._views.pop(key, None)
            if old is not None:
                self._view_chars -= len(old[1])
            if len(text) <= self.max_view_chars:
                self._views[key] = (stamp, text)
                self._view_chars += len(text)
                while self._view_chars > self.max_view_chars:
                    _, (_, dropped) = self._views.popitem(last=False)
                    self._view_chars -= len(dropped)
        return text

    def peek_view(self, path: str, stamp: Stamp, view: str) -> str | None:
        """The cached view when present and current, without building or counting."""
        with self._lock:
            cached = self._views.get((path, view))
            return cached[1] if cached is not None and cached[0] == stamp else None

    # -- bookkeeping ------------------------------------------------------------------
    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(
                *self._counts, len(self._trees), self._tree_chars, len(self._views), self._view_chars
            )

    def clear(self) -> None:
        with self._lock:
            self._trees.clear()
            self._tree_chars = 0
            self._views.clear()
            self._view_chars = 0
            self._counts = [0, 0, 0, 0]
