"""TrackDAG validation and ordering; ExecutionEngine incremental state."""

from __future__ import annotations

import time

import pytest

from manual_slop.mma.dag import ExecutionEngine, TrackDAG
from manual_slop.mma.errors import CycleDetected, DuplicateTicketId, InvalidTransition, UnknownDependency
from manual_slop.mma.models import Ticket, TicketStatus
from manual_slop.mma.waves import ListAdjacency


def t(tid: str, *deps: str, status: str = "todo", priority: str = "medium") -> Ticket:
    return Ticket(tid, f"do {tid}", status=TicketStatus(status), depends_on=list(deps), priority=priority)


def test_validation_reports_duplicates_dangling_dependencies_and_cycles_by_id() -> None:
    with pytest.raises(DuplicateTicketId, match="a"):
        TrackDAG([t("a"), t("a")]).validate()
    with pytest.raises(UnknownDependency, match="b depends on unknown x, y") as info:
        TrackDAG([t("a"), t("b", "x", "y", "a")]).validate()
    assert info.value.missing == {"b": ["x", "y"]}
    with pytest.raises(CycleDetected) as cyc:
        TrackDAG([t("a", "c"), t("b", "a"), t("c", "b"), t("d")]).validate()
    assert cyc.value.cycle[0] == cyc.value.cycle[-1]
    assert set(cyc.value.cycle) == {"a", "b", "c"}
    with pytest.raises(CycleDetected, match="a -> a"):
        TrackDAG([t("a", "a")]).validate()
    assert TrackDAG([t("b", "done_elsewhere")]).validate(known_done=["done_elsewhere"]) == []


def test_more_than_twenty_tickets_is_a_warning_not_an_error() -> None:
    assert TrackDAG([t(f"t{i}") for i in range(20)]).validate() == []
    (warning,) = TrackDAG([t(f"t{i}") for i in range(21)]).validate()
    assert "21 tickets" in warning


def test_topological_sort_puts_every_dependency_first() -> None:
    tickets = [t("z", "y", "x"), t("y", "x"), t("x"), t("w", "z"), t("v")]
    order = TrackDAG(tickets).topological_sort()
    assert sorted(order) == ["v", "w", "x", "y", "z"]
    position = {tid: i for i, tid in enumerate(order)}
    for ticket in tickets:
        assert all(position[d] < position[ticket.id] for d in ticket.depends_on)


def test_ready_set_needs_every_dependency_completed() -> None:
    dag = TrackDAG(
        [t("a", status="completed"), t("b", "a"), t("c", "a", "b"), t("d"), t("e", status="blocked")]
    )
    assert [x.id for x in dag.get_ready_tasks()] == ["b", "d"]


def test_cascade_blocks_reaches_a_fixed_point_and_names_the_cause() -> None:
    dag = TrackDAG(
        [
            t("a", status="blocked"),
            t("b", "a"),
            t("c", "b"),
            t("d", "c"),
            t("k", status="killed"),
            t("m", "k"),
        ]
    )
    changed = dag.cascade_blocks()
    assert {x.id for x in changed} == {"b", "c", "d", "m"}
    assert dag.by_id["d"].blocked_by == "c" and dag.by_id["d"].blocked_reason == "dependency c is blocked"
    assert dag.by_id["m"].blocked_reason == "dependency k is killed"
    assert dag.cascade_blocks() == []  # already at the fixed point


def test_engine_releases_dependents_as_their_dependencies_complete() -> None:
    engine = ExecutionEngine(TrackDAG([t("a"), t("b", "a"), t("c", "a"), t("d", "b", "c")]))
    assert [x.id for x in engine.tick()] == ["a"]
    engine.start("a")
    assert engine.tick() == [] and engine.in_progress() == ["a"]
    assert {x.id for x in engine.complete("a", "ok")} == {"b", "c"}
    for tid in ("b", "c"):
        engine.start(tid)
    engine.complete("b")
    assert engine.tick() == []  # d still waits for c
    engine.complete("c")
    assert [x.id for x in engine.tick()] == ["d"]
    engine.start("d")
    engine.complete("d")
    assert engine.is_complete() and not engine.is_stalled()
    assert engine.counts()["completed"] == 4


def test_tick_orders_by_priority_then_topology_and_honours_the_limit() -> None:
    engine = ExecutionEngine(TrackDAG([t("low", priority="low"), t("m1"), t("hi", priority="high"), t("m2")]))
    assert [x.id for x in engine.tick()] == ["hi", "m1", "m2", "low"]
    assert [x.id for x in engine.tick(2)] == ["hi", "m1"]
    engine.start("hi")
    assert [x.id for x in engine.tick(2)] == ["m1", "m2"]
    assert engine.ready_count() == 3


def test_auto_queue_claims_what_tick_returns() -> None:
    engine = ExecutionEngine(TrackDAG([t("a"), t("b")]), auto_queue=True)
    assert [x.id for x in engine.tick()] == ["a", "b"]
    assert sorted(engine.in_progress()) == ["a", "b"] and engine.tick() == []


def test_block_cascades_and_unblock_lifts_only_what_it_caused() -> None:
    engine = ExecutionEngine(TrackDAG([t("a"), t("x"), t("b", "a"), t("c", "b", "x"), t("d", "c")]))
    changed = engine.block("a", "needs a decision", manual=True)
    assert [x.id for x in changed] == ["a", "b", "c", "d"]
    engine.kill("x", "no longer needed")
    assert engine.is_stalled()
    with pytest.raises(InvalidTransition, match="unblock that one"):
        engine.unblock("b")
    lifted = engine.unblock("a")
    assert [x.id for x in lifted] == ["a", "b"]  # c still waits on killed x
    by_id = engine.dag.by_id
    assert by_id["c"].status is TicketStatus.BLOCKED and by_id["c"].blocked_by == "x"
    assert by_id["a"].manual_block is False and [x.id for x in engine.tick()] == ["a"]
    engine.unblock("x")
    assert all(by_id[i].status is TicketStatus.TODO for i in "abcdx")
    assert engine.counts() == {"todo": 5, "in_progress": 0, "completed": 0, "blocked": 0, "killed": 0}


def test_requeue_and_retry_counting() -> None:
    engine = ExecutionEngine(TrackDAG([t("a")]))
    engine.start("a", "worker-1")
    assert engine.dag.by_id["a"].assigned_to == "worker-1"
    engine.note_retry("a")
    engine.requeue("a")
    ticket = engine.dag.by_id["a"]
    assert ticket.status is TicketStatus.TODO and ticket.retry_count == 1 and ticket.assigned_to == ""
    assert [x.id for x in engine.tick()] == ["a"]
    with pytest.raises(InvalidTransition):
        engine.note_retry("a")
    engine.start("a")
    with pytest.raises(InvalidTransition, match="not ready"):
        engine.start("a")


def test_engine_refuses_an_invalid_dag_before_anything_runs() -> None:
    with pytest.raises(CycleDetected):
        ExecutionEngine(TrackDAG([t("a", "b"), t("b", "a")]))


def test_tick_cost_follows_the_changes_not_the_dag() -> None:
    """A chain of 20,000 tickets: each complete() touches one edge, each tick(1) one heap entry."""
    n = 20_000
    engine = ExecutionEngine(TrackDAG([t(f"t{i}", *([f"t{i - 1}"] if i else [])) for i in range(n)]))
    start = time.perf_counter()
    for i in range(n):
        (ready,) = engine.tick(1)
        assert ready.id == f"t{i}"
        engine.start(ready.id)
        engine.complete(ready.id)
    per_ticket = (time.perf_counter() - start) / n
    full_scan = time.perf_counter()
    engine.dag.get_ready_tasks()
    scan = time.perf_counter() - full_scan
    assert engine.is_complete()
    assert per_ticket < scan  # one incremental step is cheaper than one full rescan of the DAG


def test_generations_are_networkx_topological_generations() -> None:
    import random

    import networkx as nx

    rng = random.Random(7)
    deps = [{f"n{rng.randrange(i)}" for _ in range(rng.randint(0, 3))} if i else set() for i in range(300)]
    tickets = [t(f"n{i}", *sorted(d)) for i, d in enumerate(deps)]
    rng.shuffle(tickets)  # list order must not matter
    graph = nx.DiGraph()
    graph.add_nodes_from(x.id for x in tickets)
    graph.add_edges_from((d, x.id) for x in tickets for d in x.depends_on)
    ours = TrackDAG(tickets).generations()
    assert [set(wave) for wave in ours] == [set(wave) for wave in nx.topological_generations(graph)]
    assert sum(map(len, ours)) == 300
    assert TrackDAG([t("a"), t("b", "a", "a"), t("c", "a", "b")]).generations() == [["a"], ["b"], ["c"]]
    with pytest.raises(CycleDetected) as cyc:
        TrackDAG([t("a", "c"), t("b", "a"), t("c", "b"), t("d")]).generations()
    assert set(cyc.value.cycle) == {"a", "b", "c"}


def test_the_walk_adjacency_is_numbered_in_wave_order_and_a_cycle_keeps_the_rest() -> None:
    # list order is the reverse of wave order: the compact ids still come wave by wave
    dag = TrackDAG([t("c", "b"), t("b", "a"), t("x"), t("a")])
    ids, graph = dag._compact()
    assert isinstance(graph, ListAdjacency)  # small: the Python walk
    assert ids == ["x", "a", "b", "c"] and graph.children == [[], [2], [3], []]
    assert graph.indegree == [0, 0, 1, 1]
    assert dag.generations() == [["x", "a"], ["b"], ["c"]] and dag.generations() == [["x", "a"], ["b"], ["c"]]
    looped = TrackDAG([t("p", "q"), t("q", "p"), t("r"), t("s", "r")])
    assert looped._compact()[0] == ["r", "s", "p", "q"]  # the cycle's tickets last, in list order
    with pytest.raises(CycleDetected):
        looped.generations()
