"""The suites' summary line reaches the terminal summary, also from an xdist worker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_suite_line_is_printed_in_the_terminal_summary(tmp_path: Path) -> None:
    probe = tmp_path / "test_probe.py"
    probe.write_text("def test_probe(summary):\n    summary('R0 probe: 3 rounds, 0 failures')\n")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.reliability.conftest",
         "-n", "1", "--rootdir", str(tmp_path), str(probe)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "SLOP_RELIABILITY_ARTIFACT": str(tmp_path / "lines.txt")},
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:]
    after = run.stdout.split("reliability summary", 1)
    assert len(after) == 2 and "R0 probe: 3 rounds, 0 failures [fast]" in after[1], run.stdout[-2000:]
    assert "R0 probe: 3 rounds, 0 failures [fast]" in (tmp_path / "lines.txt").read_text()
