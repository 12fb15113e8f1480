#!/usr/bin/env python3
"""Cost of skeleton aggregation per input byte as the corpus grows, beside a bare ``ast.parse``.

Corpora: ``--sizes`` (default 200, 1,000, 2,000, 5,000) Python files drawn from one
population — the running interpreter's standard library (``sysconfig`` ``stdlib``, without
site-packages) and its ``purelib`` (the venv's site-packages) — shuffled with a fixed seed,
so a bigger corpus holds the smaller ones and every size has the same mix of files (the
first N files in name order, as before, differ in kind: the large ``test_*`` modules come
late, so 2,000 files cost more per character than 200 whatever the code did). Every
file is read once first, so both sides run from the page cache.

For each size:

1. **bare parse**: ``ast.parse`` of every source (texts already in memory).
2. **skeleton aggregation, cold cache**: ``FileItem.load`` (stat, read, decode) of every
   file in ``skeleton`` mode and ``aggregate(...)`` with an empty ``FileCache`` — parse,
   skeleton rendering and the Markdown assembly — and the share of it spent in the
   cyclic garbage collector (``gc.callbacks``).

Times are the process's CPU time (``time.process_time``), not wall time: on the shared
machine a run waits for a core most of the time (wall time was 5-13x the CPU time at a
load average of 20), and that wait grows with the load during the run, not with the corpus.
3. **re-aggregation, cache hit** (largest size only): the same again with the warm cache.

Printed per size: ns per input character of both, their ratio, the collector's share; then
the growth of the cost per character from the smallest size to each larger one (goal: no
growth, ≤ 1.25 allowing for noise) and the aggregation ÷ parse ratio (goal ≤ 3). Each
timing is the best of ``--rounds`` runs (default 2). Also the main-thread share of Gen +
Send (``ContextService.request()``, the snapshot the main thread takes).

Run: ``.venv/bin/python scripts/bench_aggregate.py [--sizes 200,1000] [--rounds R]``
The last line prints the ratios and growth factors.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import gc
import random
import statistics
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from manual_slop.context.aggregate import Strategy, aggregate
from manual_slop.context.file_cache import FileCache
from manual_slop.context.items import FileItem, ViewMode, ViewSpec


def population() -> list[Path]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    purelib = Path(sysconfig.get_paths()["purelib"])
    files = sorted(p for p in stdlib.rglob("*.py") if "site-packages" not in p.parts and p.is_file())
    files += sorted(p for p in purelib.rglob("*.py") if p.is_file())
    random.Random(22).shuffle(files)
    return files


def corpus(size: int, files: list[Path] | None = None) -> list[Path]:
    """The first ``size`` files of the shuffled population (smaller corpora nest in bigger)."""
    return (files if files is not None else population())[:size]


class GcClock:
    """Seconds spent in the cyclic garbage collector while active (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started = 0.0

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.process_time()
        else:
            self.seconds += time.process_time() - self._started

    def __enter__(self) -> GcClock:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)


def bare_parse(sources: list[str]) -> float:
    started = time.process_time()
    for text in sources:
        with contextlib.suppress(SyntaxError, ValueError):
            ast.parse(text)
    return time.process_time() - started


def skeleton_aggregation(files: list[Path], cache: FileCache) -> tuple[float, str]:
    view = ViewSpec(ViewMode.SKELETON)
    started = time.process_time()
    items = [FileItem.load(path, path.as_posix(), view) for path in files]
    markdown = aggregate(items, Strategy.FULL, cache=cache).markdown
    return time.process_time() - started, markdown


def snapshot_cost(samples: int = 1_000) -> float:
    from manual_slop.controller import AppController

    with tempfile.TemporaryDirectory() as folder:
        ctrl = AppController(Path(folder) / "config.toml", environ={})
        try:
            ctrl.state.project_files = [f"src/pkg{i}/**/*.py" for i in range(20)]
            ctrl.state.file_views = {f"src/pkg{i}/big.py": {"mode": "skeleton"} for i in range(200)}
            times = []
            for _ in range(samples):
                started = time.perf_counter()
                ctrl.context.request()
                times.append(time.perf_counter() - started)
        finally:
            ctrl.shutdown()
    return statistics.median(times)


def measure(files: list[Path], rounds: int) -> dict[str, float]:
    sources = [p.read_bytes().decode("utf-8", "replace") for p in files]  # also warms the page cache
    chars = sum(map(len, sources))
    parse_s = cold_s = gc_s = float("inf")
    markdown = ""
    for _ in range(rounds):
        parse_s = min(parse_s, bare_parse(sources))
        cache = FileCache(max_trees=32, max_view_chars=256_000_000)
        with GcClock() as clock:
            elapsed, markdown = skeleton_aggregation(files, cache)
        if elapsed < cold_s:
            cold_s, gc_s = elapsed, clock.seconds
    del sources
    return {"chars": chars, "parse": parse_s, "cold": cold_s, "gc": gc_s, "markdown": len(markdown)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="200,1000,2000,5000")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    sizes = sorted(int(n) for n in args.sizes.split(","))
    every = population()
    if len(every) < sizes[-1]:
        raise SystemExit(f"only {len(every):,} Python files in stdlib + purelib; largest size {sizes[-1]:,}")
    results = {n: measure(corpus(n, every), args.rounds) for n in sizes}
    print(f"population: {len(every):,} Python files (stdlib + purelib, shuffled); best of {args.rounds}")
    print(f"{'files':>6}{'M chars':>9}{'parse s':>9}{'agg s':>9}{'parse ns/ch':>13}{'agg ns/ch':>11}"
          f"{'agg/parse':>11}{'gc share':>10}")  # fmt: skip
    for n, r in results.items():
        print(
            f"{n:>6,}{r['chars'] / 1e6:>9.1f}{r['parse']:>9.2f}{r['cold']:>9.2f}"
            f"{r['parse'] / r['chars'] * 1e9:>13.0f}"
            f"{r['cold'] / r['chars'] * 1e9:>11.0f}{r['cold'] / r['parse']:>11.2f}{r['gc'] / r['cold']:>9.0%}"
        )
    largest = corpus(sizes[-1], every)
    cache = FileCache(max_trees=32, max_view_chars=256_000_000)
    skeleton_aggregation(largest, cache)
    warm_s = skeleton_aggregation(largest, cache)[0]
    snapshot_s = snapshot_cost()
    print(
        f"re-aggregation, cache hit, {sizes[-1]:,} files: {warm_s:.3f} s "
        f"({warm_s / results[sizes[-1]]['cold']:.3f} of cold)"
    )
    print(f"main-thread snapshot per Gen + Send: {snapshot_s * 1e6:.1f} µs (median of 1,000; "
          f"{snapshot_s / (1 / 60):.5f} of a 16.7 ms frame)")  # fmt: skip
    first = results[sizes[0]]
    per_char = {n: (r["cold"] / r["chars"]) / (first["cold"] / first["chars"]) for n, r in results.items()}
    parse_growth = {
        n: (r["parse"] / r["chars"]) / (first["parse"] / first["chars"]) for n, r in results.items()
    }
    worst = max(per_char.values())
    print(
        "RATIOS agg/parse "
        + ", ".join(f"{n}: {r['cold'] / r['parse']:.2f}" for n, r in results.items())
        + " [goal <= 3]; GROWTH of agg cost per char vs "
        + f"{sizes[0]}: "
        + ", ".join(f"{n}: {per_char[n]:.2f}" for n in sizes[1:])
        + f" [goal <= 1.25: {'met' if worst <= 1.25 else 'MISSED'}] (bare parse: "
        + ", ".join(f"{n}: {parse_growth[n]:.2f}" for n in sizes[1:])
        + ")"
    )


if __name__ == "__main__":
    main()
