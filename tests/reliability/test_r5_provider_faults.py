"""R5 provider faults: every send ends — in an answer or a classified error — within its deadline,
and the comms log has every attempt, while the provider misbehaves on 30 % of the calls.

The fakes of :mod:`tests.fakes` answer through a :class:`~tests.fakes.faults.FaultInjector`
(429 with Retry-After, 5xx, connection resets, stalls past the client's timeout, streams cut
inside an SSE event, garbage bodies) and the REAL SDKs (or the raw-HTTP providers) talk to them
through :class:`AIClient`: anthropic, gemini, openai_compatible, deepseek and minimax (whose
fake also answers every other 429/5xx in-band, HTTP 200 with ``base_resp``). The local model's
fake (the ``xllamacpp.Server`` surface) stalls its generations past the timeout or lets them die
(raising, or in an error chunk). Every tenth send meets an outage (every call fails slowly):
there, only the retry policy's deadline ends the send, so a retry loop that ignores the
deadline overruns it. The long variant also sends through the REAL Gemini CLI (``.tools``)
against a faulting Gemini fake (about 8 s of Node start-up a run on a loaded machine: long only).

Per send the suite checks: it ended within ``deadline_s + timeout_s + slack`` (a bounded wait,
with a thread dump when not); the ending is the fake's answer (not a fault passed off as one:
an empty or cut answer) or a ``ProviderError`` with a ``kind``; the count of model calls the
fake saw (the CLI: its runs) equals the comms log's attempts (``retry`` + ``error`` +
``response`` entries). Fast: 40 sends over six providers;
long (``make reliability``): 1,000, plus 30 through the real CLI.
"""

from __future__ import annotations

import contextlib
import random
import re
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from manual_slop.ai import AIClient, RetryPolicy
from manual_slop.ai.errors import ErrorKind, ProviderError
from tests.fakes import (
    FAULT_KINDS,
    LOCAL_FAULT_KINDS,
    AnthropicFake,
    FakeLlamaServer,
    FakeServer,
    FaultInjector,
    GeminiFake,
    InBandErrors,
    LocalFaultInjector,
    OpenAIFake,
    Reply,
)
from tests.reliability.bounded import Overrun, run_bounded, wait_until
from tests.reliability.conftest import scale

TIMEOUT_S = 0.25  # each attempt's HTTP timeout (the local model: its stall limit): a stall lasts longer
STALL_S = 0.6
LOCAL_STALL_S = 30.0  # a local generation that stalls hangs until its timeout ends the send
# many retries on purpose: only the deadline bounds a send during an outage
POLICY = RetryPolicy(
    max_retries=50, base_delay_s=0.005, max_delay_s=0.02, max_retry_after_s=1.0, jitter=0.0, deadline_s=0.4
)
SLACK_S = 1.0  # scheduling on a loaded 2-core machine
SEND_BOUND_S = (POLICY.deadline_s or 0.0) + TIMEOUT_S + SLACK_S
ATTEMPT_KINDS = ("retry", "error", "response")  # what the tool loop logs for each attempt
SENDS = scale(40, 1_000)
OUTAGE_EVERY = 10
# the real Gemini CLI: ~8 s of Node start-up a run under load, so a timeout well above it
CLI_SENDS = scale(0, 30)
CLI_TIMEOUT_S = 25.0
CLI_STALL_S = CLI_TIMEOUT_S + 5.0
CLI_BOUND_S = (POLICY.deadline_s or 0.0) + CLI_TIMEOUT_S + 5.0  # + killing and reaping the CLI
CLI = Path(__file__).resolve().parents[2] / ".tools" / "gemini-cli" / "node_modules" / ".bin" / "gemini"

# HTTP provider -> (fake class, URL suffix, errors also in-band)
PROVIDERS: dict[str, tuple[Callable[[], FakeServer], str, bool]] = {
    "openai_compatible": (OpenAIFake, "/v1", False),
    "anthropic": (AnthropicFake, "", False),
    "gemini": (GeminiFake, "", False),
    "deepseek": (OpenAIFake, "", False),
    "minimax": (OpenAIFake, "", True),
}
LOCAL = "local"
ANSWER = re.compile(r"answer \d+")  # what every fake answers when it does not fault


@dataclass(slots=True)
class Tally:
    """What the sends of the suite ended in."""

    sends: int = 0
    answers: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    per_provider: Counter[str] = field(default_factory=Counter)
    unclassified: list[str] = field(default_factory=list)
    false_answers: list[str] = field(default_factory=list)
    attempts_server: int = 0
    attempts_logged: int = 0
    mismatches: list[str] = field(default_factory=list)
    slowest: dict[str, float] = field(default_factory=dict)  # provider -> its slowest send


@dataclass(slots=True)
class Rig:
    """A client on one provider, what it logged, and how many attempts its fake saw."""

    client: AIClient
    entries: list[dict[str, Any]]
    attempts_seen: Callable[[], int]  # model calls at the fake (the CLI: its runs)
    injector: FaultInjector
    bound_s: float = SEND_BOUND_S
    in_band: InBandErrors | None = None  # minimax: the faults turned into base_resp errors
    server_calls: Callable[[], int] | None = None  # the CLI: the model calls behind its runs


@pytest.fixture
def injector() -> FaultInjector:
    # one injector for every HTTP fake: its deck deals every fault kind within six faults
    return FaultInjector(rate=0.3, seed=5, stall_s=STALL_S, overloaded=True)


def _client(name: str, entries: list[dict[str, Any]], **options: Any) -> AIClient:
    client = AIClient(retry=POLICY, **options)
    client.comms_log_callback = entries.append
    client.set_provider(name)
    return client


@pytest.fixture
def rigs(injector: FaultInjector) -> Iterator[dict[str, Rig]]:
    made: dict[str, Rig] = {}
    fakes: list[FakeServer] = []
    llama = FakeLlamaServer(["warm"])
    try:
        for name, (fake_class, suffix, in_band) in PROVIDERS.items():
            fake = fake_class().start()
            fakes.append(fake)
            entries: list[dict[str, Any]] = []
            client = _client(name, entries)
            client.configure(base_url=fake.base_url + suffix, api_key="test-key", timeout_s=TIMEOUT_S)
            rig = Rig(client, entries, lambda f=fake: len(f.model_calls()), injector)
            rig.in_band = InBandErrors(injector) if in_band else None
            made[name] = rig
            # one healthy send first: the SDK's import and client set-up are not a send's latency
            fake.push(Reply("warm"))
            client.send("", "warm up", enable_tools=False, conversation="r5-warm")
            fake.responder = rig.in_band or injector
        entries = []
        client = _client(LOCAL, entries, local_engine_factory=lambda **kw: llama)
        client.configure(timeout_s=TIMEOUT_S)
        client.send("", "warm up", enable_tools=False, conversation="r5-warm")
        llama.responder = LocalFaultInjector(rate=0.4, seed=23, stall_s=LOCAL_STALL_S)
        made[LOCAL] = Rig(client, entries, lambda: len(llama.requests), llama.responder)
        yield made
    finally:
        for rig in made.values():
            rig.client.cleanup(timeout=2.0)
        for fake in fakes:
            fake.stop()
        llama.release()  # the generations the sends gave up on end now
        wait_until(lambda: not _generations(), 5.0, "the local generations given up on to end")


def _generations() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name == "slop-local-generate"]


@pytest.fixture
def cli_rig() -> Iterator[Rig | None]:
    """The real Gemini CLI against a faulting Gemini fake (long variant only; skipped, saying
    why, only when Node.js is missing)."""
    if not CLI_SENDS:
        yield None
        return
    if shutil.which("node") is None:
        pytest.skip("Node.js is not installed, so the real Gemini CLI cannot run (install node and npm)")
    if not CLI.exists():
        pytest.fail(f"the Gemini CLI is not installed at {CLI}: run `make gemini-cli` (`make test` does)")
    from tests.helpers import no_new_children

    with GeminiFake() as fake, no_new_children(grace_s=10.0):
        entries: list[dict[str, Any]] = []
        runs: list[dict[str, Any]] = []
        client = _client("gemini_cli", entries)
        client.cli_log_callback = runs.append
        client.configure(binary=str(CLI), base_url=fake.base_url, api_key="test-key", timeout_s=CLI_TIMEOUT_S)
        fake.responder = FaultInjector(rate=0.3, seed=9, stall_s=CLI_STALL_S)
        try:
            rig = Rig(client, entries, lambda: len(runs), fake.responder, CLI_BOUND_S)
            rig.server_calls = lambda: len(fake.model_calls())
            yield rig
        finally:
            client.cleanup(timeout=5.0)


def _attempts(entries: list[dict[str, Any]]) -> int:
    return sum(1 for e in entries if e["direction"] == "IN" and e["kind"] in ATTEMPT_KINDS)


def _send(index: int, name: str, rig: Rig, tally: Tally) -> None:
    client, entries = rig.client, rig.entries
    calls_before, logged_before = rig.attempts_seen(), len(entries)
    stream = index % 2 == 0

    def send() -> str:
        conversation = f"r5-{index}"
        return client.send(
            "", f"question {index}", stream=stream, enable_tools=False, conversation=conversation
        )

    def unblock() -> None:
        client.cleanup(timeout=2.0)

    outage = rig.injector.outage() if index % OUTAGE_EVERY == OUTAGE_EVERY - 1 else contextlib.nullcontext()
    with outage:
        outcome = run_bounded(send, rig.bound_s, name=f"r5 {name} send {index}", on_overrun=unblock)
    tally.sends += 1
    tally.per_provider[name] += 1
    tally.slowest[name] = max(tally.slowest.get(name, 0.0), outcome.elapsed)
    if outcome.error is None:
        tally.answers += 1
        if not ANSWER.fullmatch(str(outcome.value)):  # a fault passed off as an answer
            tally.false_answers.append(f"{name} send {index}: answered {str(outcome.value)[:80]!r}")
    elif isinstance(outcome.error, ProviderError) and outcome.error.kind in ErrorKind:
        tally.errors[str(outcome.error.kind)] += 1
    else:
        tally.unclassified.append(f"{name} send {index}: {type(outcome.error).__name__}: {outcome.error}")
    # the fake records a call before answering it: it has every attempt once the send ended
    server = rig.attempts_seen() - calls_before
    logged = _attempts(entries[logged_before:])
    tally.attempts_server += server
    tally.attempts_logged += logged
    if server != logged:
        tally.mismatches.append(f"{name} send {index}: {server} calls at the server, {logged} logged")


@pytest.mark.timeout(scale(120, 2_400))  # the long run: ~0.1 s a send, ~10 s a CLI send, more under load
def test_every_send_ends_classified_within_its_deadline(rigs, cli_rig, injector, summary) -> None:
    tally = Tally()
    names = list(rigs)
    order = random.Random(22)
    started, cpu = time.monotonic(), time.process_time()
    for index in range(SENDS):
        name = names[index % len(names)] if index < len(names) else order.choice(names)
        _send(index, name, rigs[name], tally)
    if cli_rig is not None:
        names.append("gemini_cli")
        for index in range(SENDS, SENDS + CLI_SENDS):
            _send(index, "gemini_cli", cli_rig, tally)
    faults = injector.counts()
    in_band_count = rigs["minimax"].in_band.converted if rigs["minimax"].in_band else 0
    local_faults = rigs[LOCAL].injector.counts()
    cli_faults = cli_rig.injector.counts() if cli_rig is not None else Counter[str]()
    drawn = "; ".join(
        f"{what} " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        for what, counts in (("http", faults), ("local", local_faults), ("cli", cli_faults))
        if counts
    )
    slowest = max(v for k, v in tally.slowest.items() if k != "gemini_cli")
    cli = ""
    if cli_rig is not None and cli_rig.server_calls is not None:
        cli = (
            f", gemini_cli slowest {tally.slowest.get('gemini_cli', 0.0):.2f} s of {CLI_BOUND_S:.1f} s "
            f"({cli_rig.attempts_seen()} CLI runs made {cli_rig.server_calls()} model calls)"
        )
    summary(
        f"R5 provider faults: {tally.sends} sends over {len(names)} providers ({dict(tally.per_provider)}), "
        f"{tally.answers} answered, {sum(tally.errors.values())} classified errors ({dict(tally.errors)}), "
        f"{len(tally.unclassified)} unclassified ({in_band_count} in-band base_resp), "
        f"{len(tally.false_answers)} false answers, 0 overran their bound (slowest {slowest:.2f} s of "
        f"{SEND_BOUND_S:.2f} s{cli}), attempts server/logged {tally.attempts_server}/"
        f"{tally.attempts_logged}; drawn: {drawn}; {time.monotonic() - started:.1f} s wall, "
        f"{time.process_time() - cpu:.1f} s CPU"
    )
    assert not tally.unclassified, "sends ended in errors without a ProviderError kind:\n" + "\n".join(
        tally.unclassified
    )
    assert not tally.false_answers, "faults taken for answers:\n" + "\n".join(tally.false_answers)
    assert not tally.mismatches, "the comms log misses attempts:\n" + "\n".join(tally.mismatches)
    # the faults were really there (the seeds make every kind appear in the fast run too)
    assert set(FAULT_KINDS) <= set(faults), faults
    assert set(LOCAL_FAULT_KINDS) <= set(local_faults), local_faults
    in_band = rigs["minimax"].in_band
    assert in_band is not None and in_band.converted, "no MiniMax fault came in-band (base_resp)"
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
