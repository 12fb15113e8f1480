"""The failure table and the recovery orchestrator: every class follows its ladder, severity
rises with repetition, and everything ends with a human."""

from __future__ import annotations

import pytest

from manual_slop.ai.errors import ConfigurationError, ProviderError, WireError
from manual_slop.governance.recovery import RecoveryOrchestrator
from manual_slop.governance.severity import (
    ALLOWED,
    ATTEMPTS,
    TABLE,
    FailureClass,
    Severity,
    Strategy,
    classify_error,
    raised,
)
from manual_slop.mma.errors import CycleDetected


def walk(orchestrator: RecoveryOrchestrator, key: str, failure: FailureClass, **can: bool) -> list[Strategy]:
    """Fail ``key`` again and again until a human is asked; the strategies in order."""
    steps: list[Strategy] = []
    for _ in range(20):
        steps.append(orchestrator.next_step(key, failure, **can).strategy)
        if steps[-1] is Strategy.ASK_HUMAN:
            return steps
    raise AssertionError(f"{failure}: never asked a human: {steps}")


@pytest.mark.parametrize("failure", list(FailureClass))
def test_every_class_follows_its_ladder_and_ends_with_a_human(failure: FailureClass) -> None:
    orchestrator = RecoveryOrchestrator(repeat_threshold=1000)  # the table alone, no escalation
    row = TABLE[failure]
    everything = {"attempts_left": True, "replan_left": True, "can_switch": True}
    expected = [s for s in row.strategies if s in ALLOWED[row.severity]]
    if not expected or expected[-1] is not Strategy.ASK_HUMAN:
        expected.append(Strategy.ASK_HUMAN)
    assert walk(orchestrator, "t", failure, **everything) == expected


@pytest.mark.parametrize("failure", list(FailureClass))
def test_without_attempts_replans_or_a_second_provider_only_a_human_is_left(failure: FailureClass) -> None:
    orchestrator = RecoveryOrchestrator(repeat_threshold=1000)
    nothing = {"attempts_left": False, "replan_left": False, "can_switch": False}
    assert walk(orchestrator, "t", failure, **nothing) == [Strategy.ASK_HUMAN]


def test_the_table_is_complete_and_every_ladder_ends_by_asking() -> None:
    assert set(TABLE) == set(FailureClass)
    for failure, row in TABLE.items():
        assert not row.strategies or row.strategies[-1] is Strategy.ASK_HUMAN, failure
        assert row.meaning
    assert ALLOWED[Severity.CRITICAL] == {Strategy.ASK_HUMAN, Strategy.ABORT}
    assert not ALLOWED[Severity.DEGRADED] & {Strategy.RETRY, Strategy.TIER4_QA}
    assert Strategy.REPLAN not in ATTEMPTS and Strategy.ESCALATE_MODEL in ATTEMPTS


def test_repetition_raises_the_severity_one_step_per_threshold() -> None:
    assert raised(Severity.INFO, 1) is Severity.RECOVERABLE
    assert raised(Severity.DEGRADED, 5) is Severity.CRITICAL
    orchestrator = RecoveryOrchestrator(repeat_threshold=2)
    first = orchestrator.next_step("a", FailureClass.WORKER_FAILED, attempts_left=True, replan_left=True)
    second = orchestrator.next_step("a", FailureClass.WORKER_FAILED, attempts_left=True, replan_left=True)
    assert (first.strategy, first.severity) == (Strategy.TIER4_QA, Severity.RECOVERABLE)
    # raised to degraded: no second Tier 4 round, the replan comes next
    assert (second.strategy, second.severity, second.base_severity) == (
        Strategy.REPLAN,
        Severity.DEGRADED,
        Severity.RECOVERABLE,
    )
    other = orchestrator.next_step("b", FailureClass.WORKER_FAILED, attempts_left=True)
    assert other.severity is Severity.RECOVERABLE  # counted per ticket


def test_failures_outside_the_window_are_forgotten() -> None:
    now = [0.0]
    orchestrator = RecoveryOrchestrator(repeat_threshold=2, window_s=60.0, clock=lambda: now[0])
    orchestrator.next_step("a", FailureClass.TIMEOUT)
    now[0] = 61.0
    assert orchestrator.next_step("a", FailureClass.TIMEOUT).severity is Severity.RECOVERABLE
    now[0] = 62.0
    assert orchestrator.next_step("a", FailureClass.TIMEOUT).severity is Severity.DEGRADED


def test_retries_back_off_exponentially_up_to_the_cap() -> None:
    orchestrator = RecoveryOrchestrator(repeat_threshold=1000, backoff_base_s=1.0, backoff_max_s=1.5)
    steps = [orchestrator.next_step("a", FailureClass.PROVIDER_NETWORK) for _ in range(2)]
    assert [(s.strategy, s.backoff_s) for s in steps] == [(Strategy.RETRY, 1.0), (Strategy.RETRY, 1.5)]


def test_a_human_retry_restarts_the_ladder_and_keeps_the_history() -> None:
    orchestrator = RecoveryOrchestrator(repeat_threshold=1000)
    walk(orchestrator, "a", FailureClass.WORKER_BLOCKED, replan_left=True)
    orchestrator.restart("a")
    step = orchestrator.next_step("a", FailureClass.WORKER_BLOCKED, replan_left=True)
    assert step.strategy is Strategy.REPLAN
    assert step.tried == (
        "replan after worker_blocked (degraded)",
        "ask_human after worker_blocked (degraded)",
        "retry granted by a human",
        "replan after worker_blocked (degraded)",
    )


@pytest.mark.parametrize(
    ("error", "failure"),
    [
        (ProviderError("rate_limit", "x"), FailureClass.PROVIDER_RATE_LIMIT),
        (ProviderError("quota", "x"), FailureClass.PROVIDER_QUOTA),
        (ProviderError("auth", "x"), FailureClass.PROVIDER_AUTH),
        (ProviderError("balance", "x"), FailureClass.PROVIDER_BALANCE),
        (ProviderError("network", "x"), FailureClass.PROVIDER_NETWORK),
        (ProviderError("unknown", "x", status=503), FailureClass.PROVIDER_UNKNOWN),
        (ConfigurationError("no key"), FailureClass.PROVIDER_AUTH),
        (WireError("garbage"), FailureClass.PROVIDER_UNKNOWN),
        (TimeoutError("slow"), FailureClass.TIMEOUT),
        (ConnectionResetError("reset"), FailureClass.PROVIDER_NETWORK),
        (CycleDetected(["a", "b", "a"]), FailureClass.VALIDATION_ERROR),
        (RuntimeError("bug"), FailureClass.WORKER_EXCEPTION),
    ],
)
def test_exceptions_are_classified(error: BaseException, failure: FailureClass) -> None:
    assert classify_error(error) is failure


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="repeat_threshold >= 1"):
        RecoveryOrchestrator(repeat_threshold=0)
