"""MetricsCollector: percentiles on known data, failure rates, bounded memory (latency windows and
name tables), feeding from many threads at once, and the tool loop's events through a real
EventEmitter."""

from __future__ import annotations

import random
import threading

import numpy as np
import pytest

from manual_slop.events import EventEmitter
from manual_slop.governance.metrics import MAX_KEYS, OTHER, WINDOW, MetricsCollector, percentile


def test_percentiles_match_numpy_on_known_data() -> None:
    assert percentile(range(1, 101), 50) == pytest.approx(50.5)
    assert percentile(range(1, 101), 95) == pytest.approx(95.05)
    assert percentile([7.0], 95) == 7.0 and percentile([], 50) is None
    rng = random.Random(7)
    for size in (2, 3, 10, 511):
        data = [rng.expovariate(0.01) for _ in range(size)]
        for q in (0, 50, 95, 100):
            assert percentile(data, q) == pytest.approx(float(np.percentile(data, q))), (size, q)


def feed(emitter: EventEmitter) -> None:
    """One provider with 20 answers (10 ms … 200 ms) and 5 failures; one tool with 8 calls."""
    for i in range(1, 21):
        emitter.emit("request_start", provider="deepseek", model="deepseek-chat")
        emitter.emit("response_received", provider="deepseek", model="deepseek-chat",
                     usage={"input_tokens": 1}, latency_ms=10.0 * i)  # fmt: skip
    for kind in ("rate_limit", "rate_limit", "auth", "network", "network"):
        emitter.emit("request_start", provider="deepseek", model="deepseek-chat")
        emitter.emit("request_failed", provider="deepseek", model="deepseek-chat", kind=kind)
    for status, ms in (("success", 1), ("success", 2), ("success", 3), ("success", 4),
                       ("error", 5), ("timeout", 600), ("rejected", 7), ("denied", 8)):  # fmt: skip
        emitter.emit("tool_execution", name="read_file", call_id="c", status=status, duration_ms=ms)
    emitter.emit("guard_trip", kind="repeat_warned", tool="read_file")
    emitter.emit("guard_trip", kind="repeat_refused", tool="read_file")
    emitter.emit("guard_trip", kind="unknown_tool", tool="no_such_tool")


def test_the_tool_loop_events_become_rates_percentiles_and_guard_counts() -> None:
    emitter = EventEmitter()
    collector = MetricsCollector(clock=lambda: 1000.0)
    detach = collector.attach(emitter)
    feed(emitter)
    snap = collector.snapshot()
    [provider] = snap["providers"]
    assert provider == {
        "provider": "deepseek", "model": "deepseek-chat", "requests": 25, "ok": 20, "failures": 5,
        "failure_rate": 0.2, "failures_by_kind": {"auth": 1, "network": 2, "rate_limit": 2},
        "p50_ms": 105.0, "p95_ms": 190.5, "samples": 20,
    }  # fmt: skip
    unknown, read_file = snap["tools"]  # sorted by name
    assert read_file == {
        "tool": "read_file", "calls": 8, "errors": 2, "failure_rate": 0.25,
        "by_status": {"denied": 1, "error": 1, "rejected": 1, "success": 4, "timeout": 1},
        "guard_trips": 2, "p50_ms": 4.5, "p95_ms": 392.8, "samples": 8,
    }  # fmt: skip
    assert unknown["tool"] == "no_such_tool" and unknown["calls"] == 0 and unknown["guard_trips"] == 1
    assert snap["guard_trips"] == {
        "total": 3, "by_kind": {"repeat_refused": 1, "repeat_warned": 1, "unknown_tool": 1}
    }
    assert snap["since"] == 1000.0 and snap["window"] == WINDOW
    detach()
    emitter.emit("guard_trip", kind="round_limit", tool="")
    assert collector.snapshot()["guard_trips"]["total"] == 3  # detached: no longer counted
    assert all(emitter.listener_count(name) == 0 for name in ("request_start", "tool_execution"))


def test_snapshots_are_copies_and_reset_forgets_everything() -> None:
    emitter = EventEmitter()
    collector = MetricsCollector()
    collector.attach(emitter)
    feed(emitter)
    first = collector.snapshot()
    first["providers"].clear()
    assert len(collector.snapshot()["providers"]) == 1  # the caller's copy, not the cache
    collector.reset()
    empty = collector.snapshot()
    assert empty["providers"] == [] and empty["tools"] == [] and empty["guard_trips"]["total"] == 0


def test_memory_is_bounded_latency_windows_and_name_tables() -> None:
    collector = MetricsCollector()
    for i in range(WINDOW * 4):
        collector.response_received(provider="p", latency_ms=float(i))
        collector.tool_executed(name=f"tool_{i}", status="error", duration_ms=1.0)
        collector.guard_tripped(kind=f"kind_{i}", tool="")
        collector.request_failed(provider="p", kind=f"k{i}")
    snap = collector.snapshot()
    [provider] = snap["providers"]
    assert provider["samples"] == WINDOW and provider["ok"] == WINDOW * 4
    # the window holds the latest samples: the percentiles describe recent behaviour
    assert provider["p50_ms"] == pytest.approx(float(np.percentile(range(WINDOW * 3, WINDOW * 4), 50)), 0.1)
    assert len(provider["failures_by_kind"]) == MAX_KEYS + 1 and provider["failures_by_kind"][OTHER] > 0
    assert len(snap["tools"]) == MAX_KEYS + 1  # a model inventing tool names cannot grow the table
    other = next(t for t in snap["tools"] if t["tool"] == OTHER)
    assert other["calls"] == WINDOW * 4 - MAX_KEYS and other["samples"] == WINDOW
    assert sum(t["calls"] for t in snap["tools"]) == WINDOW * 4  # nothing is lost, only folded
    assert len(snap["guard_trips"]["by_kind"]) == MAX_KEYS + 1
    assert snap["guard_trips"]["total"] == WINDOW * 4


def test_feeding_from_many_threads_at_once_loses_no_event() -> None:
    emitter = EventEmitter()
    collector = MetricsCollector()
    collector.attach(emitter)
    threads, per_thread = 8, 500
    start = threading.Barrier(threads + 1)
    readings: list[int] = []

    def work(n: int) -> None:
        start.wait(5)
        for i in range(per_thread):
            emitter.emit("request_start", provider=f"p{n % 2}", model="m")
            emitter.emit("response_received", provider=f"p{n % 2}", model="m", latency_ms=float(i))
            emitter.emit("tool_execution", name="t", status="success" if i % 4 else "error", duration_ms=1.0)
            emitter.emit("guard_trip", kind="repeat_warned", tool="t")

    workers = [threading.Thread(target=work, args=(n,), name=f"feeder-{n}") for n in range(threads)]
    for worker in workers:
        worker.start()
    start.wait(5)
    while any(w.is_alive() for w in workers):  # reading while they write never breaks a snapshot
        readings.append(sum(p["requests"] for p in collector.snapshot()["providers"]))
    for worker in workers:
        worker.join(10)
    snap = collector.snapshot()
    assert [p["requests"] for p in snap["providers"]] == [threads * per_thread // 2] * 2
    assert [p["ok"] for p in snap["providers"]] == [threads * per_thread // 2] * 2
    [tool] = snap["tools"]
    assert tool["calls"] == threads * per_thread and tool["errors"] == threads * per_thread // 4
    assert tool["guard_trips"] == snap["guard_trips"]["total"] == threads * per_thread
    assert readings == sorted(readings)  # counts only grow


def test_bad_values_are_counted_without_a_latency() -> None:
    collector = MetricsCollector()
    for value in (None, "12", float("nan"), float("inf"), True, -5):
        collector.response_received(provider="p", latency_ms=value)
    [provider] = collector.snapshot()["providers"]
    assert provider["ok"] == 6 and provider["samples"] == 1 and provider["p50_ms"] == 0.0  # -5 → 0
