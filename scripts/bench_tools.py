#!/usr/bin/env python3
"""Concurrency and overhead of the tool registry, measured side by side in one run.

1. Concurrency: three concurrent 200 ms tool calls (``execute_many``) divided by one such
   call (``execute``) — goal <= 1.2 (sequential execution would be 3.0). Measured for a
   handler that sleeps and for ``run_shell "sleep 0.2"`` (real subprocesses, auto-approved).
2. Overhead: the pipeline around a trivial handler (validation, path check, daemon thread,
   output cap, log entry) versus calling the same handler directly, and ``read_file`` on a
   small file versus ``Path.read_text``.

Run: ``.venv/bin/python scripts/bench_tools.py`` — prints medians and ratios.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from manual_slop.tools import (
    ApprovalResult,
    ExecutionContext,
    Tool,
    ToolCall,
    ToolRegistry,
    default_registry,
)

ROUNDS = 7
OVERHEAD_CALLS = 2_000
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def median_seconds(fn: Callable[[], Any], rounds: int = ROUNDS) -> float:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def concurrency(
    registry: ToolRegistry, ctx: ExecutionContext, call: Callable[[int], ToolCall]
) -> tuple[float, float]:
    one = median_seconds(lambda: registry.execute(call(0), ctx))
    three = median_seconds(lambda: registry.execute_many([call(i) for i in range(3)], ctx))
    return one, three


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        (base / "small.txt").write_text("hello\n" * 100)
        ctx = ExecutionContext.for_directory(
            base, pre_tool_callback=lambda r: ApprovalResult(True, r.call.args)
        )

        sleeper = Tool("sleep_200ms", "Sleep 200 ms.", SCHEMA, lambda args, run: time.sleep(0.2) or "slept")
        trivial = Tool("trivial", "Return the number.", SCHEMA, lambda args, run: str(args["n"]))
        registry = ToolRegistry([sleeper, trivial])
        builtin = default_registry(with_powershell=False)

        print("concurrency: three concurrent 200 ms calls / one call (goal <= 1.2)")
        rows = [
            ("handler sleeping 200 ms", registry, lambda i: ToolCall.new("sleep_200ms", {"n": i})),
            ("run_shell 'sleep 0.2'", builtin, lambda i: ToolCall.new("run_shell", {"script": "sleep 0.2"})),
        ]
        for label, reg, make in rows:
            one, three = concurrency(reg, ctx, make)
            timing = f"one {one * 1000:7.1f} ms   three {three * 1000:7.1f} ms"
            print(f"  {label:<26} {timing}   ratio {three / one:.2f}")

        print(f"\noverhead per call (median of {ROUNDS} rounds of {OVERHEAD_CALLS} calls)")

        def direct() -> None:
            for n in range(OVERHEAD_CALLS):
                trivial.handler({"n": n}, None)  # type: ignore[arg-type]

        def through_registry() -> None:
            for n in range(OVERHEAD_CALLS):
                registry.execute(ToolCall.new("trivial", {"n": n}), ctx)

        def read_direct() -> None:
            for _ in range(OVERHEAD_CALLS):
                (base / "small.txt").read_text()

        def read_tool() -> None:
            for _ in range(OVERHEAD_CALLS):
                builtin.execute(ToolCall.new("read_file", {"path": "small.txt"}), ctx)

        for label, bare, tool in (
            ("trivial handler", direct, through_registry),
            ("read 600-byte file", read_direct, read_tool),
        ):
            bare_s = median_seconds(bare, 3) / OVERHEAD_CALLS
            tool_s = median_seconds(tool, 3) / OVERHEAD_CALLS
            print(
                f"  {label:<26} direct {bare_s * 1e6:8.1f} µs   registry {tool_s * 1e6:8.1f} µs   "
                f"ratio {tool_s / bare_s:.0f}x"
            )


if __name__ == "__main__":
    main()
