"""Tier 1 / Tier 2 planning: JSON found in prose, validated fully, corrected once, never half-applied."""

from __future__ import annotations

import json

import pytest

from manual_slop.mma.client import TierCaller
from manual_slop.mma.errors import PlanningError
from manual_slop.mma.models import Ticket, TicketStatus, TierUsage, Track
from manual_slop.mma.planning import find_json_object, parse_tickets, plan_epic, plan_track, replan_track
from tests.unit.mma.fake_client import Call, FakeTierClient


def caller_with(*answers: str) -> tuple[TierCaller, FakeTierClient]:
    queue = list(answers)
    client = FakeTierClient(respond=lambda call: queue.pop(0))
    return TierCaller(client, TierUsage()), client


def test_json_is_found_in_fences_and_in_prose() -> None:
    assert find_json_object('Here:\n```json\n{"a": 1}\n```\nbye') == {"a": 1}
    assert find_json_object('I think {"a": {"b": [1, 2]}} is right.') == {"a": {"b": [1, 2]}}
    assert find_json_object('{broken} then {"ok": true}') == {"ok": True}
    with pytest.raises(ValueError, match=r"no JSON object"):
        find_json_object("nothing here")


def test_plan_epic_builds_tracks_and_counts_tier1_tokens() -> None:
    caller, client = caller_with(
        'Plan:\n```json\n{"tracks": [{"title": "Auth flow", "description": "login", "priority": "high"},'
        ' {"title": "Docs", "description": "write"}]}\n```'
    )
    tracks = plan_epic(caller, "build the thing", model="m1")
    assert [(t.title, str(t.priority)) for t in tracks] == [("Auth flow", "high"), ("Docs", "medium")]
    assert tracks[0].id.startswith("auth_flow_")
    assert client.calls[0].tier == "Tier 1" and client.calls[0].model == "m1" and client.resets == 0
    assert client.conversations[0][0].startswith("mma:Tier 1:")
    assert caller.usage.snapshot()["Tier 1"]["input"] > 0
    caller.shutdown()


def test_an_invalid_answer_is_sent_back_once_with_the_exact_error() -> None:
    bad = json.dumps({"tickets": [{"id": "a", "description": "x", "depends_on": ["b"]},
                                  {"id": "b", "description": "y", "depends_on": ["a"]}]})  # fmt: skip
    good = json.dumps({"tickets": [{"id": "a", "description": "x", "depends_on": []}]})
    caller, client = caller_with(bad, good)
    tickets = plan_track(caller, Track("t", "T", "goal"))
    assert [t.id for t in tickets] == ["a"]
    correction = client.calls[1].message
    assert "Your previous answer was invalid: dependency cycle: a -> b -> a" in correction
    caller.shutdown()


def test_two_invalid_answers_raise_with_both_errors() -> None:
    caller, _ = caller_with("no json at all", '{"tickets": [{"id": "a", "description": "x"}]}')
    with pytest.raises(
        PlanningError, match=r"first no JSON object found.*then tickets\[0\]: missing key 'depends_on'"
    ):
        plan_track(caller, Track("t", "T"))
    caller.shutdown()


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"tickets": []}, "'tickets' must be a non-empty list"),
        ({"tickets": [{"id": "a", "description": "x", "depends_on": ["zz"]}]}, "a depends on unknown zz"),
        ({"tickets": [{"id": "a", "description": "x", "depends_on": []}] * 2}, "duplicate ticket ids: a"),
        (
            {"tickets": [{"id": "a", "description": "x", "depends_on": [], "extra": 1}]},
            "unknown keys \\['extra'\\]",
        ),
        ({"tickets": [{"id": "a", "description": "x", "depends_on": [], "priority": "urgent"}]}, "priority"),
        ({"tickets": [{"id": "a b", "description": "x", "depends_on": []}]}, "expected an id"),
    ],
)
def test_ticket_validation_messages(payload: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_tickets(payload)


def test_replan_may_depend_on_kept_tickets_but_not_reuse_their_ids() -> None:
    track = Track("t", "T", tickets=[Ticket("a", "x", status=TicketStatus.COMPLETED), Ticket("b", "y")])
    reuse = json.dumps({"tickets": [{"id": "a", "description": "again", "depends_on": []}]})
    fine = json.dumps({"tickets": [{"id": "b2", "description": "other way", "depends_on": ["a"]}]})
    caller, client = caller_with(reuse, fine)
    tickets = replan_track(caller, track, track.tickets[1], "boom", [track.tickets[1]], ["a"])
    assert [(t.id, t.depends_on) for t in tickets] == [("b2", ["a"])]
    assert "already used by completed or running tickets: a" in client.calls[1].message
    assert "Failed ticket b" in client.calls[0].message and "boom" in client.calls[0].message
    caller.shutdown()


def test_call_records_carry_the_tier() -> None:
    caller, client = caller_with('{"tracks": [{"title": "x", "description": ""}]}')
    plan_epic(caller, "e")
    assert isinstance(client.calls[0], Call) and client.calls[0].thread.startswith("slop-mma-send")
    caller.shutdown()
