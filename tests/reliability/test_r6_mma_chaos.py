"""R6 MMA chaos: tickets through the real conductor (real controller, clutch, scratch trees and
merges) with a scripted Tier 3 that fails 20 % of its attempts — it raises or answers garbage —
while a chaos driver pauses and resumes the track and aborts tickets; then a
second track is aborted whole with workers in flight.

Checks: every ticket ends in a terminal state (or, on the aborted track, none is left running);
no deadlock — every wait is bounded (an :class:`~tests.reliability.bounded.Overrun` carries a
thread dump) and the conductor's two locks are witnessed (:mod:`tests.reliability.lockorder`),
so two locks taken in opposite orders fail the suite even on a lucky run; every abort completes
within 2 s (measured); no worker thread and no child process is left. Fast: 40 tickets (+10 on
the aborted track) on the threads backend; long (``make reliability``): 200 (+50) on threads,
then the same on the Ray backend (:mod:`tests.reliability.r6_ray`: a real local cluster, each
attempt a Ray task running the real AI client against a faulting fake; an abort cancels tasks).
"""

from __future__ import annotations

import contextlib
import random
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import psutil
import pytest

from manual_slop.mma.client import TierCaller
from manual_slop.mma.conductor import ConductorConfig, ConductorEngine, ConductorStatus
from manual_slop.mma.errors import MMAError
from manual_slop.mma.models import Ticket, TicketStatus, TierUsage, Track
from manual_slop.mma.persistence import TrackStore
from tests.reliability.bounded import Overrun, thread_dump, wait_until
from tests.reliability.conftest import LONG, scale
from tests.reliability.lockorder import LockOrder, TrackedLock
from tests.reliability.r6_ray import RayRig, ray_model
from tests.unit.mma.fake_client import Call, FakeTierClient

TICKETS = scale(40, 200)
ABORTED_TICKETS = TICKETS // 4
FAILURE_RATE = 0.2
ABORT_LIMIT_S = 2.0
MAX_TICKET_ABORTS = TICKETS // 10  # chaos, not a massacre: most tickets still run their course
TRACK_DEADLINE_S = scale(30, 120)  # the chaos track must end by then (else: a deadlock or a hang)
RAY_TRACK_DEADLINE_S = 900  # on Ray: a worker process starts again after each cancelled task
# Ray only in the long variant: its cluster alone takes ~10 s to start on the 2-core machine
BACKENDS = ["threads", "ray"] if LONG else ["threads"]
TERMINAL = {TicketStatus.COMPLETED, TicketStatus.BLOCKED, TicketStatus.KILLED}
GARBAGE = ("\x00\ufffd{{not an answer", "}}}]]>", "", "lorem ipsum " * 40, "<html>502</html>")


def random_tickets(rng: random.Random, count: int, prefix: str) -> list[Ticket]:
    """``count`` tickets with up to two earlier dependencies; the even ones name a file to change
    (a scratch tree, a patch and a merge), the odd ones want an answer only (cheap)."""
    tickets = []
    for i in range(count):
        deps = sorted({f"{prefix}{rng.randrange(i)}" for _ in range(rng.randint(0, 2))}) if i else []
        deps = deps if rng.random() < 0.5 else []  # half the tickets are roots: a wide DAG
        files = [f"{prefix}{i}.txt"] if i % 2 == 0 else []
        tickets.append(Ticket(f"{prefix}{i}", f"ticket {prefix}{i}", depends_on=deps, target_files=files))
    return tickets


def chaotic_worker(seed: int, pause_s: tuple[float, float]) -> tuple[Callable[[Call], str], Counter[str]]:
    """A scripted Tier 3: 20 % of attempts raise or answer garbage (no change made), the rest
    answer after a short think, writing the ticket's file in their scratch tree (a patch to
    merge) when it names one."""
    rng, lock, drawn = random.Random(seed), threading.Lock(), Counter[str]()

    def respond(call: Call) -> str:
        if call.tier == "Tier 4":
            return "QA: try again"
        with lock:
            roll, think, junk = rng.random(), rng.uniform(*pause_s), rng.choice(GARBAGE)
        time.sleep(think)
        ticket = call.ticket_id or "?"
        if roll < FAILURE_RATE / 2:
            with lock:
                drawn["raised"] += 1
            raise ConnectionError(f"injected worker failure on {ticket}")
        if roll < FAILURE_RATE:
            with lock:
                drawn["garbage"] += 1
            return junk
        with lock:
            drawn["answered"] += 1
        if int(ticket.lstrip("ta") or 0) % 2 == 0:  # a ticket that names a file: change it
            call.write(f"{ticket}.txt", f"done {ticket}\n")
        return f"done {ticket}"

    return respond, drawn


class Tracks:
    """``tracks(tickets, seed, pause_s, order)``: a started conductor on the backend whose two
    locks are witnessed by ``order``, and the count of what its Tier 3 drew. ``close()`` stops
    every conductor and caller (bounded) and, on Ray, the cluster."""

    def __init__(self, backend: str, ctrl: Any) -> None:
        self.backend = backend
        self.ctrl = ctrl
        self.made: list[tuple[ConductorEngine, TierCaller]] = []
        self.ray = RayRig(ctrl) if backend == "ray" else None

    def __call__(
        self, tickets: list[Ticket], seed: int, pause_s: tuple[float, float], order: LockOrder
    ) -> tuple[ConductorEngine, Counter[str]]:
        if self.ray is None:
            respond, drawn = chaotic_worker(seed, pause_s)
            client = FakeTierClient(respond=respond)
        else:  # Tier 3 runs in the Ray tasks, on the fake; Tier 4 (local) only says "try again"
            self.ray.current, drawn = ray_model(seed, pause_s, FAILURE_RATE, GARBAGE)
            client = FakeTierClient(respond=lambda call: "QA: try again")
        caller = TierCaller(client, TierUsage())
        conductor = ConductorEngine(
            Track(f"tr_{len(self.made)}", "Chaos track", "survive", tickets=tickets),
            self.ctrl.event_queue,
            True,
            host=self.ctrl,
            caller=caller,
            config=ConductorConfig(
                base_dir=self.ctrl.base_dir(),
                max_workers=8,
                retry_backoff_s=0.01,
                max_replans=0,
                tier4_patches=False,
                remote_attempts=self.ray.remote if self.ray is not None else None,
            ),
            store=TrackStore(self.ctrl.base_dir()),
        )
        conductor._lock = TrackedLock("conductor._lock", conductor._lock, order)  # type: ignore[assignment]
        conductor.merge_lock = TrackedLock("conductor.merge_lock", conductor.merge_lock, order)  # type: ignore[assignment]
        self.made.append((conductor, caller))
        conductor.start()
        return conductor, drawn

    def close(self) -> None:
        for conductor, caller in self.made:
            if conductor.is_alive():
                conductor.abort(wait=3.0)
            conductor.join(3.0)
            caller.shutdown(3.0)
        self.made.clear()
        if self.ray is not None:
            self.ray.close()


@pytest.fixture
def run_track(make_controller, backend: str) -> Iterator[Tracks]:
    ctrl = make_controller()
    ctrl.clutch.set_policy("auto")
    if backend == "ray":
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=ctrl.base_dir(), check=True, timeout=30)
    tracks = Tracks(backend, ctrl)
    yield tracks
    tracks.close()


def mma_threads() -> list[str]:
    return [
        t.name for t in threading.enumerate() if t.name.startswith(("slop-mma-worker", "slop-mma-conductor"))
    ]


def timed_abort(conductor: ConductorEngine, ticket_id: str | None = None) -> float | None:
    """Seconds an abort took to end its workers (None: the ticket had finished meanwhile)."""
    started = time.monotonic()
    try:
        ended = conductor.abort(ticket_id, wait=ABORT_LIMIT_S, source="chaos")
    except MMAError:  # it completed or was killed between the pick and the abort
        return None
    took = time.monotonic() - started
    assert ended, (
        f"abort of {ticket_id or 'the track'} left workers running after {took:.2f} s:\n{thread_dump()}"
    )
    return took


@pytest.mark.timeout(scale(120, 1_800))
@pytest.mark.parametrize("backend", BACKENDS)
def test_mma_chaos_every_ticket_ends_no_deadlock_aborts_within_two_seconds(
    run_track, backend: str, summary
) -> None:
    rng = random.Random(6)
    order = LockOrder(wait_s=3.0)
    children_before = {p.pid for p in psutil.Process().children(recursive=True)}
    started, cpu = time.monotonic(), time.process_time()

    # 1. a track under chaos: pauses and resumes, ticket aborts, to its end
    conductor, drawn = run_track(random_tickets(rng, TICKETS, "t"), 1, (0.0, 0.01), order)
    pauses, ticket_aborts = 0, []
    track_deadline = TRACK_DEADLINE_S if backend == "threads" else RAY_TRACK_DEADLINE_S
    deadline = time.monotonic() + track_deadline
    while conductor.is_alive():
        if time.monotonic() > deadline:
            raise Overrun(f"the chaos track did not end within {track_deadline} s; threads:\n{thread_dump()}")
        time.sleep(rng.uniform(0.005, 0.03))
        roll = rng.random()
        if roll < 0.15:
            conductor.pause()
            pauses += 1
            time.sleep(rng.uniform(0.005, 0.03))
            conductor.resume()
        elif roll < 0.19 and len(ticket_aborts) < MAX_TICKET_ABORTS:  # each blocks its dependents too
            open_tickets = [
                t.id
                for t in conductor.track.tickets
                if t.status in (TicketStatus.TODO, TicketStatus.IN_PROGRESS)
            ]
            if open_tickets:
                took = timed_abort(conductor, rng.choice(open_tickets))
                if took is not None:
                    ticket_aborts.append(took)
    assert conductor.join(5.0), f"the chaos track's workers did not end:\n{thread_dump()}"
    statuses = Counter(t.status for t in conductor.track.tickets)
    stuck = [t.id for t in conductor.track.tickets if t.status not in TERMINAL]
    track_s = time.monotonic() - started

    # 2. a track aborted whole while its workers are in flight
    aborted, _ = run_track(random_tickets(random.Random(7), ABORTED_TICKETS, "a"), 2, (0.05, 0.2), order)
    in_flight = 10.0 if backend == "threads" else 60.0  # a Ray worker process may start first
    wait_until(
        lambda: len(aborted.pool.active()) >= 2, in_flight, "two workers of the second track in flight"
    )
    track_abort = timed_abort(aborted)
    left_running = [t.id for t in aborted.track.tickets if t.status is TicketStatus.IN_PROGRESS]
    run_track.close()  # every conductor, caller and (on Ray) the cluster, before counting what is left
    elapsed, cpu = time.monotonic() - started, time.process_time() - cpu

    slowest = max([*ticket_aborts, track_abort or 0.0])
    summary(
        f"R6 MMA chaos ({backend}): {TICKETS}+{ABORTED_TICKETS} tickets, worker attempts {dict(drawn)}, "
        f"ended {dict((str(k), v) for k, v in statuses.items())}, {len(stuck)} not terminal, "
        f"{pauses} pauses, {len(ticket_aborts)} ticket aborts, track abort {track_abort or 0:.3f} s "
        f"(slowest abort {slowest:.3f} s), {len(order.inversions)} lock-order inversions, "
        f"{len(order.stalls)} lock stalls; chaos track {track_s:.1f} s, {elapsed:.1f} s wall, {cpu:.1f} s CPU"
    )
    assert not order.inversions and not order.stalls, order.report()
    assert not stuck, f"tickets not in a terminal state: {stuck}"
    assert conductor.status in (ConductorStatus.DONE, ConductorStatus.BLOCKED), conductor.status
    assert drawn["raised"] and drawn["garbage"], f"the failures were not injected: {dict(drawn)}"
    assert statuses[TicketStatus.COMPLETED] >= TICKETS // 2, statuses
    unexplained = [
        t.id for t in conductor.track.tickets if t.status is TicketStatus.BLOCKED and not t.blocked_reason
    ]
    assert not unexplained, f"blocked without a reason: {unexplained}"
    assert track_abort is not None and track_abort < ABORT_LIMIT_S, track_abort
    assert all(took < ABORT_LIMIT_S for took in ticket_aborts), ticket_aborts
    assert aborted.status is ConductorStatus.ABORTED and not left_running, (aborted.status, left_running)
    assert mma_threads() == [], mma_threads()

    def children_left() -> set[int]:
        return {p.pid for p in psutil.Process().children(recursive=True)} - children_before

    with contextlib.suppress(Overrun):  # Ray's processes take a few seconds to go
        wait_until(lambda: not children_left(), 0.0 if backend == "threads" else 30.0, "children gone")
    assert not children_left(), f"child processes left: {children_left()}"


def test_lock_order_witness_catches_an_inversion_on_a_planted_stand_in() -> None:
    """The suite's deadlock detector on a planted stand-in: two paths taking two locks in opposite
    orders (no real deadlock on this timing) are reported, and a real deadlock breaks up in a
    bounded wait instead of hanging."""
    order = LockOrder(wait_s=0.2)
    state, merge = (TrackedLock(n, threading.RLock(), order) for n in ("state", "merge"))
    with state, merge:  # abort path: state, then merge
        pass
    with merge, state:  # merge path: merge, then state
        pass
    assert len(order.inversions) == 1 and "lock-order inversion: merge -> state" in order.inversions[0]

    order = LockOrder(wait_s=0.2)
    a, b = TrackedLock("a", threading.Lock(), order), TrackedLock("b", threading.Lock(), order)
    both_hold = threading.Barrier(2, timeout=2.0)
    errors: list[BaseException] = []

    def take(first: TrackedLock, second: TrackedLock) -> None:
        try:
            with first:
                both_hold.wait()
                with second:
                    pass
        except Overrun as exc:
            errors.append(exc)

    threads = [threading.Thread(target=take, args=pair) for pair in ((a, b), (b, a))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(3.0)
    assert not any(t.is_alive() for t in threads) and errors and order.stalls
    assert "waited 0.2 s for" in order.stalls[0] and "--- thread" in order.stalls[0]
