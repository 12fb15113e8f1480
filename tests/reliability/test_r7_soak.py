"""R7 soak: one headless app (``sloppy.py --headless``, a real subprocess) driven by the
simulation harness in a loop for ``SLOP_SOAK_S`` seconds; its memory and threads must stay flat.

The scenarios run attached to the one app (``Target.attach``), one after another, in a fixed
rotation, as long as time is left; after each one the app's RSS and thread count are sampled
(psutil, from outside — never from inside the app). Warm-up is the first 20 % of the time and at
least one full rotation, 18 in the long variant (the first pass imports the SDKs, later ones
fill the bounded caches). The verdict:

- every scenario passed (a failed one is reported with its timeline);
- RSS at the end < 110 % of RSS at the end of warm-up;
- the thread count after every loop past warm-up within ``THREAD_TOLERANCE`` of its warm-up value;
- no ERROR, CRITICAL or Traceback in the session's ``app.log``;
- the app stops cleanly (``POST /api/shutdown``) and leaves no process behind.

Length: ``SLOP_SOAK_S`` (``make soak``: 3600), else 300 s in ``make reliability``
(``SLOP_RELIABILITY=long``) and 8 s in ``make test`` — the issue asks 5 minutes in the fast
variant, which the CI budget cannot hold (docs/guide_reliability.md).

The checker (:func:`soak_problems`) is a pure function, proved on planted stand-ins below: a
growing RSS, a thread that leaks per loop, an error in the log.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from simulation import LaunchedApp, LaunchMode, Target
from simulation.launcher import AppSpec
from simulation.runner import SCENARIOS

from manual_slop.hooks import ApiHookClient
from tests.helpers import no_new_children
from tests.reliability.conftest import LONG, scale

SOAK_S = float(os.environ.get("SLOP_SOAK_S") or scale(8, 300))  # make test: CI's budget
WARMUP_SHARE = 0.2
RSS_GROWTH_MAX = 0.10
THREAD_TOLERANCE = 2
# Scenarios that can run again and again against one app. Not here: sim_mma and sim_plan (no
# action deletes a track, so each run leaves one behind — growth by design, and a second run
# finds the first one's "Login form"), sim_ai_settings (its sends and restart need a launched
# app). Only the long variant runs sim_context and sim_faults: sim_faults waits out the client's
# backoff (3-10 s a run), and every sim_context run is a new project folder whose parsed files
# fill the bounded buffers (the AST cache's trees, bounded by source size since issue #22; the
# event journal, the log views) for several rotations — longer than the fast variant lasts.
# The long variant's warm-up covers them (docs/guide_reliability.md, R7).
ROTATION: tuple[str, ...] = ("tools", "execution", "discussion") + (("context", "faults") if LONG else ())
WARMUP_ROTATIONS = 18 if LONG else 1  # at least this many full rotations before the baseline
AFTER_WARMUP_ROTATIONS = 3 if LONG else 2  # and at least this many after it, however slow the machine
WARMUP_SAMPLES = WARMUP_ROTATIONS * len(ROTATION)
# app.log lines are "<date> <time> <thread> <logger> <LEVEL> <message>" (cli.py): the level is the
# first level word after the time — a message may itself say "API ERROR" (sim_faults' 500s).
_LOG_LEVEL = re.compile(r"^\d{4}-\d\d-\d\d [\d:,.]+ .*? (DEBUG|INFO|WARNING|ERROR|CRITICAL) ")
TOKEN = "r7-soak-token"
MB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Sample:
    """The app after one scenario: seconds since the loop began, RSS in bytes, threads."""

    t: float
    rss: int
    threads: int
    loop: int  # 1-based rotation the scenario belonged to
    scenario: str


def warmup_index(samples: Sequence[Sample], warmup_s: float, min_samples: int = WARMUP_SAMPLES) -> int:
    """The sample that ends warm-up: the first at or after ``warmup_s`` that is also at least the
    ``min_samples``-th (every scenario has run, the bounded caches are full); -1 when none is."""
    for i, sample in enumerate(samples):
        if sample.t >= warmup_s and i + 1 >= min_samples:
            return i
    return -1


def is_error_line(line: str) -> bool:
    """An ERROR or CRITICAL record of app.log, or a traceback (also one logged with a warning)."""
    level = _LOG_LEVEL.match(line)
    return (
        level is not None and level[1] in ("ERROR", "CRITICAL")
    ) or "Traceback (most recent call last)" in line


def soak_problems(
    samples: Sequence[Sample], warmup_s: float, log_text: str, min_samples: int = WARMUP_SAMPLES
) -> list[str]:
    """What broke the soak's promises (empty: they held)."""
    problems: list[str] = []
    base_i = warmup_index(samples, warmup_s, min_samples)
    if base_i < 0 or base_i == len(samples) - 1:
        problems.append(f"no sample after warm-up ({len(samples)} samples, warm-up {warmup_s:.1f} s)")
    else:
        base, end = samples[base_i], samples[-1]
        growth = (end.rss - base.rss) / base.rss
        if growth >= RSS_GROWTH_MAX:
            problems.append(
                f"RSS grew {growth:+.1%} after warm-up: {base.rss / MB:.1f} MB at {base.t:.1f} s -> "
                f"{end.rss / MB:.1f} MB at {end.t:.1f} s (limit {RSS_GROWTH_MAX:+.0%})"
            )
        off = [s for s in samples[base_i + 1 :] if abs(s.threads - base.threads) > THREAD_TOLERANCE]
        if off:
            problems.append(
                f"thread count not flat: {base.threads} after warm-up, then "
                + ", ".join(f"{s.threads} (loop {s.loop}, after {s.scenario})" for s in off[:6])
            )
    bad = [line for line in log_text.splitlines() if is_error_line(line)]
    if bad:
        problems.append(f"app.log has {len(bad)} error line(s), first: {bad[0][:300]}")
    return problems


def describe(samples: Sequence[Sample], warmup_s: float, shown: int = 10) -> str:
    """The figures: RSS and threads at warm-up's end and at the end, and ``shown`` samples."""
    if not samples:
        return "no samples"
    base = samples[max(warmup_index(samples, warmup_s), 0)]  # the first sample when warm-up never ended
    end = samples[-1]
    step = max(1, len(samples) // shown)
    picked = [*samples[::step][: shown - 1], end]
    threads = [s.threads for s in samples]
    return (
        f"RSS {base.rss / MB:.1f} -> {end.rss / MB:.1f} MB ({(end.rss - base.rss) / base.rss:+.1%}) "
        f"after warm-up (ended at {base.t:.0f} s), threads {base.threads} -> {end.threads} "
        f"(min {min(threads)}, max {max(threads)}); samples (t s: MB/threads): "
        + ", ".join(f"{s.t:.0f}: {s.rss / MB:.0f}/{s.threads}" for s in dict.fromkeys(picked))
    )


def drive(url: str, pid: int, seconds: float, workroot: Path, on_fail: Callable[[str], None]) -> list[Sample]:
    """Run the rotation against the app at ``url`` until ``seconds`` have passed (the running
    rotation is finished) and warm-up plus ``AFTER_WARMUP_ROTATIONS`` rotations are done; a
    sample after each scenario."""
    process = psutil.Process(pid)
    samples: list[Sample] = []
    start = time.monotonic()
    loop = 0
    while time.monotonic() - start < seconds or loop < WARMUP_ROTATIONS + AFTER_WARMUP_ROTATIONS:
        loop += 1
        for name in ROTATION:
            result = SCENARIOS[name](Target.attach(url, TOKEN), workroot=workroot).execute()
            if not result.passed:
                on_fail(result.report())
            samples.append(
                Sample(time.monotonic() - start, process.memory_info().rss, process.num_threads(), loop, name)
            )
    return samples


# the soak's own length, plus the warm-up rotations a loaded machine may add, start and stop
@pytest.mark.timeout(2 * SOAK_S + 300)
def test_r7_soak_memory_and_threads_stay_flat(tmp_path: Path, summary: Callable[[str], None]) -> None:
    app = LaunchedApp(tmp_path / "app", AppSpec(token=TOKEN), LaunchMode.HEADLESS)
    with no_new_children():
        url = app.start()
        try:
            assert app.pid is not None
            with ApiHookClient(url, TOKEN) as client:
                app_log = Path(client.get_value("session_dir")) / "app.log"
            samples = drive(url, app.pid, SOAK_S, tmp_path / "runs", pytest.fail)
        finally:
            app.stop()  # raises when the stop was not clean
    warmup_s = WARMUP_SHARE * SOAK_S
    log_text = app_log.read_text(encoding="utf-8", errors="replace")
    problems = soak_problems(samples, warmup_s, log_text)
    loops = samples[-1].loop if samples else 0
    errors = sum(map(is_error_line, log_text.splitlines()))
    summary(
        f"R7 soak: {SOAK_S:.0f} s, {loops} loops, {len(samples)} scenarios passed, "
        f"{errors} app.log errors; {describe(samples, warmup_s)}"
    )
    assert not problems, "R7 soak failed:\n  " + "\n  ".join(problems) + "\n" + describe(samples, warmup_s)


# -- the checker, proved on planted stand-ins -------------------------------------------------


def _series(rss_mb: Sequence[float], threads: Sequence[int]) -> list[Sample]:
    n = len(ROTATION)
    return [
        Sample(float(i), int(mb * MB), th, i // n + 1, ROTATION[i % n])
        for i, (mb, th) in enumerate(zip(rss_mb, threads, strict=True))
    ]


def test_soak_checker_passes_a_flat_app() -> None:
    samples = _series([80, 240, 241, 243, 242, 244, 245, 244, 246, 245], [4, 8, 8, 8, 9, 8, 8, 8, 8, 8])
    assert soak_problems(samples, 2, "x INFO started\ny WARNING slow\n", min_samples=3) == []


def test_soak_checker_catches_a_leak_threads_and_log_errors() -> None:
    leak = _series([80 + 30 * i for i in range(10)], [8] * 10)
    threads = _series([240] * 10, [8, 8, 8, 8, 9, 10, 11, 12, 13, 14])
    log = (
        "2026-11-27 08:49:46,815 slop-asyncio manual_slop.request_flow WARNING request 28 failed: "
        "[OPENAI_COMPATIBLE API ERROR (HTTP 500)]\n"  # a warning about an error: not one
        "2026-11-27 08:49:47,001 Thread-3 (run) manual_slop.x ERROR boom\n"
    )
    flat = _series([240] * 10, [8] * 10)
    assert "RSS grew" in soak_problems(leak, 2, "", min_samples=3)[0]
    rising = soak_problems(threads, 2, "", min_samples=3)
    assert "thread count not flat: 8 after warm-up, then 11" in rising[0]
    assert "app.log has 1 error line(s)" in soak_problems(flat, 2, log, min_samples=3)[0]
    assert "no sample after warm-up" in soak_problems(leak[:3], 2, "", min_samples=3)[0]  # too short to judge
    assert "no sample after warm-up" in soak_problems(flat, 2, "", min_samples=15)[0]  # caches not yet full
