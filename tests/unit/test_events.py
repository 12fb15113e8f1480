from __future__ import annotations

import asyncio
import threading
import time

import pytest

from manual_slop.events import AsyncEventQueue, EventEmitter, EventJournal, UserRequestEvent


def test_emitter_calls_listeners_in_order_and_survives_a_failing_one() -> None:
    emitter = EventEmitter()
    seen: list[str] = []

    def broken(*args: object) -> None:
        raise RuntimeError("boom")

    emitter.on("x", lambda v: seen.append(f"a{v}"))
    emitter.on("x", broken)
    unsubscribe = emitter.on("x", lambda v: seen.append(f"c{v}"))
    emitter.emit("x", 1)
    unsubscribe()
    emitter.emit("x", 2)
    assert seen == ["a1", "c1", "a2"]
    assert emitter.listener_count("x") == 2


def test_emitter_subscribe_while_emitting_from_threads() -> None:
    emitter = EventEmitter()
    counter = [0]
    lock = threading.Lock()

    def bump() -> None:
        with lock:
            counter[0] += 1

    emitter.on("tick", bump)

    def worker() -> None:
        for _ in range(500):
            emitter.emit("tick")
            emitter.on("other", lambda: None)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert counter[0] == 2000


def test_async_queue_put_threadsafe_until_closed() -> None:
    loop = asyncio.new_event_loop()
    try:
        queue = AsyncEventQueue(loop)
        assert queue.put_threadsafe("a", 1)
        assert loop.run_until_complete(asyncio.wait_for(queue.get(), 1)) == ("a", 1)
        queue.close()
        assert not queue.put_threadsafe("b", 2)
    finally:
        loop.close()
    assert not AsyncEventQueue(loop).put_threadsafe("c")  # closed loop


def test_user_request_event_to_dict() -> None:
    event = UserRequestEvent("hi", "## ctx", [], "User: x", "/tmp", "rid")
    assert event.to_dict()["prompt"] == "hi"
    assert event.to_dict()["base_dir"] == "/tmp"
    with pytest.raises(AttributeError):
        event.prompt = "changed"  # type: ignore[misc]


def test_journal_reads_in_order_from_a_sequence_number() -> None:
    journal = EventJournal(capacity=100)
    for i in range(5):
        journal.publish("e", {"i": i})
    events, next_since, dropped = journal.read(since=2)
    assert [e.payload["i"] for e in events] == [2, 3, 4]
    assert [e.seq for e in events] == [3, 4, 5]
    assert next_since == 5 and dropped == 0
    assert journal.read(since=next_since) == ([], 5, 0)


def test_journal_long_poll_wakes_on_publish() -> None:
    journal = EventJournal()
    timer = threading.Timer(0.1, lambda: journal.publish("late", {}))
    timer.start()
    events, _, _ = journal.read(since=0, timeout=5.0)
    timer.join()
    assert [e.type for e in events] == ["late"]


def test_journal_times_out_empty() -> None:
    started = time.monotonic()
    assert journal_read_empty(EventJournal(), 0.2) == []
    assert time.monotonic() - started >= 0.19


def journal_read_empty(journal: EventJournal, timeout: float) -> list:
    events, _, _ = journal.read(since=0, timeout=timeout)
    return events


def test_journal_reports_dropped_events_after_overflow() -> None:
    journal = EventJournal(capacity=10)
    for i in range(25):
        journal.publish("e", {"i": i})
    events, next_since, dropped = journal.read(since=0, limit=100)
    assert dropped == 15
    assert [e.payload["i"] for e in events] == list(range(15, 25))
    assert next_since == 25


def test_journal_drops_the_oldest_beyond_its_bytes_but_keeps_the_newest() -> None:
    journal = EventJournal(capacity=1_000, max_bytes=50_000)
    for i in range(30):
        journal.publish("comms", {"i": i, "text": "z" * 10_000})
    events, _, dropped = journal.read(since=0, limit=100)
    assert 3 <= len(events) <= 5 and events[-1].payload["i"] == 29 and dropped == 30 - len(events)
    journal.publish("huge", {"text": "z" * 200_000})  # over the whole budget: still delivered
    events, next_since, _ = journal.read(since=30)
    assert [e.type for e in events] == ["huge"] and next_since == 31


def test_journal_close_wakes_readers() -> None:
    journal = EventJournal()
    result: list = []
    reader = threading.Thread(target=lambda: result.append(journal.read(0, timeout=30)))
    reader.start()
    time.sleep(0.05)
    journal.close()
    reader.join(2)
    assert not reader.is_alive() and result[0][0] == []
