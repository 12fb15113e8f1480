"""ProviderError defaults and messages; the retry policy; Retry-After parsing."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from manual_slop.ai.errors import ErrorKind, ProviderError
from manual_slop.ai.retry import RetryPolicy, call_with_retries, parse_retry_after


@pytest.mark.parametrize(
    ("kind", "status", "retryable"),
    [
        (ErrorKind.RATE_LIMIT, 429, True),
        (ErrorKind.NETWORK, None, True),
        (ErrorKind.UNKNOWN, 500, True),
        (ErrorKind.UNKNOWN, 529, True),
        (ErrorKind.UNKNOWN, 400, False),
        (ErrorKind.AUTH, 401, False),
        (ErrorKind.QUOTA, 429, False),
        (ErrorKind.BALANCE, 402, False),
    ],
)
def test_what_is_retried(kind: ErrorKind, status: int | None, retryable: bool) -> None:
    assert ProviderError(kind, "x", status=status).retryable is retryable


def test_ui_message_names_provider_kind_status_and_cause() -> None:
    error = ProviderError("auth", "anthropic", ValueError("bad key"), status=401)
    message = error.ui_message()
    assert message.startswith("[ANTHROPIC AUTH / API KEY ERROR (HTTP 401)]")
    assert "ValueError: bad key" in message and "credentials.toml" in message
    assert error.kind is ErrorKind.AUTH and error.original.args == ("bad key",)


def test_backoff_doubles_with_jitter_and_stops_after_max_retries() -> None:
    policy = RetryPolicy(max_retries=3, base_delay_s=1.0, max_delay_s=3.0, jitter=0.25)
    error = ProviderError("network", "x")
    rng = random.Random(1)
    delays = [policy.delay(n, error, rng) for n in (1, 2, 3, 4)]
    assert delays[3] is None
    assert 0.75 <= delays[0] <= 1.25 and 1.5 <= delays[1] <= 2.5 and 2.25 <= delays[2] <= 3.75


def test_retry_after_wins_and_a_long_one_ends_the_attempts() -> None:
    policy = RetryPolicy(max_retry_after_s=60)
    rng = random.Random(1)
    assert policy.delay(1, ProviderError("rate_limit", "x", retry_after=7.5), rng) == 7.5
    assert policy.delay(1, ProviderError("rate_limit", "x", retry_after=600), rng) is None
    assert policy.delay(1, ProviderError("auth", "x"), rng) is None


def test_call_with_retries_counts_waits_and_gives_up() -> None:
    calls, waits, told = [], [], []

    def failing() -> str:
        calls.append(1)
        raise ProviderError("network", "x")

    with pytest.raises(ProviderError):
        call_with_retries(
            failing,
            RetryPolicy(max_retries=3, base_delay_s=0.5, jitter=0.0),
            on_retry=lambda e, n, d: told.append((n, d)),
            wait=lambda s: waits.append(s) or False,
        )
    assert len(calls) == 4 and waits == [0.5, 1.0, 2.0] and [n for n, _ in told] == [1, 2, 3]


def test_an_interrupted_wait_raises_at_once() -> None:
    calls = []

    def failing() -> str:
        calls.append(1)
        raise ProviderError("network", "x")

    with pytest.raises(ProviderError):
        call_with_retries(failing, RetryPolicy(), wait=lambda s: True)
    assert len(calls) == 1


def test_no_retry_starts_past_the_deadline() -> None:
    """A timed-out call is not retried without end: with a deadline, the attempts stop before a
    retry that would begin past it (a fake clock: each attempt takes 0.3 s, each wait 0.1 s)."""
    now = [0.0]
    calls: list[float] = []

    def timing_out() -> str:
        calls.append(now[0])
        now[0] += 0.3
        raise ProviderError("network", "x", message="read timed out")

    def wait(seconds: float) -> bool:
        now[0] += seconds
        return False

    policy = RetryPolicy(max_retries=50, base_delay_s=0.1, max_delay_s=0.1, jitter=0.0, deadline_s=1.0)
    with pytest.raises(ProviderError, match="read timed out"):
        call_with_retries(timing_out, policy, wait=wait, clock=lambda: now[0])
    # attempts at 0.0, 0.4, 0.8; a fourth would start at 1.2 > 1.0
    assert calls == pytest.approx([0.0, 0.4, 0.8]) and now[0] == pytest.approx(1.1)


def test_success_after_a_failure() -> None:
    attempts = iter([ProviderError("rate_limit", "x", retry_after=0), "ok"])

    def flaky() -> str:
        item = next(attempts)
        if isinstance(item, Exception):
            raise item
        return item

    assert call_with_retries(flaky, RetryPolicy(), wait=lambda s: False) == "ok"


def test_parse_retry_after() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("0.25") == 0.25
    assert (
        parse_retry_after(None) is None
        and parse_retry_after("soon") is None
        and parse_retry_after("") is None
    )
    when = datetime.now(UTC) + timedelta(seconds=30)
    assert 25 <= parse_retry_after(format_datetime(when, usegmt=True)) <= 31
    assert parse_retry_after("-5") == 0.0
