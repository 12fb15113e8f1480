"""The ``recovery`` dialog over the real Hook API: a ticket whose strategies ran out asks a human.

A track runs on the app's real controller and clutch (manual policy) with a scripted Tier 3;
spawns are approved on the clutch, the recovery dialog is answered over HTTP.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from manual_slop.hooks.api_client import ApiHookClient
from manual_slop.hooks.errors import HookApiError
from manual_slop.mma.client import TierCaller, TierUsage
from manual_slop.mma.conductor import ConductorConfig, ConductorEngine, ConductorStatus
from manual_slop.mma.models import Ticket, TicketStatus, Track
from manual_slop.mma.persistence import TrackStore
from tests.integration.hooks.conftest import HookApp
from tests.unit.mma.fake_client import Call, FakeTierClient, default_responder


def wait_for(predicate: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"condition not met within {timeout} s")


@pytest.fixture
def track_on(hook_app: HookApp) -> Iterator[Callable[..., ConductorEngine]]:
    made: list[tuple[ConductorEngine, TierCaller]] = []

    def start(tickets: list[Ticket], respond: Callable[[Call], str], **config: Any) -> ConductorEngine:
        ctrl = hook_app.ctrl
        ctrl.clutch.set_policy("manual")
        caller = TierCaller(FakeTierClient(respond=respond), TierUsage())
        conductor = ConductorEngine(
            Track("tr_r", "Recovery track", "goal", tickets=tickets),
            ctrl.event_queue,
            True,
            host=ctrl,
            caller=caller,
            config=ConductorConfig(base_dir=ctrl.base_dir(), retry_backoff_s=0.01, max_replans=0, **config),
            store=TrackStore(ctrl.base_dir()),
        )
        made.append((conductor, caller))
        conductor.start()
        return conductor

    yield start
    for conductor, caller in made:
        if conductor.is_alive():
            conductor.abort(wait=3.0)
        conductor.join(3.0)
        caller.shutdown(3.0)


def answer_spawns_until_recovery(api: ApiHookClient) -> dict[str, Any]:
    """Approve every spawn and step dialog until a recovery dialog waits; return it."""

    def step() -> dict[str, Any] | None:
        for dialog in api.pending():
            if dialog["kind"] == "recovery":
                return dialog
            api.approve(dialog["id"])
        return None

    return wait_for(step)


def approve_until_done(api: ApiHookClient, conductor: ConductorEngine) -> None:
    """Approve what is asked (spawns, steps) until the conductor ends."""

    def step() -> bool:
        for dialog in api.pending():
            api.approve(dialog["id"])
        return not conductor.is_alive()

    wait_for(step)


def failing_until(word: str) -> Callable[[Call], str]:
    """Ticket ``a`` fails until its description contains ``word``; others succeed."""

    def respond(call: Call) -> str:
        if call.tier == "Tier 4":
            return "QA: the config is missing"
        if call.ticket_id == "a" and word not in call.message:
            return "FAILED: config.toml not found"
        return default_responder(call)

    return respond


def test_a_ticket_that_exhausts_its_strategies_asks_and_skip_lets_the_track_finish(
    hook_app: HookApp, track_on: Callable[..., ConductorEngine]
) -> None:
    conductor = track_on(
        [Ticket("a", "read the config"), Ticket("b", "use it", depends_on=["a"])], failing_until("never")
    )
    api = hook_app.client()
    dialog = answer_spawns_until_recovery(api)
    payload = dialog["payload"]
    assert payload["ticket_id"] == "a" and payload["track_id"] == "tr_r"
    assert payload["failure"] == "worker_failed" and payload["error"] == "config.toml not found"
    assert payload["choices"] == ["retry", "skip", "edit", "abort"] and payload["choice"] == "retry"
    # two attempts with Tier 4's summary, then (no replans allowed) the human; the third failure
    # of one class also raised the severity one step
    assert payload["tried"] == [
        "tier4_qa after worker_failed (recoverable)",
        "tier4_qa after worker_failed (recoverable)",
        "ask_human after worker_failed (degraded)",
    ]
    assert conductor.track.ticket("b").status is TicketStatus.TODO  # nothing ran past the failure
    api.approve(dialog["id"], {"choice": "skip", "reason": "done by hand"})
    approve_until_done(api, conductor)
    assert conductor.status is ConductorStatus.DONE
    skipped = conductor.track.ticket("a")
    assert skipped.status is TicketStatus.COMPLETED and skipped.result == "SKIPPED by the user: done by hand"
    assert conductor.track.ticket("b").status is TicketStatus.COMPLETED
    decisions = [e for e in hook_app.ctrl.session_log.read("audit") if e["kind"] == "recovery"]
    assert [(d["decider"], d["payload"]["choice"]) for d in decisions] == [("hook", "skip")]


def test_edit_reruns_the_ticket_with_the_new_description(
    hook_app: HookApp, track_on: Callable[..., ConductorEngine]
) -> None:
    conductor = track_on([Ticket("a", "read the config")], failing_until("settings.toml"))
    api = hook_app.client()
    dialog = answer_spawns_until_recovery(api)
    with pytest.raises(HookApiError, match="choice: expected one of retry, skip, edit, abort, got 'later'"):
        api.approve(dialog["id"], {"choice": "later"})
    with pytest.raises(HookApiError, match="description: the edited ticket needs a description"):
        api.approve(dialog["id"], {"choice": "edit", "description": "  "})
    api.approve(dialog["id"], {"choice": "edit", "description": "read settings.toml instead"})
    approve_until_done(api, conductor)
    ticket = conductor.track.ticket("a")
    assert conductor.status is ConductorStatus.DONE and ticket.status is TicketStatus.COMPLETED
    assert ticket.description == "read settings.toml instead"


def test_retry_grants_fresh_attempts_and_reject_leaves_the_ticket_blocked(
    hook_app: HookApp, track_on: Callable[..., ConductorEngine]
) -> None:
    conductor = track_on([Ticket("a", "read the config")], failing_until("never"), max_retries=1)
    api = hook_app.client()
    first = answer_spawns_until_recovery(api)
    api.approve(first["id"], {"choice": "retry"})
    second = answer_spawns_until_recovery(api)
    assert second["id"] != first["id"]
    assert "retry granted by a human" in second["payload"]["tried"]
    assert first["payload"]["severity"] == "recoverable"
    # the third failure of one class raised the severity: no Tier 4 retry, straight back to a human
    assert second["payload"]["tried"][-1] == "ask_human after worker_failed (degraded)"
    api.reject(second["id"], "I will look at it")
    assert wait_for(lambda: not conductor.is_alive())
    ticket = conductor.track.ticket("a")
    assert ticket.status is TicketStatus.BLOCKED and ticket.blocked_reason.endswith("(I will look at it)")
    assert conductor.status is ConductorStatus.BLOCKED


def test_abort_stops_the_track(hook_app: HookApp, track_on: Callable[..., ConductorEngine]) -> None:
    conductor = track_on(
        [Ticket("a", "read the config"), Ticket("b", "other")], failing_until("never"), max_retries=0
    )
    api = hook_app.client()
    dialog = answer_spawns_until_recovery(api)
    api.approve(dialog["id"], {"choice": "abort"})
    assert wait_for(lambda: not conductor.is_alive())
    assert conductor.status is ConductorStatus.ABORTED
