#!/usr/bin/env python3
"""Cost of skeleton aggregation, measured beside a bare ``ast.parse`` of the same files.

Corpus: ``--files`` Python files (default 2,000) from the running interpreter's standard
library (``sysconfig`` ``stdlib``, without site-packages), topped up from its ``purelib``
(the venv's site-packages) when the library has fewer. Every file is read once first, so
both sides run from the page cache.

1. **bare parse**: ``ast.parse`` of every source (texts already in memory); also
   reported with the file reads included.
2. **skeleton aggregation, cold cache**: ``FileItem.load`` (stat, read, decode) of every
   file in ``skeleton`` mode and ``aggregate(...)`` with an empty ``FileCache`` — parse,
   skeleton rendering and the Markdown assembly.
3. **re-aggregation, cache hit**: the same again with the now warm cache (files are
   still stat-ed and read, trees and skeletons come from the cache).
4. **main-thread share of Gen + Send**: ``ContextService.request()``, the snapshot the
   main thread takes before the request thread aggregates.

Each timing is the best of ``--rounds`` runs (default 2). Goal: (2) ÷ (1) ≤ 3.

Run: ``.venv/bin/python scripts/bench_aggregate.py [--files N] [--rounds R]``
"""

from __future__ import annotations

import argparse
import ast
import contextlib
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


def corpus(minimum: int) -> list[Path]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in stdlib.rglob("*.py") if "site-packages" not in p.parts and p.is_file())
    if len(files) < minimum:
        purelib = Path(sysconfig.get_paths()["purelib"])
        extra = sorted(p for p in purelib.rglob("*.py") if p.is_file())
        files += extra[: minimum - len(files)]
    return files[:minimum]


def bare_parse(sources: list[str]) -> float:
    started = time.perf_counter()
    for text in sources:
        with contextlib.suppress(SyntaxError, ValueError):
            ast.parse(text)
    return time.perf_counter() - started


def read_and_parse(files: list[Path]) -> float:
    started = time.perf_counter()
    for path in files:
        with contextlib.suppress(SyntaxError, ValueError):
            ast.parse(path.read_bytes().decode("utf-8", "replace"))
    return time.perf_counter() - started


def skeleton_aggregation(files: list[Path], cache: FileCache) -> tuple[float, str]:
    view = ViewSpec(ViewMode.SKELETON)
    started = time.perf_counter()
    items = [FileItem.load(path, path.as_posix(), view) for path in files]
    markdown = aggregate(items, Strategy.FULL, cache=cache).markdown
    return time.perf_counter() - started, markdown


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    files = corpus(args.files)
    sources = [p.read_bytes().decode("utf-8", "replace") for p in files]  # also warms the page cache
    lines = sum(s.count("\n") for s in sources)
    print(f"corpus: {len(files):,} Python files, {lines:,} lines, {sum(map(len, sources)) / 1e6:.1f} M chars")

    parse_s = read_parse_s = cold_s = warm_s = float("inf")
    markdown = ""
    for _ in range(args.rounds):
        parse_s = min(parse_s, bare_parse(sources))
        read_parse_s = min(read_parse_s, read_and_parse(files))
        cache = FileCache(max_trees=32, max_view_chars=256_000_000)
        elapsed, markdown = skeleton_aggregation(files, cache)
        cold_s = min(cold_s, elapsed)
        warm_s = min(warm_s, skeleton_aggregation(files, cache)[0])
    stats = cache.stats()
    snapshot_s = snapshot_cost()

    print(f"bare ast.parse (texts in memory)      {parse_s:8.3f} s")
    print(f"read + ast.parse                      {read_parse_s:8.3f} s")
    size = f"{len(markdown) / 1e6:.1f} M chars of Markdown"
    print(f"skeleton aggregation, cold cache      {cold_s:8.3f} s   -> {size}")
    print(f"re-aggregation, cache hit             {warm_s:8.3f} s   (views cached: {stats.views:,})")
    print(f"main-thread snapshot per Gen + Send   {snapshot_s * 1e6:8.1f} µs (median of 1,000)")
    print()
    ratio = cold_s / parse_s
    verdict = "met" if ratio <= 3 else "MISSED"
    print(f"skeleton aggregation / bare ast.parse      {ratio:5.2f}x  (goal <= 3: {verdict})")
    print(f"skeleton aggregation / read + ast.parse    {cold_s / read_parse_s:5.2f}x")
    print(f"cache-hit re-aggregation / cold            {warm_s / cold_s:5.2f}x")
    print(f"cache-hit re-aggregation / bare ast.parse  {warm_s / parse_s:5.2f}x")
    print(f"main-thread snapshot / 16.7 ms frame       {snapshot_s / (1 / 60):8.5f}x")


if __name__ == "__main__":
    main()
