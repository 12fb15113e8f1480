#!/usr/bin/env python3
"""The ticket DAG and its ExecutionEngine on large graphs, measured beside networkx.

Like is compared with like, on the same graphs, in the same run:

1. Full walk: ``TrackDAG.generations()`` (waves of tickets that can run together)
   versus ``networkx.topological_generations`` on a prebuilt ``DiGraph``. Goal ≤ 1.0.
2. Conductor walk: the whole DAG driven through the engine the way the conductor does
   (``tick()`` → ``start`` → ``complete`` until every ticket is completed) versus the same
   incremental loop written on networkx (a ready heap; a completed node is removed from
   the graph and its successors whose in-degree dropped to 0 become ready).
3. One step: ``tick(1)`` → ``start`` → ``complete`` of one ticket on a 10,000-ticket DAG
   versus the networkx step (pop the heap, ``remove_node``, check successors' in-degree),
   averaged over a batch of steps.
4. Build: ``ExecutionEngine(TrackDAG(tickets))`` (validation with cycle check, order,
   cascade, counters) versus building the ``DiGraph`` and ``is_directed_acyclic_graph``.
5. Growth 100k / 10k of each (linear = 10), networkx's beside (memory effects hit both).
   Goal for the full walk: ≤ 12x.

Times are CPU time of the process (``time.process_time``), best of R (default 5): on the
shared machine wall time is mostly waiting for a core.

Run: ``.venv/bin/python scripts/bench_dag.py [--rounds R]``.
The last line prints the ratios and growth factors.
"""

from __future__ import annotations

import argparse
import heapq
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
        start = time.process_time()  # CPU time: on the shared machine wall time is mostly waiting
        fn() if setup is None else fn(arg)  # type: ignore[call-arg]
        times.append(time.process_time() - start)
    return min(times)


def walk(engine: ExecutionEngine) -> None:
    while not engine.is_complete():
        for ticket in engine.tick():
            engine.start(ticket.id)
            engine.complete(ticket.id)


class NxWalk:
    """The conductor's incremental loop on networkx: ready heap, remove what completed."""

    def __init__(self, graph: nx.DiGraph, order: dict[str, int]) -> None:
        self.graph = graph.copy()
        self.order = order
        self.heap = [(0, order[n], n) for n, d in self.graph.in_degree() if d == 0]
        heapq.heapify(self.heap)

    def step(self) -> bool:
        if not self.heap:
            return False
        _, _, node = heapq.heappop(self.heap)
        graph = self.graph
        successors = list(graph.successors(node))
        graph.remove_node(node)
        for child in successors:
            if graph.in_degree(child) == 0:
                heapq.heappush(self.heap, (0, self.order[child], child))
        return True

    def run(self) -> None:
        while self.step():
            pass


def engine_steps(engine: ExecutionEngine, steps: int) -> None:
    for _ in range(steps):
        for ticket in engine.tick(1):
            engine.start(ticket.id)
            engine.complete(ticket.id)


def nx_steps(walker: NxWalk, steps: int) -> None:
    for _ in range(steps):
        walker.step()


STEPS = 2_000


def measure(n: int) -> dict[str, float]:
    nodes = random_dag(n)
    graph = graph_of(nodes)
    dag = TrackDAG(tickets_of(nodes))
    order = {tid: i for i, tid in enumerate(dag.topological_sort())}
    out = {
        "gen": best(dag.generations),
        "nx_gen": best(lambda: list(nx.topological_generations(graph))),
        "walk": best(walk, lambda: ExecutionEngine(TrackDAG(tickets_of(nodes)))),
        "nx_walk": best(NxWalk.run, lambda: NxWalk(graph, order)),
        "build": best(lambda t: ExecutionEngine(TrackDAG(t)), lambda: tickets_of(nodes)),
        "nx_build": best(lambda: nx.is_directed_acyclic_graph(graph_of(nodes))),
    }
    if n <= 10_000:
        fresh = lambda: ExecutionEngine(TrackDAG(tickets_of(nodes)))  # noqa: E731
        out["step"] = best(lambda e: engine_steps(e, STEPS), fresh) / STEPS
        out["nx_step"] = best(lambda w: nx_steps(w, STEPS), lambda: NxWalk(graph, order)) / STEPS
    return out


ROWS = (
    ("gen", "full walk: generations() vs topological_generations"),
    ("walk", "conductor walk vs the same loop on networkx"),
    ("build", "build vs DiGraph + is_dag"),
)


def main() -> None:
    global REPEATS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=REPEATS)
    REPEATS = parser.parse_args().rounds
    small, large = measure(10_000), measure(100_000)
    print(f"networkx {nx.__version__}, best of {REPEATS}")
    print(f"{'measure':<66}{'ours':>11}{'networkx':>11}{'ratio':>7}")
    for label, data in (("10k", small), ("100k", large)):
        for kind, name in ROWS:
            ours, theirs = data[kind], data["nx_" + kind]
            print(f"{name + ', ' + label:<66}{ours * 1e3:>9.1f}ms{theirs * 1e3:>9.1f}ms{ours / theirs:>7.2f}")
    step, nx_step = small["step"], small["nx_step"]
    name = "one step tick(1)+start+complete vs networkx step, 10k"
    print(f"{name:<66}{step * 1e6:>9.2f}us{nx_step * 1e6:>9.2f}us{step / nx_step:>7.2f}")
    growth = {kind: large[kind] / small[kind] for kind in ("gen", "walk", "build")}
    nx_growth = {kind: large["nx_" + kind] / small["nx_" + kind] for kind in ("gen", "walk", "build")}
    for kind, _ in ROWS:
        print(f"growth 100k / 10k, {kind}: {growth[kind]:.1f}x (networkx {nx_growth[kind]:.1f}x; linear 10)")
    print(
        f"RATIOS full walk {small['gen'] / small['nx_gen']:.2f} (10k) "
        f"{large['gen'] / large['nx_gen']:.2f} (100k)"
        f" [goal <= 1.0]; conductor walk {small['walk'] / small['nx_walk']:.2f} / "
        f"{large['walk'] / large['nx_walk']:.2f}; step {step / nx_step:.2f}; "
        f"build {small['build'] / small['nx_build']:.2f} / {large['build'] / large['nx_build']:.2f}; "
        f"GROWTH full walk {growth['gen']:.1f}x [goal <= 12] (nx {nx_growth['gen']:.1f}x), "
        f"conductor walk {growth['walk']:.1f}x (nx {nx_growth['walk']:.1f}x), build {growth['build']:.1f}x"
    )


if __name__ == "__main__":
    main()
