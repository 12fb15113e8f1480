"""Helpers for conductor tests: a real controller as host, a fake AI client, cleanup."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from manual_slop.mma.client import TierCaller
from manual_slop.mma.conductor import ConductorConfig, ConductorEngine
from manual_slop.mma.models import Ticket, TierUsage, Track
from manual_slop.mma.persistence import TrackStore
from tests.unit.mma.fake_client import FakeTierClient


@pytest.fixture
def run_track(make_controller) -> Iterator[Callable[..., tuple]]:
    """``run_track(tickets, client, policy=..., **config)`` → (ctrl, conductor); all stopped afterwards."""
    made: list[tuple[ConductorEngine, TierCaller, FakeTierClient]] = []

    def factory(
        tickets: list[Ticket], client: FakeTierClient, *, policy: str = "auto", start: bool = True, **config
    ):
        ctrl = make_controller()
        ctrl.clutch.set_policy(policy)
        caller = TierCaller(client, TierUsage())
        conductor = ConductorEngine(
            Track("tr_1", "Test track", "goal", tickets=tickets),
            ctrl.event_queue,
            config.pop("auto_queue", True),
            host=ctrl,
            caller=caller,
            config=ConductorConfig(base_dir=ctrl.base_dir(), **{"retry_backoff_s": 0.01, **config}),
            store=TrackStore(ctrl.base_dir()),
        )
        made.append((conductor, caller, client))
        if start:
            conductor.start()
        return ctrl, conductor

    yield factory
    for conductor, caller, client in made:
        if client.hold is not None:
            client.hold.set()
        if conductor.is_alive():
            conductor.abort(wait=3.0)
        conductor.join(3.0)
        caller.shutdown(3.0)
