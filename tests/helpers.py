"""Helpers shared by tests (import as ``from tests.helpers import ...``)."""

from __future__ import annotations

import time
from collections.abc import Callable

from manual_slop.controller import AppController


def pump_until(controller: AppController, predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    """Run frames on the calling thread until ``predicate()`` holds; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        controller.run_frame()
        if predicate():
            return
        controller.wait_for_work(0.01)
    raise AssertionError(f"condition not met within {timeout} s")
