"""The recovery orchestrator: which strategy comes next for a failure, and when to ask a human.

One :class:`RecoveryOrchestrator` per MMA run (thread-safe). For each failure of a key (a
ticket) it looks the class up in :data:`~manual_slop.governance.severity.TABLE`, raises the
severity one step for every ``repeat_threshold`` failures of the same class of that key
within ``window_s`` (escalation by frequency: a ticket that keeps failing the same way gets
no more blind retries, even after a human granted it fresh ones), and walks the key's ladder
from where it stopped, passing over what the severity no longer allows and what cannot be
done now (no attempts left, no replans left, no second provider). When nothing is left the
answer is ``ask_human``. Every step is remembered, so the ``recovery`` dialog can show what
was tried.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass

from manual_slop.governance.severity import (
    ALLOWED,
    ATTEMPTS,
    TABLE,
    FailureClass,
    Severity,
    Strategy,
    raised,
)

__all__ = ["RecoveryOrchestrator", "RecoveryStep"]


@dataclass(frozen=True, slots=True)
class RecoveryStep:
    """What to do about one failure."""

    strategy: Strategy
    failure: FailureClass
    severity: Severity  # after escalation by frequency
    base_severity: Severity  # the table's
    backoff_s: float  # wait this long first (retry only)
    tried: tuple[str, ...]  # every step taken for this key so far, this one last

    def to_dict(self) -> dict[str, object]:
        return {
            "strategy": str(self.strategy),
            "failure": str(self.failure),
            "severity": str(self.severity),
            "base_severity": str(self.base_severity),
            "backoff_s": self.backoff_s,
            "tried": list(self.tried),
        }


class RecoveryOrchestrator:
    """Next strategies per key, escalation by frequency per failure class."""

    def __init__(
        self,
        *,
        repeat_threshold: int = 3,
        window_s: float = 600.0,
        backoff_base_s: float = 1.0,
        backoff_max_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if repeat_threshold < 1 or window_s <= 0 or backoff_base_s < 0 or backoff_max_s < backoff_base_s:
            raise ValueError(
                "recovery: repeat_threshold >= 1, window_s > 0, 0 <= backoff_base_s <= backoff_max_s"
            )
        self.repeat_threshold = repeat_threshold
        self.window_s = window_s
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, FailureClass], deque[float]] = defaultdict(deque)
        self._position: dict[str, int] = defaultdict(int)
        self._retries: dict[str, int] = defaultdict(int)
        self._tried: dict[str, list[str]] = defaultdict(list)

    def next_step(
        self,
        key: str,
        failure: FailureClass,
        *,
        attempts_left: bool = True,
        replan_left: bool = False,
        can_switch: bool = False,
    ) -> RecoveryStep:
        """The strategy for this failure of ``key`` (also counted for escalation)."""
        row = TABLE[failure]
        with self._lock:
            now = self._clock()
            seen = self._seen[key, failure]
            seen.append(now)
            while seen and now - seen[0] > self.window_s:
                seen.popleft()
            severity = raised(row.severity, len(seen) // self.repeat_threshold)
            allowed = ALLOWED[severity]
            strategy = Strategy.ASK_HUMAN
            ladder = row.strategies
            for index in range(self._position[key], len(ladder)):
                candidate = ladder[index]
                possible = (
                    candidate in allowed
                    and (candidate not in ATTEMPTS or attempts_left)
                    and (candidate is not Strategy.REPLAN or replan_left)
                    and (candidate is not Strategy.SWITCH_PROVIDER or can_switch)
                )
                if possible:
                    strategy = candidate
                    self._position[key] = index + 1
                    break
            else:
                self._position[key] = len(ladder)
            backoff = 0.0
            if strategy is Strategy.RETRY:
                backoff = min(self.backoff_max_s, self.backoff_base_s * 2 ** self._retries[key])
                self._retries[key] += 1
            self._tried[key].append(f"{strategy} after {failure} ({severity})")
            return RecoveryStep(strategy, failure, severity, row.severity, backoff, tuple(self._tried[key]))

    def restart(self, key: str) -> None:
        """A human gave ``key`` another go: its ladder starts again (what was tried is kept)."""
        with self._lock:
            self._position.pop(key, None)
            self._retries.pop(key, None)
            self._tried[key].append("retry granted by a human")

    def tried(self, key: str) -> tuple[str, ...]:
        with self._lock:
            return tuple(self._tried.get(key, ()))
