"""The Task DAG's layered layout: no two node boxes overlap, and every edge runs left to right."""

from __future__ import annotations

import itertools
import random

import pytest

from manual_slop.gui.dag_layout import Rect, layer_of, layered_layout

NODE = (180.0, 60.0)
GAP = (50.0, 20.0)


def chain(n: int) -> list[dict]:
    return [{"id": f"c{k}", "depends_on": [f"c{k - 1}"] if k else []} for k in range(n)]


def diamond(width: int, depth: int) -> list[dict]:
    tickets = [{"id": "root", "depends_on": []}]
    previous = ["root"]
    for layer in range(depth):
        current = [f"d{layer}_{k}" for k in range(width)]
        tickets += [{"id": tid, "depends_on": list(previous)} for tid in current]
        previous = current
    return [*tickets, {"id": "sink", "depends_on": previous}]


def wide(n: int) -> list[dict]:
    return [{"id": "root", "depends_on": []}] + [{"id": f"w{k}", "depends_on": ["root"]} for k in range(n)]


def random_dag(n: int, seed: int) -> list[dict]:
    """Each node depends on up to three earlier ones (so it is acyclic), in shuffled order."""
    rng = random.Random(seed)
    tickets = [
        {"id": f"r{k}", "depends_on": rng.sample([f"r{j}" for j in range(k)], min(k, rng.randint(0, 3)))}
        for k in range(n)
    ]
    rng.shuffle(tickets)
    return tickets


CASES = {
    "single": [{"id": "only", "depends_on": []}],
    "chain_60": chain(60),
    "diamond_4x3": diamond(4, 3),
    "diamond_9x6": diamond(9, 6),
    "wide_55": wide(55),
    "independent_30": [{"id": f"i{k}", "depends_on": []} for k in range(30)],
    **{f"random_{n}_{seed}": random_dag(n, seed) for n, seed in ((20, 1), (75, 2), (150, 3))},
    "unknown_dependency": [{"id": "a", "depends_on": ["ghost"]}, {"id": "b", "depends_on": ["a"]}],
}


def assert_no_overlap(boxes: dict[str, Rect]) -> None:
    for (a, ra), (b, rb) in itertools.combinations(boxes.items(), 2):
        assert not ra.intersects(rb), f"{a} {ra} overlaps {b} {rb}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_no_two_nodes_overlap_and_edges_run_left_to_right(name: str) -> None:
    tickets = CASES[name]
    boxes = layered_layout(tickets, NODE, GAP)
    layers = layer_of(tickets)
    assert set(boxes) == {t["id"] for t in tickets}
    assert_no_overlap(boxes)
    known = set(boxes)
    for ticket in tickets:
        box = boxes[ticket["id"]]
        assert (box.w, box.h) == NODE
        for dep in ticket["depends_on"]:
            if dep not in known:
                continue
            assert layers[ticket["id"]] > layers[dep]  # layers respect the dependencies
            assert box.x >= boxes[dep].right + GAP[0]  # and so do the columns


def test_the_layer_is_the_longest_dependency_chain() -> None:
    tickets = [
        {"id": "a", "depends_on": []},
        {"id": "b", "depends_on": ["a"]},
        {"id": "c", "depends_on": ["b"]},
        {"id": "d", "depends_on": ["a", "c"]},  # a short and a long path: the long one counts
        {"id": "e", "depends_on": []},
    ]
    assert layer_of(tickets) == {"a": 0, "b": 1, "c": 2, "d": 3, "e": 0}
    boxes = layered_layout(tickets, NODE, GAP)
    assert boxes["a"].x == boxes["e"].x < boxes["b"].x < boxes["c"].x < boxes["d"].x


def test_a_wide_layer_wraps_into_sub_columns_and_a_layer_is_centred() -> None:
    boxes = layered_layout(wide(30), NODE, GAP, max_per_column=12)
    columns = sorted({b.x for tid, b in boxes.items() if tid != "root"})
    assert len(columns) == 3  # 12 + 12 + 6
    assert max(b.bottom for b in boxes.values()) == pytest.approx(12 * NODE[1] + 11 * GAP[1])
    root = boxes["root"]
    assert root.y + root.h / 2 == pytest.approx((12 * NODE[1] + 11 * GAP[1]) / 2)


def test_a_cycle_does_not_hang_and_every_node_is_placed() -> None:
    tickets = [
        {"id": "a", "depends_on": ["c"]},
        {"id": "b", "depends_on": ["a"]},
        {"id": "c", "depends_on": ["b"]},
        {"id": "d", "depends_on": ["a"]},
    ]
    boxes = layered_layout(tickets, NODE, GAP)
    assert set(boxes) == {"a", "b", "c", "d"}
    assert_no_overlap(boxes)


def test_nodes_of_a_layer_follow_their_dependencies_order() -> None:
    # x1 depends on the lower of the two roots, x0 on the upper: their order follows suit
    tickets = [
        {"id": "top", "depends_on": []},
        {"id": "bottom", "depends_on": []},
        {"id": "x1", "depends_on": ["bottom"]},
        {"id": "x0", "depends_on": ["top"]},
    ]
    boxes = layered_layout(tickets, NODE, GAP)
    assert boxes["x0"].y < boxes["x1"].y


def test_rect_intersection_excludes_touching_edges() -> None:
    assert Rect(0, 0, 10, 10).intersects(Rect(5, 5, 10, 10))
    assert not Rect(0, 0, 10, 10).intersects(Rect(10, 0, 10, 10))
    assert not Rect(0, 0, 10, 10).intersects(Rect(0, 10, 10, 10))
