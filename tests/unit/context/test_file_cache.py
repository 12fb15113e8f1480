"""The AST cache: keyed by path and stamp, bounded LRUs, safe across threads."""

from __future__ import annotations

import threading

import pytest

from manual_slop.context.file_cache import FileCache


def test_a_tree_is_parsed_once_per_stamp() -> None:
    cache = FileCache()
    first = cache.tree("a.py", (1, 10), "x = 1\n")
    assert cache.tree("a.py", (1, 10), "x = 1\n") is first
    changed = cache.tree("a.py", (2, 10), "x = 2\n")
    assert changed is not first and changed.body[0].value.value == 2
    stats = cache.stats()
    assert (stats.tree_hits, stats.tree_misses) == (1, 2)


def test_least_recently_used_trees_are_evicted() -> None:
    cache = FileCache(max_trees=2)
    a = cache.tree("a.py", (1, 1), "a = 1")
    cache.tree("b.py", (1, 1), "b = 1")
    cache.tree("a.py", (1, 1), "a = 1")  # a is now the most recent
    cache.tree("c.py", (1, 1), "c = 1")  # evicts b
    assert cache.tree("a.py", (1, 1), "a = 1") is a
    misses = cache.stats().tree_misses
    cache.tree("b.py", (1, 1), "b = 1")
    assert cache.stats().tree_misses == misses + 1 and cache.stats().trees == 2


def test_trees_are_bounded_by_their_sources_size() -> None:
    cache = FileCache(max_trees=32, max_tree_chars=1_000)
    source = "x = 1\n" * 60  # 360 characters: two fit, the third evicts the oldest
    for name in ("a.py", "b.py", "c.py"):
        cache.tree(name, (1, 1), source)
    stats = cache.stats()
    assert (stats.trees, stats.tree_chars) == (2, 720)
    cache.tree("a.py", (1, 1), source)  # evicted: parsed again
    assert cache.stats().tree_misses == 4
    cache.tree("big.py", (1, 1), "y = 2\n" * 200)  # over the budget alone: parsed, not kept
    assert cache.stats().tree_chars == 720 and cache.stats().trees == 2
    with pytest.raises(ValueError, match="positive"):
        FileCache(max_tree_chars=0)


def test_a_syntax_error_is_cached_and_raised_again() -> None:
    cache = FileCache()
    for _ in range(3):
        with pytest.raises(SyntaxError):
            cache.tree("bad.py", (5, 5), "def (:")
    assert cache.stats().tree_misses == 1


def test_views_are_bounded_by_their_total_size() -> None:
    cache = FileCache(max_view_chars=25)
    calls: list[str] = []

    def build(text: str):
        return lambda: calls.append(text) or text

    assert cache.view("a", (1, 1), "skeleton", build("a" * 10)) == "a" * 10
    assert cache.view("a", (1, 1), "skeleton", build("zzz")) == "a" * 10  # hit: not rebuilt
    cache.view("b", (1, 1), "skeleton", build("b" * 10))
    cache.view("c", (1, 1), "skeleton", build("c" * 10))  # over 25 chars: "a" goes
    assert cache.stats().view_chars <= 25
    assert cache.peek_view("a", (1, 1), "skeleton") is None
    assert cache.peek_view("c", (1, 1), "skeleton") == "c" * 10
    assert cache.view("c", (2, 1), "skeleton", build("new")) == "new"  # a new stamp rebuilds
    assert calls == ["a" * 10, "b" * 10, "c" * 10, "new"]


def test_concurrent_readers_get_consistent_results() -> None:
    cache = FileCache(max_trees=4)
    sources = {f"m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(8)}
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            for _ in range(50):
                for path, text in sources.items():
                    tree = cache.tree(path, (1, len(text)), text)
                    assert tree.body[0].name == "f" + path[1:-3]
                    assert cache.view(path, (1, len(text)), "v", lambda t=text: t.upper()) == text.upper()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not errors
    assert cache.stats().trees <= 4


def test_a_view_being_built_is_waited_for_not_built_again() -> None:
    # four MMA workers starting at once parsed every file four times (issue #22c)
    cache = FileCache()
    started, release = threading.Event(), threading.Event()
    calls: list[str] = []

    def slow_build() -> str:
        calls.append(threading.current_thread().name)
        started.set()
        release.wait(5)
        return "skeleton"

    results: list[str] = []

    def reader() -> None:
        results.append(cache.view("m.py", (1, 1), "skeleton", slow_build))

    first, second = threading.Thread(target=reader), threading.Thread(target=reader)
    first.start()
    assert started.wait(5)
    second.start()
    second.join(0.1)
    assert second.is_alive()  # waiting for the first build, not building
    release.set()
    first.join(5)
    second.join(5)
    assert results == ["skeleton", "skeleton"] and len(calls) == 1
    stats = cache.stats()
    assert (stats.view_misses, stats.view_hits) == (1, 1)
    assert cache.view("m.py", (2, 1), "skeleton", lambda: "changed") == "changed"  # a new stamp builds
