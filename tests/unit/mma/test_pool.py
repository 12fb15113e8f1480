"""WorkerPool: bounded, non-blocking, self-cleaning."""

from __future__ import annotations

import threading

from manual_slop.mma.pool import WorkerPool


def test_spawn_is_bounded_non_blocking_and_self_cleaning() -> None:
    pool = WorkerPool(max_workers=2)
    gate = threading.Event()
    exited: list[str] = []
    pool.on_exit(exited.append)
    assert pool.spawn("a", gate.wait, (5,)) is not None
    assert pool.spawn("a", gate.wait, (5,)) is None  # already running
    assert pool.spawn("b", gate.wait, (5,)) is not None
    assert pool.spawn("c", gate.wait, (5,)) is None  # full: returns at once
    assert sorted(pool.active()) == ["a", "b"] and pool.free_slots() == 0
    assert pool.join(0.05) != []  # still running after a short join
    gate.set()
    assert pool.join(5) == []
    assert pool.active() == [] and sorted(exited) == ["a", "b"]
    assert pool.spawn("c", lambda: None) is not None
    assert pool.join(5) == []


def test_a_crashing_worker_still_leaves_the_registry() -> None:
    pool = WorkerPool(1)

    def boom() -> None:
        raise RuntimeError("bug")

    pool.spawn("x", boom)
    assert pool.join(5) == [] and pool.free_slots() == 1
