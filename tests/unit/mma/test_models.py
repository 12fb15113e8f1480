"""Ticket and Track records: lifecycle guards and dict round trips."""

from __future__ import annotations

import pytest

from manual_slop.mma.errors import InvalidTransition, TicketError
from manual_slop.mma.models import Priority, Ticket, TicketStatus, TierUsage, Track, TrackStatus


def test_ticket_round_trips_through_a_dict() -> None:
    ticket = Ticket(
        "t-1", "write it", depends_on=["t-0"], priority=Priority.HIGH, target_files=["a.py"],
        model_override="big", critical=True, retry_count=2,
    )  # fmt: skip
    data = ticket.to_dict()
    assert data["assigned_to"] is None and data["blocked_reason"] is None and data["status"] == "todo"
    again = Ticket.from_dict(data)
    assert again == ticket


def test_from_dict_names_the_bad_key() -> None:
    with pytest.raises(TicketError, match=r"ticket.id: expected an id"):
        Ticket.from_dict({"id": "has space", "description": "x"})
    with pytest.raises(TicketError, match=r"ticket a.status: expected one of todo"):
        Ticket.from_dict({"id": "a", "description": "x", "status": "done"})
    with pytest.raises(TicketError, match=r"ticket a.depends_on: expected a list of strings"):
        Ticket.from_dict({"id": "a", "description": "x", "depends_on": "b"})
    with pytest.raises(TicketError, match=r"ticket a.description: must not be empty"):
        Ticket.from_dict({"id": "a", "description": "  "})
    with pytest.raises(TicketError, match=r"retry_count: expected a non-negative integer"):
        Ticket.from_dict({"id": "a", "description": "x", "retry_count": -1})


def test_lifecycle_refuses_impossible_changes() -> None:
    ticket = Ticket("a", "x")
    ticket.transition(TicketStatus.IN_PROGRESS)
    ticket.transition(TicketStatus.COMPLETED)
    with pytest.raises(InvalidTransition, match=r"from completed to todo"):
        ticket.transition(TicketStatus.TODO)
    blocked = Ticket("b", "x", status=TicketStatus.BLOCKED)
    with pytest.raises(InvalidTransition):
        blocked.transition(TicketStatus.COMPLETED)


def test_track_round_trip_summary_and_prepare_for_run() -> None:
    track = Track(
        "tr", "Title", "desc",
        tickets=[
            Ticket("a", "x", status=TicketStatus.COMPLETED),
            Ticket("b", "x", status=TicketStatus.IN_PROGRESS, assigned_to="worker-3"),
            Ticket("c", "x", status=TicketStatus.KILLED),
            Ticket("d", "x", status=TicketStatus.BLOCKED, blocked_by="c", blocked_reason="dep c killed"),
            Ticket("e", "x", status=TicketStatus.BLOCKED, blocked_reason="manual", manual_block=True),
        ],
    )  # fmt: skip
    assert Track.from_dict(track.to_dict()) == track
    summary = track.summary()
    assert summary["ticket_count"] == 5 and summary["counts"]["blocked"] == 2 and "tickets" not in summary
    assert track.prepare_for_run() == ["b", "c", "d"]
    assert [t.status for t in track.tickets] == ["completed", "todo", "todo", "todo", "blocked"]
    assert track.tickets[1].assigned_to == "" and track.status is TrackStatus.PLANNED


def test_tier_usage_accumulates_per_tier() -> None:
    usage = TierUsage({"Tier 3": "small"})
    usage.add("Tier 3", 10, 2)
    usage.add("Tier 3", 5, 1, "bigger")
    snap = usage.snapshot()
    assert snap["Tier 3"] == {"input": 15, "output": 3, "model": "bigger"}
    assert set(snap) == {"Tier 1", "Tier 2", "Tier 3", "Tier 4"}
