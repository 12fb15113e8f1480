from __future__ import annotations

import threading

from manual_slop.tasks import GuardedList, TaskBoard, TaskState


def test_drain_returns_everything_in_order_and_empties() -> None:
    woken: list[int] = []
    guarded: GuardedList[int] = GuardedList("x", lambda: woken.append(1))
    for i in range(3):
        assert guarded.append(i)
    assert guarded.extend([3, 4])
    assert len(guarded) == 5
    assert guarded.drain() == [0, 1, 2, 3, 4]
    assert guarded.drain() == []
    assert len(woken) == 4


def test_closed_list_refuses_posts() -> None:
    guarded: GuardedList[int] = GuardedList("x")
    guarded.close()
    assert guarded.append(1) is False
    assert guarded.extend([1]) is False
    assert guarded.drain() == []


def test_concurrent_producers_lose_nothing() -> None:
    guarded: GuardedList[tuple[int, int]] = GuardedList("x")
    drained: list[tuple[int, int]] = []
    done = threading.Event()

    def producer(pid: int) -> None:
        for i in range(2000):
            guarded.append((pid, i))

    threads = [threading.Thread(target=producer, args=(p,)) for p in range(4)]
    for t in threads:
        t.start()
    while not done.is_set():
        drained.extend(guarded.drain())
        if not any(t.is_alive() for t in threads):
            drained.extend(guarded.drain())
            done.set()
    for t in threads:
        t.join(5)
    assert len(drained) == 8000
    for pid in range(4):
        assert [i for p, i in drained if p == pid] == list(range(2000))


def test_task_board_tracks_state_and_forgets_the_oldest() -> None:
    board = TaskBoard(capacity=3)
    board.queued("a")
    board.done("a")
    board.queued("b")
    board.failed("b", "bad")
    assert board.get("a").state is TaskState.DONE
    assert board.get("b").to_dict() == {"state": "error", "error": "bad"}
    for key in ("c", "d", "e"):
        board.queued(key)
    assert board.get("a") is None and board.get("e").state is TaskState.QUEUED
