"""A per-tool circuit breaker: a tool that keeps failing is switched off for a while.

States::

    closed --(threshold consecutive failures)--> open --(cooldown passed)--> half_open
    half_open --(the one trial call succeeds)--> closed
    half_open --(it fails)--> open again (a fresh cooldown)

Only failures of the tool itself count (timeouts, its environment failing, bugs): a model
asking for a missing file is not the tool's fault and neither resets nor advances the count.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from enum import StrEnum

__all__ = ["BreakerState", "CircuitBreaker"]


class BreakerState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class CircuitBreaker:
    """Counts consecutive failures of one tool; thread-safe."""

    def __init__(
        self, threshold: int = 5, cooldown_s: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if threshold < 1 or cooldown_s < 0:
            raise ValueError("threshold must be >= 1 and cooldown_s >= 0")
        self.threshold = threshold
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None
        self._trial_running = False

    @property
    def state(self) -> BreakerState:
        with self._lock:
            return self._state_locked()

    def _state_locked(self) -> BreakerState:
        if self._opened_at is None:
            return BreakerState.CLOSED
        if self._clock() - self._opened_at >= self.cooldown_s:
            return BreakerState.HALF_OPEN
        return BreakerState.OPEN

    def acquire(self) -> float | None:
        """None when a call may run; otherwise the seconds until the breaker half-opens.

        In the half-open state exactly one trial call is let through at a time.
        """
        with self._lock:
            state = self._state_locked()
            if state is BreakerState.CLOSED:
                return None
            if state is BreakerState.HALF_OPEN and not self._trial_running:
                self._trial_running = True
                return None
            assert self._opened_at is not None
            return max(0.0, self.cooldown_s - (self._clock() - self._opened_at))

    def record_success(self) -> None:
        with self._lock:
            self._failures = 0
            self._opened_at = None
            self._trial_running = False

    def record_failure(self) -> None:
        with self._lock:
            self._failures += 1
            if self._trial_running or self._failures >= self.threshold:
                self._opened_at = self._clock()
            self._trial_running = False

    def record_neutral(self) -> None:
        """A call that says nothing about the tool's health (bad input, denial, rejection)."""
        with self._lock:
            self._trial_running = False

    @property
    def consecutive_failures(self) -> int:
        with self._lock:
            return self._failures
