"""The reliability suites (issue #22): each runs a fast variant in ``make test`` and a long one in
``make reliability`` (``SLOP_RELIABILITY=long``) or ``make soak``.

A suite reports its counts with the ``summary`` fixture: one line, shown in pytest's terminal
summary under "reliability summary" and appended to ``tests/artifacts/reliability.txt`` for the
docs' figures. The line travels in the test report's ``user_properties`` (xdist carries them
from its workers), and the section is printed by ``tests/conftest.py``: under xdist the
controller never collects, so only the top conftest's hooks run there.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

LONG = os.environ.get("SLOP_RELIABILITY", "") == "long"
# where the lines are kept for the docs (a test of this file points it elsewhere)
ARTIFACT = Path(
    os.environ.get("SLOP_RELIABILITY_ARTIFACT")
    or Path(__file__).resolve().parents[1] / "artifacts" / "reliability.txt"
)
SUMMARY_KEY = "reliability_summary"  # tests/conftest.py prints the lines under this key


def scale(fast: int, long: int) -> int:
    """How many rounds a suite runs: ``long`` under ``make reliability``, else ``fast``."""
    return long if LONG else fast


@pytest.fixture
def summary(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """``summary("R1 clutch fuzz: 1000 calls, 0 undecided …")``: the suite's one line."""

    def record(line: str) -> None:
        variant = "long" if LONG else "fast"
        request.node.user_properties.append((SUMMARY_KEY, f"{line} [{variant}]"))
        ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
        with ARTIFACT.open("a", encoding="utf-8") as handle:
            handle.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {line} [{variant}]\n")

    return record
