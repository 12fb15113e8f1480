#!/usr/bin/env python3
"""Frame budget of the desktop window: loaded state versus idle, measured in one run.

The app runs under a private Xvfb (software GL) twice per round, alternating:

- idle:   empty state;
- loaded: 10,000 comms entries, 200 tickets (MMA Dashboard and Task DAG), a request
          in flight (status spinner), Comms Log and MMA Dashboard in front.

For each run we record, per frame, the controller's frame time (``begin_frame`` →
``end_frame``: the drain plus every panel's Python) and the interval between frames.
Printed: median and p99 of both, and loaded ÷ idle ratios (goal: median ≤ 1.25,
p99 ≤ 2 for the frame time).

Run: ``.venv/bin/python scripts/bench_gui.py [--frames N] [--rounds R]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from imgui_bundle.immapp import testing  # noqa: E402
from tests.xvfb import xvfb_display  # noqa: E402

from manual_slop.controller import AppController  # noqa: E402
from manual_slop.gui import App, kept_signal_dispositions  # noqa: E402


class BlockedBackend:
    """A provider call that stays in flight until released."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def apply_settings(self, settings) -> None:
        pass

    def send(self, md_content, user_message, **kwargs) -> str:
        self.release.wait(60)
        return "released"

    def reset_session(self) -> None:
        pass


def _tickets(count: int) -> list[dict]:
    tickets = []
    statuses = ("completed", "in_progress", "todo", "blocked", "killed")
    for i in range(count):
        deps = [f"T{j}" for j in (i - 1, i - 7) if j >= 0]
        tickets.append(
            {
                "id": f"T{i}",
                "description": f"ticket number {i} with a description of moderate length",
                "status": statuses[i % len(statuses)],
                "depends_on": deps,
                "retry_count": i % 3,
            }
        )
    return tickets


def _load(ctrl: AppController, backend: BlockedBackend) -> None:
    state = ctrl.state
    for i in range(10_000):
        ctrl.add_comms_entry(
            {
                "direction": "IN" if i % 2 else "OUT",
                "kind": ("request", "response", "tool_call", "tool_result")[i % 4],
                "provider": "gemini",
                "model": "gemini-2.5-flash-lite",
                "source_tier": f"Tier {1 + i % 4}",
                "payload": {"text": f"entry {i} " + "lorem ipsum " * 8},
            }
        )
    state.mma_tickets = _tickets(200)
    state.active_track = {"id": "bench", "title": "Benchmark track"}
    state.mma_status = "running"
    ctrl.process_pending()
    state.ai_input = "a request in flight"
    ctrl.submit_user_message(state.ai_input)


def run_once(loaded: bool, frames: int) -> tuple[list[float], list[float]]:
    work: list[float] = []
    interval: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        backend = BlockedBackend()
        ctrl = AppController(Path(tmp) / "config.toml", environ={}, backend=backend)
        try:
            if loaded:
                _load(ctrl, backend)
            app = App(ctrl)
            app.runner_params.ini_disable = True
            app.runner_params.fps_idling.enable_idling = False

            def test(ctx, app=app) -> None:
                for title in ("Comms Log", "MMA Dashboard"):
                    app.focus(title)
                ctx.yield_(30)  # layout settles, filter caches fill
                last = time.perf_counter()
                for _ in range(frames):
                    ctx.yield_()
                    now = time.perf_counter()
                    interval.append((now - last) * 1000.0)
                    last = now
                    work.append(ctrl.perf.get_metrics()["last_frame_time_ms"])

            with kept_signal_dispositions():
                testing.run(test_function=test, runner_params=app.runner_params, add_ons_params=app.add_ons)
        finally:
            backend.release.set()
            ctrl.bind_main_thread()
            ctrl.shutdown()
    return work, interval


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    results: dict[bool, tuple[list[float], list[float]]] = {False: ([], []), True: ([], [])}
    with xvfb_display():
        for _ in range(args.rounds):
            for loaded in (False, True):
                work, interval = run_once(loaded, args.frames)
                results[loaded][0].extend(work)
                results[loaded][1].extend(interval)
    idle_work, idle_interval = results[False]
    load_work, load_interval = results[True]
    print(f"frames per scenario: {len(idle_work)} ({args.rounds} alternating rounds)")
    print(f"{'':24}{'idle':>10}{'loaded':>10}{'ratio':>9}")
    for label, idle, load in (
        ("frame time median (ms)", statistics.median(idle_work), statistics.median(load_work)),
        ("frame time p99 (ms)", p99(idle_work), p99(load_work)),
        ("interval median (ms)", statistics.median(idle_interval), statistics.median(load_interval)),
        ("interval p99 (ms)", p99(idle_interval), p99(load_interval)),
    ):
        print(f"{label:24}{idle:10.2f}{load:10.2f}{load / idle:9.2f}")


if __name__ == "__main__":
    main()
