"""GET /api/mma/graph over real HTTP (every reply checked against /openapi.json): the active or a
named track as nodes and edges or as a Mermaid flowchart; bad queries named; a ticket's status
change through the app rewrites plan.mmd beside plan.md and shows in the graph; the command line
prints the flowchart itself."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from manual_slop.hooks.errors import BadRequest, NotFound
from manual_slop.mma.models import Ticket, TicketStatus, Track
from manual_slop.mma.persistence import TrackStore
from tests.integration.hooks.conftest import HookApp, HookAppFactory
from tests.integration.hooks.test_cli_hooks import run_client
from tests.unit.mma.mermaid_check import parse_mermaid


def store_tracks(base: Path) -> None:
    now = time.time()
    store = TrackStore(base)
    store.save(Track("tr-old", "Old track", tickets=[Ticket("x", "only one")], created_at=now - 60))
    store.save(
        Track(
            "tr-login", 'Login "page"', created_at=now - 30, updated_at=now,
            tickets=[
                Ticket("a", "Write the form", status=TicketStatus.COMPLETED),
                Ticket("b", 'Validate "email" [x] | end', depends_on=["a"]),
                Ticket("c.end", "Ship it\nwith notes", depends_on=["a", "b"]),
            ],
        )
    )  # fmt: skip


def labels_by_id(mermaid: str) -> dict[str, tuple[str, str | None]]:
    """ticket id -> (node label, class), from the text as the strict checker parses it."""
    chart = parse_mermaid(mermaid)
    return {label.split(": ", 1)[0]: (label, chart.classes.get(node)) for node, label in chart.nodes.items()}


def test_the_graph_of_the_active_and_a_named_track_as_json_and_mermaid(
    hook_app_factory: HookAppFactory, app_dir: Path
) -> None:
    store_tracks(app_dir)
    app: HookApp = hook_app_factory()
    client = app.client()

    graph = client.mma_graph()  # the active track (the one updated last), as data
    assert graph["format"] == "json" and graph["track"]["id"] == "tr-login"
    assert [(n["id"], n["status"]) for n in graph["nodes"]] == [
        ("a", "completed"), ("b", "todo"), ("c.end", "todo")
    ]  # fmt: skip
    assert graph["nodes"][2]["title"] == "Ship it"
    assert [(e["from"], e["to"]) for e in graph["edges"]] == [("a", "b"), ("a", "c.end"), ("b", "c.end")]

    flow = client.mma_graph("mermaid")
    assert flow["track"]["id"] == "tr-login" and "nodes" not in flow
    nodes = labels_by_id(flow["mermaid"])
    assert nodes == {
        "a": ("a: Write the form", "completed"),
        "b": ('b: Validate "email" [x] | end', "todo"),
        "c.end": ("c.end: Ship it", "todo"),
    }
    assert len(parse_mermaid(flow["mermaid"]).edges) == 3

    other = client.mma_graph("mermaid", "tr-old")
    assert other["track"]["title"] == "Old track" and labels_by_id(other["mermaid"]) == {
        "x": ("x: only one", "todo")
    }

    # what the disk holds is what the endpoint serves
    folder = app_dir / "conductor" / "tracks" / "tr-login"
    assert (folder / "plan.mmd").read_text(encoding="utf-8") == flow["mermaid"]


BAD_QUERIES = (
    ("?track=no-such", NotFound, "no track 'no-such' (GET /api/gui/value/mma_tracks lists them)"),
    ("?format=svg", BadRequest, "query parameter 'format': expected one of json, mermaid, got 'svg'"),
    ("?track=../etc", BadRequest, "query parameter 'track': expected a track id "
     "(1-64 letters, digits, '_', '.', ':' or '-'), got '../etc'"),
    ("?format=json&format=mermaid", BadRequest, "query parameter 'format' given 2 times; give it once"),
    ("?layout=TD", BadRequest, "unknown query parameter 'layout'; accepted: format, track"),
)


def test_bad_queries_are_refused_with_a_message_naming_the_problem(
    hook_app_factory: HookAppFactory, app_dir: Path
) -> None:
    store_tracks(app_dir)
    client = hook_app_factory().client()
    for query, error, message in BAD_QUERIES:
        with pytest.raises(error) as raised:
            client.request("GET", "/api/mma/graph" + query)
        assert str(raised.value) == message, query


def test_without_any_track_the_graph_is_a_404_that_says_what_to_do(hook_app: HookApp) -> None:
    with pytest.raises(NotFound, match=r"no active track; start one, or name one with \?track=<id>"):
        hook_app.client().mma_graph("mermaid")


def test_a_status_change_rewrites_plan_mmd_and_the_graph(
    hook_app_factory: HookAppFactory, app_dir: Path
) -> None:
    store_tracks(app_dir)
    app = hook_app_factory()
    client = app.client()
    plan_mmd = app_dir / "conductor" / "tracks" / "tr-login" / "plan.mmd"
    assert labels_by_id(plan_mmd.read_text(encoding="utf-8"))["b"][1] == "todo"

    client.wait_for_task(client.click("btn_mma_block_ticket", {"ticket_id": "b", "reason": "needs design"}))
    on_disk = plan_mmd.read_text(encoding="utf-8")
    assert labels_by_id(on_disk)["b"][1] == "blocked"
    assert "[!] **b**" in (plan_mmd.parent / "plan.md").read_text(encoding="utf-8")  # written together
    served = client.mma_graph("mermaid")["mermaid"]
    assert served == on_disk
    assert next(n for n in client.mma_graph()["nodes"] if n["id"] == "b")["status"] == "blocked"

    client.wait_for_task(client.click("btn_mma_unblock_ticket", "b"))
    assert labels_by_id(plan_mmd.read_text(encoding="utf-8"))["b"][1] == "todo"

    # the command line prints the flowchart itself, ready for `> plan.mmd`
    done = run_client(app, "mma", "graph", "--format", "mermaid", "--track", "tr-login")
    assert done.returncode == 0, done.stderr
    assert done.stdout == plan_mmd.read_text(encoding="utf-8")
