"""R5 provider faults: every send ends — in an answer or a classified error — within its deadline,
and the comms log has every attempt, while the provider misbehaves on 30 % of the calls.

The fakes of :mod:`tests.fakes` answer through a :class:`~tests.fakes.faults.FaultInjector`
(429 with Retry-After, 5xx, connection resets, stalls past the client's timeout, streams cut
inside an SSE event, garbage bodies) and the REAL SDKs talk to them through :class:`AIClient`.
Every tenth send meets an outage (every call fails slowly): there, only the retry policy's
deadline ends the send, so a retry loop that ignores the deadline overruns it.

Per send the suite checks: it ended within ``deadline_s + timeout_s + slack`` (a bounded wait,
with a thread dump when not); the ending is an ``Answer`` or a ``ProviderError`` with a
``kind``; the server's count of model calls equals the comms log's attempts (``retry`` +
``error`` + ``response`` entries). Fast: 30 sends; long (``make reliability``): 1,000.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from manual_slop.ai import AIClient, RetryPolicy
from manual_slop.ai.errors import ErrorKind, ProviderError
from tests.fakes import AnthropicFake, FakeServer, FaultInjector, GeminiFake, OpenAIFake, Reply
from tests.reliability.bounded import Overrun, run_bounded
from tests.reliability.conftest import scale

TIMEOUT_S = 0.25  # each attempt's HTTP timeout: a stall lasts longer
STALL_S = 0.6
# many retries on purpose: only the deadline bounds a send during an outage
POLICY = RetryPolicy(
    max_retries=50, base_delay_s=0.005, max_delay_s=0.02, max_retry_after_s=1.0, jitter=0.0, deadline_s=0.4
)
SLACK_S = 1.0  # scheduling on a loaded 2-core machine
SEND_BOUND_S = (POLICY.deadline_s or 0.0) + TIMEOUT_S + SLACK_S
ATTEMPT_KINDS = ("retry", "error", "response")  # what the tool loop logs for each attempt
SENDS = scale(30, 1_000)
OUTAGE_EVERY = 10

# provider -> (fake class, URL suffix)
PROVIDERS: dict[str, tuple[Callable[[], FakeServer], str]] = {
    "openai_compatible": (OpenAIFake, "/v1"),
    "anthropic": (AnthropicFake, ""),
    "gemini": (GeminiFake, ""),
}


@dataclass(slots=True)
class Tally:
    """What the sends of the suite ended in."""

    sends: int = 0
    answers: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    unclassified: list[str] = field(default_factory=list)
    attempts_server: int = 0
    attempts_logged: int = 0
    mismatches: list[str] = field(default_factory=list)
    slowest: float = 0.0


Rig = tuple[FakeServer, AIClient, list[dict[str, Any]]]


@pytest.fixture
def injector() -> FaultInjector:
    # one injector for every fake: its deck deals every fault kind within six faults
    return FaultInjector(rate=0.3, seed=5, stall_s=STALL_S, overloaded=True)


@pytest.fixture
def rigs(injector: FaultInjector) -> Iterator[dict[str, Rig]]:
    made: dict[str, Rig] = {}
    try:
        for name, (fake_class, suffix) in PROVIDERS.items():
            fake = fake_class().start()
            entries: list[dict[str, Any]] = []
            client = AIClient(retry=POLICY)
            client.comms_log_callback = entries.append
            client.set_provider(name)
            client.configure(base_url=fake.base_url + suffix, api_key="test-key", timeout_s=TIMEOUT_S)
            made[name] = (fake, client, entries)
            # one healthy send first: the SDK's import and client set-up are not a send's latency
            fake.push(Reply("warm"))
            client.send("", "warm up", enable_tools=False, conversation="r5-warm")
            fake.responder = injector
        yield made
    finally:
        for fake, client, _entries in made.values():
            client.cleanup(timeout=2.0)
            fake.stop()


def _attempts(entries: list[dict[str, Any]]) -> int:
    return sum(1 for e in entries if e["direction"] == "IN" and e["kind"] in ATTEMPT_KINDS)


def _send(index: int, name: str, rig: Rig, injector: FaultInjector, tally: Tally) -> None:
    fake, client, entries = rig
    calls_before, logged_before = len(fake.model_calls()), len(entries)
    stream = index % 2 == 0

    def send() -> str:
        conversation = f"r5-{index}"
        return client.send(
            "", f"question {index}", stream=stream, enable_tools=False, conversation=conversation
        )

    def unblock() -> None:
        client.cleanup(timeout=2.0)

    outage = injector.outage() if index % OUTAGE_EVERY == OUTAGE_EVERY - 1 else contextlib.nullcontext()
    with outage:
        outcome = run_bounded(send, SEND_BOUND_S, name=f"r5 {name} send {index}", on_overrun=unblock)
    tally.sends += 1
    tally.slowest = max(tally.slowest, outcome.elapsed)
    if outcome.error is None:
        tally.answers += 1
    elif isinstance(outcome.error, ProviderError) and outcome.error.kind in ErrorKind:
        tally.errors[str(outcome.error.kind)] += 1
    else:
        tally.unclassified.append(f"{name} send {index}: {type(outcome.error).__name__}: {outcome.error}")
    # the fake records a call before answering it: it has every attempt once the send ended
    server = len(fake.model_calls()) - calls_before
    logged = _attempts(entries[logged_before:])
    tally.attempts_server += server
    tally.attempts_logged += logged
    if server != logged:
        tally.mismatches.append(f"{name} send {index}: {server} calls at the server, {logged} logged")


@pytest.mark.timeout(scale(120, 1_800))  # the long run: ~0.1 s a send alone, more on a loaded machine
def test_every_send_ends_classified_within_its_deadline(rigs, injector, summary) -> None:
    tally = Tally()
    names = list(PROVIDERS)
    order = random.Random(22)
    started, cpu = time.monotonic(), time.process_time()
    for index in range(SENDS):
        name = names[index % len(names)] if index < len(names) else order.choice(names)
        _send(index, name, rigs[name], injector, tally)
    faults = injector.counts()
    drawn = ", ".join(f"{k} {v}" for k, v in sorted(faults.items()))
    summary(
        f"R5 provider faults: {tally.sends} sends over {len(names)} providers, {tally.answers} answered, "
        f"{sum(tally.errors.values())} classified errors ({dict(tally.errors)}), "
        f"{len(tally.unclassified)} unclassified, 0 overran {SEND_BOUND_S:.2f} s "
        f"(slowest {tally.slowest:.2f} s), attempts server/logged {tally.attempts_server}/"
        f"{tally.attempts_logged}; drawn: {drawn}; {time.monotonic() - started:.1f} s wall, "
        f"{time.process_time() - cpu:.1f} s CPU"
    )
    assert not tally.unclassified, "sends ended in errors without a ProviderError kind:\n" + "\n".join(
        tally.unclassified
    )
    assert not tally.mismatches, "the comms log misses attempts:\n" + "\n".join(tally.mismatches)
    # the faults were really there (the seeds make every kind appear in the fast run too)
    assert {"reset", "stall", "truncated", "garbage", "rate_limit", "server_error"} <= set(faults), faults
    assert tally.answers > tally.sends // 2, f"only {tally.answers} of {tally.sends} sends were answered"


def test_bounded_wait_reports_an_overrun_with_a_thread_dump() -> None:
    """The suite's hang detector on a planted stand-in: a 'send' whose retry loop ignores its
    deadline (it keeps retrying a timed-out call) is caught, and the dump shows where it hangs."""
    stop = threading.Event()

    def retry_forever_ignoring_deadline() -> None:
        while not stop.wait(0.01):  # each turn: a swallowed timeout, then another try
            pass

    with pytest.raises(Overrun) as caught:
        run_bounded(retry_forever_ignoring_deadline, 0.1, name="stand-in send", on_overrun=stop.set)
    assert "stand-in send did not end within its deadline of 0.10 s" in str(caught.value)
    assert "retry_forever_ignoring_deadline" in str(caught.value)
