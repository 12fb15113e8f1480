"""The failure table: every failure class, its severity, and the strategies tried for it.

This module is data. A failure — a provider error of some kind, a worker exception, a
``FAILED:`` answer, work left undone, a guard trip, an invalid plan — is classified into a
:class:`FailureClass` (:func:`classify_error` for exceptions); :data:`TABLE` gives its
:class:`Severity` and its ladder of :class:`Strategy` values, tried in order, one per failed
attempt. :data:`ALLOWED` says which strategies a severity still permits: a class raised to
``degraded`` by repetition gets no more blind retries, one raised to ``critical`` goes straight
to a human. ``ask_human`` ends every ladder, so nothing gives up without asking.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from manual_slop.ai.errors import ConfigurationError, ProviderError, WireError

__all__ = [
    "ALLOWED",
    "TABLE",
    "FailureClass",
    "Row",
    "Severity",
    "Strategy",
    "classify_error",
    "raised",
]


class Severity(StrEnum):
    INFO = "info"  # logged and counted; the run goes on (e.g. a tool error the model sees)
    RECOVERABLE = "recoverable"  # try again, perhaps differently
    DEGRADED = "degraded"  # no blind retry: change provider, model or plan
    CRITICAL = "critical"  # a human decides now


ORDER: tuple[Severity, ...] = tuple(Severity)


def raised(severity: Severity, steps: int = 1) -> Severity:
    """``severity`` moved ``steps`` up, at most to ``critical``."""
    return ORDER[min(ORDER.index(severity) + max(0, steps), len(ORDER) - 1)]


class Strategy(StrEnum):
    RETRY = "retry"  # the same attempt again, after a backoff
    # the next provider of ai.fallback: done inside the send by the client's fallback chain, so a
    # failure that reaches a ticket has been through it already and its ladder passes over it
    SWITCH_PROVIDER = "switch_provider"
    ESCALATE_MODEL = "escalate_model"  # the next attempt on the next Tier 3 model
    TIER4_QA = "tier4_qa"  # Tier 4 explains the failure (and may patch); then another attempt
    REPLAN = "replan"  # Tier 2 rewrites the remaining tickets (behind approval)
    SKIP = "skip"  # the ticket is marked done without its work; dependents go on
    ASK_HUMAN = "ask_human"  # a ``recovery`` dialog: retry, skip, edit the ticket or abort
    ABORT = "abort"  # the whole track stops


# strategies that are one more attempt of the same ticket (they spend its retries)
ATTEMPTS = frozenset({Strategy.RETRY, Strategy.SWITCH_PROVIDER, Strategy.ESCALATE_MODEL, Strategy.TIER4_QA})


class FailureClass(StrEnum):
    PROVIDER_RATE_LIMIT = "provider_rate_limit"
    PROVIDER_NETWORK = "provider_network"
    PROVIDER_UNKNOWN = "provider_unknown"
    PROVIDER_QUOTA = "provider_quota"
    PROVIDER_BALANCE = "provider_balance"
    PROVIDER_AUTH = "provider_auth"
    TIMEOUT = "timeout"
    TOOL_ERROR = "tool_error"
    GUARD_TRIP = "guard_trip"
    WORKER_FAILED = "worker_failed"
    UNFINISHED_WORK = "unfinished_work"
    WORKER_BLOCKED = "worker_blocked"
    VALIDATION_ERROR = "validation_error"
    WORKER_EXCEPTION = "worker_exception"
    SEND_FAILED = "send_failed"
    MERGE_CONFLICT = "merge_conflict"
    PATCH_REJECTED = "patch_rejected"


@dataclass(frozen=True, slots=True)
class Row:
    severity: Severity
    strategies: tuple[Strategy, ...]
    meaning: str


S = Strategy
TABLE: dict[FailureClass, Row] = {
    FailureClass.PROVIDER_RATE_LIMIT: Row(
        Severity.RECOVERABLE,
        (S.RETRY, S.RETRY, S.SWITCH_PROVIDER, S.ASK_HUMAN),
        "429 or rate limited after the client's retries",
    ),
    FailureClass.PROVIDER_NETWORK: Row(
        Severity.RECOVERABLE,
        (S.RETRY, S.RETRY, S.SWITCH_PROVIDER, S.ASK_HUMAN),
        "connection refused, reset or cut",
    ),
    FailureClass.PROVIDER_UNKNOWN: Row(
        Severity.RECOVERABLE,
        (S.RETRY, S.RETRY, S.SWITCH_PROVIDER, S.ASK_HUMAN),
        "a 5xx or an error the provider did not name",
    ),
    FailureClass.PROVIDER_QUOTA: Row(
        Severity.DEGRADED, (S.SWITCH_PROVIDER, S.ASK_HUMAN), "the provider's quota is used up"
    ),
    FailureClass.PROVIDER_BALANCE: Row(
        Severity.DEGRADED, (S.SWITCH_PROVIDER, S.ASK_HUMAN), "the account has no credit"
    ),
    FailureClass.PROVIDER_AUTH: Row(
        Severity.CRITICAL, (S.ASK_HUMAN,), "the key is missing, wrong or revoked"
    ),
    FailureClass.TIMEOUT: Row(
        Severity.RECOVERABLE,
        (S.RETRY, S.ESCALATE_MODEL, S.ASK_HUMAN),
        "a request or the attempt ran out of time",
    ),
    FailureClass.TOOL_ERROR: Row(
        Severity.INFO, (), "a tool call failed; the model sees the error and goes on"
    ),
    FailureClass.GUARD_TRIP: Row(
        Severity.RECOVERABLE,
        (S.ESCALATE_MODEL, S.ASK_HUMAN),
        "the model repeated itself or hit the round limit",
    ),
    FailureClass.WORKER_FAILED: Row(
        Severity.RECOVERABLE,
        (S.TIER4_QA, S.TIER4_QA, S.REPLAN, S.ASK_HUMAN),
        "the worker answered FAILED:",
    ),
    FailureClass.UNFINISHED_WORK: Row(
        Severity.RECOVERABLE,
        (S.TIER4_QA, S.TIER4_QA, S.REPLAN, S.ASK_HUMAN),
        "the worker claimed success but changed nothing, or every change failed",
    ),
    FailureClass.WORKER_BLOCKED: Row(
        Severity.DEGRADED, (S.REPLAN, S.ASK_HUMAN), "the worker answered BLOCKED: it cannot go on"
    ),
    FailureClass.VALIDATION_ERROR: Row(
        Severity.DEGRADED, (S.REPLAN, S.ASK_HUMAN), "a plan or an edited ticket failed validation"
    ),
    FailureClass.WORKER_EXCEPTION: Row(
        Severity.CRITICAL, (S.ASK_HUMAN,), "a bug of ours raised inside the worker"
    ),
    FailureClass.SEND_FAILED: Row(
        Severity.RECOVERABLE,
        (S.TIER4_QA, S.TIER4_QA, S.REPLAN, S.ASK_HUMAN),
        "the send raised an error that is not a provider's (a tool loop or client failure)",
    ),
    FailureClass.MERGE_CONFLICT: Row(
        Severity.CRITICAL,
        (S.ASK_HUMAN,),
        "the ticket's patch conflicts with the project (nothing was written)",
    ),
    FailureClass.PATCH_REJECTED: Row(
        Severity.CRITICAL, (S.ASK_HUMAN,), "a human rejected the ticket's patch"
    ),
}

# what each severity still permits (a ladder's other strategies are passed over)
ALLOWED: dict[Severity, frozenset[Strategy]] = {
    Severity.INFO: frozenset(),
    Severity.RECOVERABLE: frozenset(Strategy),
    Severity.DEGRADED: frozenset(Strategy) - {Strategy.RETRY, Strategy.TIER4_QA},
    Severity.CRITICAL: frozenset({Strategy.ASK_HUMAN, Strategy.ABORT}),
}

_PROVIDER_KINDS = {
    "rate_limit": FailureClass.PROVIDER_RATE_LIMIT,
    "network": FailureClass.PROVIDER_NETWORK,
    "unknown": FailureClass.PROVIDER_UNKNOWN,
    "quota": FailureClass.PROVIDER_QUOTA,
    "balance": FailureClass.PROVIDER_BALANCE,
    "auth": FailureClass.PROVIDER_AUTH,
}


def classify_error(exc: BaseException) -> FailureClass:
    """The class of an exception a worker's send raised."""
    if isinstance(exc, ProviderError):
        return _PROVIDER_KINDS.get(str(exc.kind), FailureClass.PROVIDER_UNKNOWN)
    if isinstance(exc, ConfigurationError):  # no key, unknown model: a human must fix the settings
        return FailureClass.PROVIDER_AUTH
    if isinstance(exc, WireError):  # the provider answered something unreadable
        return FailureClass.PROVIDER_UNKNOWN
    if isinstance(exc, TimeoutError):
        return FailureClass.TIMEOUT
    if isinstance(exc, ConnectionError):
        return FailureClass.PROVIDER_NETWORK
    named = getattr(exc, "failure_class", None)  # an exception may name its class (mma.errors)
    if named is not None:
        return FailureClass(named)
    return FailureClass.WORKER_EXCEPTION
