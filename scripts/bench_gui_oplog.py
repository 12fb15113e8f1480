#!/usr/bin/env python3
"""Where a loaded frame's time goes: ``bench_gui.py`` with an operation log (issue #22c).

Runs ``scripts/bench_gui.py`` unchanged (same app, state and worker threads) with probes:

- each worker operation (``build_tier3_context`` and its parts: ``resolve_files``,
  ``FileItem.load``, ``render_block``, ``pyparse.parse``; ``post_mma_state``,
  ``add_comms_entry``, ``json_snapshot``, ``approx_size``): start, end and thread CPU time;
- each frame (``begin_frame`` → ``end_frame``): wall and main-thread CPU time, and the
  app's callbacks and panel scopes inside it;
- every collection of the cyclic collector, with its thread.

Printed per scenario: frame wall against CPU time, the gaps between successive callbacks
(where the main thread waits to take the GIL back), the worker operations' wall and CPU
time, the collections per thread, and which operations overlapped the long frames. The
probes cost time of their own: compare runs of this script with each other, not with
``bench_gui.py``.

Run: ``.venv/bin/python scripts/bench_gui_oplog.py [--rounds 1] [--frames 300] [--workers 4]``
"""

from __future__ import annotations

import gc
import itertools
import statistics
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT), str(ROOT / "scripts")]

import bench_gui  # noqa: E402

import manual_slop.context.aggregate  # noqa: E402,F401
import manual_slop.controller as controller_module  # noqa: E402
import manual_slop.gui.app as app_module  # noqa: E402
from manual_slop import perf, pyparse  # noqa: E402

aggregate_module = sys.modules["manual_slop.context.aggregate"]  # the package exports a function of that name

OPS: list[tuple[str, str, float, float, float]] = []  # thread, op, start, end, CPU ms (workers)
FRAMES: list[tuple[float, float, float]] = []  # start, end, main-thread CPU ms
MARKS: list[tuple[str, float, float]] = []  # callback or scope name, start, end (main thread)
COLLECTIONS: list[tuple[str, int, float, float]] = []  # thread, generation, start, end
RUNS: list[dict[str, Any]] = []


def _probe(owner: Any, attr: str, op: str) -> None:
    original = getattr(owner, attr)

    def probed(*args: Any, **kwargs: Any) -> Any:
        name = threading.current_thread().name
        if not name.startswith("bench-worker"):
            return original(*args, **kwargs)
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            OPS.append((name, op, started, time.perf_counter(), (time.thread_time() - cpu) * 1000.0))

    setattr(owner, attr, probed)


def _install() -> None:
    _probe(aggregate_module, "build_tier3_context", "context")
    bench_gui.build_tier3_context = aggregate_module.build_tier3_context
    _probe(aggregate_module, "resolve_files", "context.resolve")
    _probe(aggregate_module.FileItem, "load", "context.load")
    _probe(aggregate_module, "render_block", "context.render")
    _probe(pyparse, "parse", "context.parse")
    _probe(controller_module.AppController, "post_mma_state", "post_mma_state")
    _probe(controller_module.AppController, "add_comms_entry", "add_comms_entry")
    _probe(controller_module, "json_snapshot", "json_snapshot")
    _probe(controller_module, "approx_size", "approx_size")

    monitor = perf.PerformanceMonitor
    frame_start, frame_end, scope = monitor.frame_start, monitor.frame_end, monitor.scope

    def started(self: Any) -> None:
        self._probe_cpu = time.thread_time()
        frame_start(self)

    def ended(self: Any) -> None:
        begun = self._frame_started
        frame_end(self)
        FRAMES.append((begun, time.perf_counter(), (time.thread_time() - self._probe_cpu) * 1000.0))

    @contextmanager
    def scoped(self: Any, name: str) -> Any:
        begun = time.perf_counter()
        with scope(self, name):
            yield
        MARKS.append((name, begun, time.perf_counter()))

    monitor.frame_start, monitor.frame_end, monitor.scope = started, ended, scoped

    def marked(name: str) -> None:
        original: Callable[..., Any] = getattr(app_module.App, name)

        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            begun = time.perf_counter()
            try:
                return original(self, *args, **kwargs)
            finally:
                MARKS.append((name, begun, time.perf_counter()))

        setattr(app_module.App, name, call)

    for name in ("_pre_new_frame", "_show_menus", "_show_gui", "_show_status", "_between_frames"):
        marked(name)

    collecting: dict[str, float] = {}

    def on_collect(phase: str, info: dict[str, Any]) -> None:
        name = threading.current_thread().name
        if phase == "start":
            collecting[name] = time.perf_counter()
        else:
            COLLECTIONS.append((name, info["generation"], collecting.get(name, 0.0), time.perf_counter()))

    gc.callbacks.append(on_collect)

    run_once = bench_gui.run_once

    def logged(loaded: bool, frames: int, workers: int = 0, gc_policy: bool = True) -> Any:
        for log in (OPS, FRAMES, MARKS, COLLECTIONS):
            log.clear()
        result = run_once(loaded, frames, workers, gc_policy)
        RUNS.append(
            {"loaded": loaded, "frames": FRAMES[-frames:], "ops": list(OPS), "marks": list(MARKS),
             "collections": list(COLLECTIONS)}
        )  # fmt: skip
        return result

    bench_gui.run_once = logged


def _q(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))] if ordered else 0.0


def _report(run: dict[str, Any]) -> None:
    frames = run["frames"]
    first, last = frames[0][0], frames[-1][1]
    wall = [(end - start) * 1000.0 for start, end, _ in frames]
    cpu = [c for _, _, c in frames]
    print(f"\n== {'loaded' if run['loaded'] else 'idle'}: {len(frames)} frames")
    print(
        f"frame wall median {statistics.median(wall):.2f} p99 {_q(wall, 0.99):.2f} max {max(wall):.2f} ms; "
        f"main-thread CPU median {statistics.median(cpu):.2f} p99 {_q(cpu, 0.99):.2f} max {max(cpu):.2f} ms"
    )
    events = sorted(
        [(start, "frame") for start, _, _ in frames]
        + [(end, "/frame") for _, end, _ in frames]
        + [(start, name) for name, start, _ in run["marks"]]
        + [(end, "/" + name) for name, _, end in run["marks"]]
    )
    events = [e for e in events if first <= e[0] <= last]
    gaps: dict[tuple[str, str], list[float]] = defaultdict(list)
    for (at, name), (then, following) in itertools.pairwise(events):
        gaps[(name, following)].append((then - at) * 1000.0)
    print("main thread, between successive marks (a gap inside a frame is C++ plus taking the GIL back):")
    for (name, following), values in sorted(gaps.items(), key=lambda kv: -_q(kv[1], 0.99))[:8]:
        print(
            f"  {name:>22} -> {following:<22} median {statistics.median(values):6.2f} "
            f"p99 {_q(values, 0.99):6.2f} max {max(values):6.1f} ms"
        )
    if not run["loaded"]:
        return
    ops: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for _, op, start, end, used in run["ops"]:
        if first <= start <= last:
            ops[op].append(((end - start) * 1000.0, used))
    span = last - first
    print(f"worker operations over {span:.1f} s (wall includes waiting for the GIL and for turns):")
    for op, values in sorted(ops.items()):
        walls, cpus = [w for w, _ in values], [c for _, c in values]
        print(
            f"  {op:16} n={len(values):5}  wall median {statistics.median(walls):6.2f}"
            f" p99 {_q(walls, 0.99):7.2f}  CPU median {statistics.median(cpus):6.2f}"
            f" max {max(cpus):6.2f} sum {sum(cpus) / 1000:5.2f} s"
        )
    per_thread: dict[tuple[str, int], list[float]] = defaultdict(list)
    for thread, generation, start, end in run["collections"]:
        if first <= start <= last:
            per_thread[(thread.rsplit("-", 1)[0], generation)].append((end - start) * 1000.0)
    for (thread, generation), values in sorted(per_thread.items()):
        print(
            f"  collections, {thread} generation {generation}: {len(values)}, "
            f"{sum(values):.0f} ms, median {statistics.median(values):.2f} ms"
        )
    long_frames = [(start, end) for start, end, _ in frames if (end - start) * 1000.0 > 15.0]
    overlap: dict[str, float] = defaultdict(float)
    for start, end in long_frames:
        for _, op, op_start, op_end, _ in run["ops"]:
            shared = min(end, op_end) - max(start, op_start)
            if shared > 0:
                overlap[op] += shared * 1000.0
    during = ", ".join(f"{op} {ms:.0f}" for op, ms in sorted(overlap.items(), key=lambda kv: -kv[1]))
    print(f"{len(long_frames)} frames over 15 ms; worker operations during them (ms, all threads): {during}")


def main() -> None:
    if "--rounds" not in sys.argv:
        sys.argv[1:1] = ["--rounds", "1"]
    _install()
    bench_gui.main()
    for run in RUNS:
        _report(run)


if __name__ == "__main__":
    main()
