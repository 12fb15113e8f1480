"""Worker threads take turns for Python-heavy sections; the main thread and asyncio loops never wait."""

from __future__ import annotations

import asyncio
import threading
import time

from manual_slop.cpu_turn import cpu_turn, frame_begins, frame_ends, give_way


def _hold_turn_in_thread() -> tuple[threading.Thread, threading.Event, threading.Event]:
    inside, leave = threading.Event(), threading.Event()

    def holder() -> None:
        with cpu_turn() as taken:
            assert taken
            inside.set()
            leave.wait(5)

    thread = threading.Thread(target=holder, name="turn-holder")
    thread.start()
    assert inside.wait(5)
    return thread, inside, leave


def test_a_second_worker_waits_for_the_turn_and_gets_it_when_freed() -> None:
    holder, _, leave = _hold_turn_in_thread()
    got: list[bool] = []
    entered = threading.Event()

    def second() -> None:
        with cpu_turn(max_wait_s=5) as taken:
            got.append(taken)
            entered.set()

    worker = threading.Thread(target=second, name="turn-second")
    try:
        worker.start()
        assert not entered.wait(0.1)  # blocked while the holder has the turn
        leave.set()
        assert entered.wait(5) and got == [True]
    finally:
        leave.set()
        holder.join(5)
        worker.join(5)
    assert not holder.is_alive() and not worker.is_alive()


def test_the_main_thread_an_asyncio_loop_and_a_timed_out_wait_go_through() -> None:
    holder, _, leave = _hold_turn_in_thread()
    results: list[bool] = []

    def late() -> None:
        with cpu_turn(max_wait_s=0.01) as taken:
            results.append(taken)

    async def in_loop() -> bool:
        with cpu_turn(max_wait_s=5) as taken:
            return taken

    try:
        with cpu_turn(max_wait_s=5) as taken:  # the main thread: at once, without the turn
            assert taken is False
        loop_thread_result: list[bool] = []
        runner = threading.Thread(target=lambda: loop_thread_result.append(asyncio.run(in_loop())))
        runner.start()
        runner.join(5)
        assert loop_thread_result == [False]
        timed = threading.Thread(target=late)
        timed.start()
        timed.join(5)
        assert results == [False]
    finally:
        leave.set()
        holder.join(5)
    assert not holder.is_alive()


def test_the_turn_is_reentrant_in_one_thread() -> None:
    seen: list[tuple[bool, bool]] = []

    def nested() -> None:
        with cpu_turn() as outer, cpu_turn(max_wait_s=0.01) as inner:
            seen.append((outer, inner))

    thread = threading.Thread(target=nested)
    thread.start()
    thread.join(5)
    assert seen == [(True, True)]


def test_no_turn_starts_while_a_frame_is_drawn() -> None:
    entered = threading.Event()
    waited: list[bool] = []

    def worker() -> None:
        with cpu_turn(max_wait_s=5) as taken:
            waited.append(taken)
            entered.set()

    frame_begins()
    thread = threading.Thread(target=worker, name="turn-during-frame")
    try:
        thread.start()
        assert not entered.wait(0.1)  # held back while the frame is drawn
    finally:
        frame_ends()
    assert entered.wait(5) and waited == [True]
    thread.join(5)
    assert not thread.is_alive()


def test_a_thread_threading_did_not_start_leaves_no_dummy_thread_behind() -> None:
    # the ImGui test engine runs a test on such a thread; threading.current_thread() there would
    # register a _DummyThread that stays "alive" for ever
    import _thread

    done = threading.Event()
    taken: list[bool] = []

    def foreign() -> None:
        with cpu_turn() as turn:
            taken.append(turn)
        done.set()

    before = len(threading.enumerate())
    _thread.start_new_thread(foreign, ())
    assert done.wait(5)
    assert taken == [True] and len(threading.enumerate()) == before


def _in_thread(work, name: str) -> tuple[threading.Thread, threading.Event]:
    done = threading.Event()

    def run() -> None:
        work()
        done.set()

    thread = threading.Thread(target=run, name=name)
    thread.start()
    return thread, done


def _held_until_the_frame_ends(thread: threading.Thread, done: threading.Event) -> None:
    """A frame begun by the test holds ``thread`` in give_way; ending it lets the thread go on."""
    try:
        assert not done.wait(0.1)  # stopped while the frame is drawn
    finally:
        frame_ends()
    assert done.wait(5)
    thread.join(5)
    assert not thread.is_alive()


def test_give_way_holds_a_worker_while_a_frame_is_drawn() -> None:
    thread, done = _in_thread(lambda: give_way(max_wait_s=30), "give-way-no-frame")
    assert done.wait(5)  # no frame is drawn: at once
    thread.join(5)
    frame_begins()
    _held_until_the_frame_ends(*_in_thread(lambda: give_way(max_wait_s=5), "give-way-during-frame"))


def test_a_stuck_frame_holds_each_thread_once_and_the_next_frame_again() -> None:
    gave_up, next_frame = threading.Event(), threading.Event()

    def steps() -> None:
        # the first wait gives up; then neither a step nor a turn waits for the same frame again
        # (each would wait 30 s, and gave_up would not be set within the 5 s below)
        give_way(max_wait_s=0.05)
        give_way(max_wait_s=30)
        with cpu_turn(max_wait_s=30) as taken:
            assert taken
        gave_up.set()
        assert next_frame.wait(5)
        give_way(max_wait_s=5)  # a new frame holds the same thread back again

    frame_begins()
    try:
        thread, done = _in_thread(steps, "give-way-stuck-frame")
        assert gave_up.wait(5)
    finally:
        frame_ends()
    frame_begins()
    next_frame.set()
    _held_until_the_frame_ends(thread, done)


def test_the_main_thread_and_an_asyncio_loop_never_give_way() -> None:
    async def in_loop() -> None:
        give_way(max_wait_s=30)

    frame_begins()
    try:
        started = time.monotonic()
        give_way(max_wait_s=30)  # the main thread draws the frame: it cannot wait for it
        assert time.monotonic() - started < 5
        thread, done = _in_thread(lambda: asyncio.run(in_loop()), "give-way-in-loop")
        assert done.wait(5)  # the loop never blocks
        thread.join(5)
    finally:
        frame_ends()
    assert not thread.is_alive()
