#!/usr/bin/env python3
"""ExecutionEngine on large ticket DAGs, measured beside networkx on the same graphs.

1. Walk: drive the whole DAG through the engine the way the conductor does
   (``tick()`` → ``start`` → ``complete`` for every ready ticket, until all are
   completed) versus ``networkx.topological_generations`` on the same graph.
2. Build: ``ExecutionEngine(TrackDAG(tickets))`` (validation with cycle check,
   topological order, cascade, counters) versus building the ``networkx.DiGraph``
   and ``networkx.is_directed_acyclic_graph``.
3. Growth: the walk at 100,000 tickets divided by the walk at 10,000 (linear ≈ 10),
   beside networkx's own growth on the same graphs (memory effects hit both).
4. One conductor tick (``tick(4)``) on a 10,000-ticket DAG with thousands ready.

Run: ``.venv/bin/python scripts/bench_dag.py`` — best of 3, ratios from the same run.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import networkx as nx

from manual_slop.mma.dag import ExecutionEngine, TrackDAG
from manual_slop.mma.models import Ticket

REPEATS = 5


def random_dag(n: int, seed: int = 1) -> list[tuple[str, list[str]]]:
    """Tickets in layers of ~sqrt(n); each depends on up to 3 tickets of earlier layers."""
    rng = random.Random(seed)
    width = max(1, int(n**0.5))
    nodes: list[tuple[str, list[str]]] = []
    for i in range(n):
        layer_start = (i // width) * width
        deps = (
            sorted({f"t{rng.randrange(layer_start)}" for _ in range(rng.randint(0, 3))})
            if layer_start
            else []
        )
        nodes.append((f"t{i}", deps))
    return nodes


def tickets_of(nodes: list[tuple[str, list[str]]]) -> list[Ticket]:
    return [Ticket(tid, "bench", depends_on=deps) for tid, deps in nodes]


def graph_of(nodes: list[tuple[str, list[str]]]) -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from(tid for tid, _ in nodes)
    graph.add_edges_from((dep, tid) for tid, deps in nodes for dep in deps)
    return graph


def best(fn: Callable[[], object], setup: Callable[[], object] | None = None) -> float:
    times = []
    for _ in range(REPEATS):
        arg = setup() if setup else None
        start = time.perf_counter()
        fn() if setup is None else fn(arg)  # type: ignore[call-arg]
        times.append(time.perf_counter() - start)
    return min(times)


def walk(engine: ExecutionEngine) -> None:
    while not engine.is_complete():
        for ticket in engine.tick():
            engine.start(ticket.id)
            engine.complete(ticket.id)


def measure(n: int) -> dict[str, float]:
    nodes = random_dag(n)
    graph = graph_of(nodes)
    walk_s = best(walk, lambda: ExecutionEngine(TrackDAG(tickets_of(nodes))))
    nx_walk_s = best(lambda: list(nx.topological_generations(graph)))
    build_s = best(lambda t: ExecutionEngine(TrackDAG(t)), lambda: tickets_of(nodes))
    nx_build_s = best(lambda: nx.is_directed_acyclic_graph(graph_of(nodes)))
    return {"walk": walk_s, "nx_walk": nx_walk_s, "build": build_s, "nx_build": nx_build_s}


def main() -> None:
    small, large = measure(10_000), measure(100_000)
    engine = ExecutionEngine(TrackDAG(tickets_of(random_dag(10_000))))
    ready = engine.ready_count()
    one_tick = best(lambda: engine.tick(4))
    print(f"networkx {nx.__version__}, best of {REPEATS}")
    print(f"{'measure':<52}{'engine':>12}{'networkx':>12}{'ratio':>8}")
    for label, data in (("10,000 tickets", small), ("100,000 tickets", large)):
        for kind, versus in (("walk", "vs topological_generations"), ("build", "vs DiGraph + is_dag")):
            ours, theirs = data[kind], data["nx_" + kind]
            name = f"{kind}, {label} ({versus})"
            print(f"{name:<52}{ours * 1e3:>10.1f}ms{theirs * 1e3:>10.1f}ms{ours / theirs:>8.2f}")
    print(
        f"walk growth 100k / 10k: {large['walk'] / small['walk']:.1f}x "
        f"(networkx {large['nx_walk'] / small['nx_walk']:.1f}x; linear = 10)"
    )
    print(f"build growth 100k / 10k: {large['build'] / small['build']:.1f}x")
    print(f"one tick(4) with {ready} ready of 10,000: {one_tick * 1e6:.1f} us")


if __name__ == "__main__":
    main()
