#!/usr/bin/env python3
"""Cost of the controller's task pipeline, measured beside bare stdlib equivalents.

1. Throughput: N ``set_value`` tasks posted with ``post_gui_task`` and applied by
   ``process_pending`` (validation, task ids, outcome records included) versus the same
   N dicts through a bare ``queue.SimpleQueue`` applied with ``setattr``.
2. Hand-off latency: a thread posts a task while the headless ticker runs; time until
   the main thread applies it, versus a bare ``threading.Event`` wake-up.

Run: ``.venv/bin/python scripts/bench_tasks.py`` — prints ratios (same run, same machine).
"""

from __future__ import annotations

import queue
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from manual_slop.controller import AppController
from manual_slop.headless import HeadlessTicker

N = 50_000
LATENCY_SAMPLES = 300


class Target:
    ai_input = ""


def bare_throughput() -> float:
    q: queue.SimpleQueue = queue.SimpleQueue()
    target = Target()
    started = time.perf_counter()
    for i in range(N):
        q.put({"action": "set_value", "item": "ai_input", "value": f"v{i}"})
    while not q.empty():
        task = q.get()
        setattr(target, task["item"], task["value"])
    return time.perf_counter() - started


def controller_throughput(ctrl: AppController) -> float:
    started = time.perf_counter()
    for i in range(N):
        ctrl.post_gui_task({"action": "set_value", "item": "ai_input", "value": f"v{i}"})
    ctrl.process_pending()
    elapsed = time.perf_counter() - started
    assert ctrl.state.ai_input == f"v{N - 1}"
    return elapsed


def bare_latency() -> float:
    samples = []
    for _ in range(LATENCY_SAMPLES):
        event = threading.Event()
        stamp: list[float] = []

        def wake(stamp: list[float] = stamp, event: threading.Event = event) -> None:
            stamp.append(time.perf_counter())
            event.set()

        thread = threading.Thread(target=wake)
        thread.start()
        event.wait(5)
        samples.append(time.perf_counter() - stamp[0])
        thread.join()
    return statistics.median(samples)


def controller_latency(ctrl: AppController) -> float:
    samples: list[float] = []
    done = threading.Event()

    def producer() -> None:
        for _ in range(LATENCY_SAMPLES):
            applied = threading.Event()
            posted = time.perf_counter()

            def apply(posted: float = posted, applied: threading.Event = applied) -> None:
                samples.append(time.perf_counter() - posted)
                applied.set()

            ctrl.post_gui_task({"action": "custom_callback", "callback": apply})
            applied.wait(5)
            time.sleep(0.002)  # let the ticker go back to sleep, as in real use
        done.set()
        ctrl.request_stop()

    thread = threading.Thread(target=producer)
    thread.start()
    HeadlessTicker(ctrl).run()
    thread.join()
    return statistics.median(samples)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ctrl = AppController(Path(tmp) / "config.toml", environ={})
        try:
            bare_t = min(bare_throughput() for _ in range(3))
            ctrl_t = min(controller_throughput(ctrl) for _ in range(3))
            bare_l = bare_latency()
            ctrl_l = controller_latency(ctrl)
        finally:
            ctrl.shutdown()
    print(f"throughput: {N} set_value tasks")
    print(f"  controller  {ctrl_t * 1e6 / N:8.2f} us/task")
    print(f"  bare queue  {bare_t * 1e6 / N:8.2f} us/task")
    print(f"  ratio       {ctrl_t / bare_t:8.2f}x")
    print(f"hand-off latency (median of {LATENCY_SAMPLES}), ticker running")
    print(f"  controller  {ctrl_l * 1e6:8.1f} us")
    print(f"  bare Event  {bare_l * 1e6:8.1f} us")
    print(f"  ratio       {ctrl_l / bare_l:8.2f}x")


if __name__ == "__main__":
    main()
