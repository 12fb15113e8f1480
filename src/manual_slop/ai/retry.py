"""Retrying a provider call: exponential backoff with jitter, ``Retry-After``, at most 3 retries.

Only a :class:`~manual_slop.ai.errors.ProviderError` whose ``retryable`` is set is retried
(rate limits, network failures, 5xx, 529). A ``Retry-After`` the server sends is honoured
when it is no longer than ``max_retry_after``; a longer one ends the attempts at once
(the fallback chain, if any, takes over) instead of freezing the request for minutes.
With ``deadline_s`` set, no retry is made whose wait would end past the deadline (counted from
the first attempt): a call then ends within ``deadline_s`` plus one attempt's timeout.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from manual_slop.ai.errors import ProviderError

__all__ = ["RetryPolicy", "call_with_retries", "parse_retry_after"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to wait between attempts."""

    max_retries: int = 3
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0
    max_retry_after_s: float = 60.0
    jitter: float = 0.25  # +/- this fraction of the computed delay
    deadline_s: float | None = None  # no retry starts after this long from the first attempt

    def delay(self, retry: int, error: ProviderError, rng: random.Random) -> float | None:
        """Seconds to wait before retry number ``retry`` (1-based); None: do not retry."""
        if not error.retryable or retry > self.max_retries:
            return None
        if error.retry_after is not None:
            if error.retry_after > self.max_retry_after_s:
                return None
            return max(0.0, error.retry_after)
        delay = min(self.max_delay_s, self.base_delay_s * 2 ** (retry - 1))
        return max(0.0, delay * (1.0 + rng.uniform(-self.jitter, self.jitter)))


def call_with_retries(
    call: Callable[[], T],
    policy: RetryPolicy,
    *,
    on_retry: Callable[[ProviderError, int, float], None] | None = None,
    wait: Callable[[float], bool] | None = None,
    rng: random.Random | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """``call()`` until it succeeds, fails for good, the retries are used up or the next retry
    would start past ``policy.deadline_s``.

    ``wait(seconds)`` sleeps and returns True when the wait was interrupted (then the
    last error is raised); ``on_retry(error, retry, delay)`` is told before each wait.
    """
    sleeper = wait or _sleep
    retry = 0
    started = clock() if policy.deadline_s is not None else 0.0
    while True:
        try:
            return call()
        except ProviderError as error:
            retry += 1
            rng = rng or random.Random()  # made on the first failure only: seeding costs ~20 us
            delay = policy.delay(retry, error, rng)
            if delay is None:
                raise
            if policy.deadline_s is not None and clock() - started + delay >= policy.deadline_s:
                raise  # the retry would begin too late: the caller's deadline wins over another try
            if on_retry is not None:
                on_retry(error, retry, delay)
            if sleeper(delay):
                raise


def _sleep(seconds: float) -> bool:
    time.sleep(seconds)
    return False


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds: a number of seconds or an HTTP date; None when absent or bad."""
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, seconds) if seconds == seconds else None  # NaN guard
