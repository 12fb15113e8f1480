"""The two wave walks (Python child lists, numpy CSR arrays) against networkx and each other."""

from __future__ import annotations

import itertools
import random

import networkx as nx
import pytest

from manual_slop.mma.dag import TrackDAG
from manual_slop.mma.errors import CycleDetected
from manual_slop.mma.models import Ticket
from manual_slop.mma.waves import VECTOR_FROM, ArrayAdjacency, ListAdjacency

SIZES = (60, VECTOR_FROM + 150)  # one DAG on each side of the switch to arrays


def random_tickets(n: int, seed: int, back_edge: bool = False) -> list[Ticket]:
    """Each ticket depends on up to 3 earlier ones; shuffled; ``back_edge`` closes a cycle."""
    rng = random.Random(seed)
    deps = [sorted({rng.randrange(i) for _ in range(rng.randint(0, 3))}) if i else [] for i in range(n)]
    if back_edge:  # walk a chain of dependencies down from the last ticket, then close it
        chain = [n - 1]
        while deps[chain[-1]] and len(chain) < 6:
            chain.append(rng.choice(deps[chain[-1]]))
        if len(chain) == 1:
            deps[n - 1] = [n - 2]
            chain.append(n - 2)
        deps[chain[-1]].append(chain[0])
    names = [f"k{rng.randrange(10**6)}-{i}" for i in range(n)]  # id order is not wave order
    tickets = [Ticket(names[i], "w", depends_on=[names[d] for d in ds]) for i, ds in enumerate(deps)]
    rng.shuffle(tickets)  # list order must not matter
    return tickets


def graph_of(tickets: list[Ticket]) -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from(x.id for x in tickets)
    graph.add_edges_from((d, x.id) for x in tickets for d in x.depends_on)
    return graph


@pytest.mark.parametrize("n", SIZES)
def test_both_walks_give_networkx_generations_in_the_same_order(n: int) -> None:
    for seed in range(3):
        tickets = random_tickets(n, seed)
        dag = TrackDAG(tickets)
        ours = dag.generations()
        assert [set(w) for w in ours] == [set(w) for w in nx.topological_generations(graph_of(tickets))]
        ids, graph = dag._compact()
        assert isinstance(graph, ArrayAdjacency) == (n >= VECTOR_FROM)
        lists = _as_lists(graph)
        assert ListAdjacency(*lists).waves(ids, dag.find_cycle) == ours  # same waves, same order
        assert ArrayAdjacency(*lists).waves(ids, dag.find_cycle) == ours


@pytest.mark.parametrize("n", SIZES)
def test_a_cycle_is_raised_by_both_walks_and_the_reported_cycle_is_real(n: int) -> None:
    tickets = random_tickets(n, seed=n, back_edge=True)
    assert not nx.is_directed_acyclic_graph(graph_of(tickets))
    dag = TrackDAG(tickets)
    with pytest.raises(CycleDetected) as raised:
        dag.generations()
    cycle = raised.value.cycle
    assert cycle[0] == cycle[-1] and len(cycle) > 2
    assert all(b in dag.by_id[a].depends_on for a, b in itertools.pairwise(cycle))
    ids, graph = dag._compact()
    lists = _as_lists(graph)
    with pytest.raises(CycleDetected):
        ArrayAdjacency(*lists).waves(ids, dag.find_cycle)
    # told not to raise, both stop where the walk stops, with the same waves
    reached = ListAdjacency(*lists).waves(ids, None)
    assert ArrayAdjacency(*lists).waves(ids, None) == reached and sum(map(len, reached)) < n


def test_the_array_walk_is_general_on_a_numbering_not_in_wave_order() -> None:
    # insertion numbering: waves are scattered numbers, not ranges (the walk's gather path)
    rng = random.Random(5)
    n = 400
    deps = [sorted({rng.randrange(i) for _ in range(rng.randint(0, 3))}) if i else [] for i in range(n)]
    shuffled = list(range(n))
    rng.shuffle(shuffled)
    children: list[list[int]] = [[] for _ in range(n)]
    for child, parents in enumerate(deps):
        for parent in parents:
            children[shuffled[parent]].append(shuffled[child])
    indegree = [0] * n
    for child, parents in enumerate(deps):
        indegree[shuffled[child]] = len(parents)
    ids = [f"n{i}" for i in range(n)]
    by_kahn = ListAdjacency(children, indegree).waves(ids, None)
    by_arrays = ArrayAdjacency(children, indegree).waves(ids, None)
    assert [set(w) for w in by_arrays] == [set(w) for w in by_kahn] and len(by_kahn) > 3
    assert all(w == sorted(w, key=lambda x: int(x[1:])) for w in by_arrays)  # ascending numbers
    with pytest.raises(ValueError, match="2 child lists but 1 dependency counts"):
        ArrayAdjacency([[], []], [0])


def _as_lists(graph: ListAdjacency | ArrayAdjacency) -> tuple[list[list[int]], list[int]]:
    if isinstance(graph, ListAdjacency):
        return graph.children, graph.indegree
    ptr = graph.indptr.tolist()
    flat = graph.indices.tolist()
    return [flat[a:b] for a, b in itertools.pairwise(ptr)], graph.indegree.tolist()
