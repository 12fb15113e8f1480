"""Event payloads are stored as JSON-ready snapshots that share nothing with the original."""

from __future__ import annotations

import datetime
import enum
import json
from pathlib import Path

from manual_slop.events import EventJournal, json_snapshot


class Color(enum.Enum):
    RED = "red"


class Ticket:
    def to_dict(self) -> dict:
        return {"id": "T1", "tags": ("a", "b")}


def test_snapshots_are_plain_json() -> None:
    value = {
        1: Path("/tmp/x"),
        "set": {3},
        "tuple": (1, 2.5),
        "nan": float("nan"),
        "when": datetime.date(2026, 11, 22),
        "color": Color.RED,
        "ticket": Ticket(),
        "bytes": b"\xffok",
        "other": object(),
    }
    snap = json_snapshot(value)
    json.dumps(snap, allow_nan=False)  # serializable, strictly
    assert snap["1"] == "/tmp/x" and snap["set"] == [3] and snap["tuple"] == [1, 2.5]
    assert snap["nan"] is None and snap["when"] == "2026-11-22" and snap["color"] == "red"
    assert snap["ticket"] == {"id": "T1", "tags": ["a", "b"]}
    assert snap["bytes"] == "\ufffdok" and snap["other"].startswith("<object object")


def test_cycles_and_deep_nesting_are_cut_off() -> None:
    loop: list = []
    loop.append(loop)
    snap = json_snapshot(loop)
    json.dumps(snap)
    depth, node = 0, snap
    while isinstance(node, list):
        node, depth = node[0], depth + 1
    assert node == "<nested too deeply>" and depth == 64


def test_the_journal_keeps_what_was_published_not_what_it_became() -> None:
    journal = EventJournal()
    tracks = [{"title": "A"}]
    journal.publish("track_proposal", {"tracks": tracks})
    tracks[0]["title"] = "changed"
    tracks.append({"title": "B"})
    events, _, _ = journal.read(0)
    assert events[0].payload == {"tracks": [{"title": "A"}]}


class Level(enum.IntEnum):
    HIGH = 3


class Mode(enum.StrEnum):
    FAST = "fast"


def test_leaves_of_plain_dicts_and_lists_are_converted_by_their_exact_type() -> None:
    # the fast path keeps exact str/int/bool/None as they are; subclasses still become plain
    value = {"lvl": Level.HIGH, "mode": [Mode.FAST, True, None, 7, "x"], Mode.FAST: {"f": float("inf")}}
    snap = json_snapshot(value)
    assert snap == {"lvl": 3, "mode": ["fast", True, None, 7, "x"], "fast": {"f": None}}
    assert type(snap["lvl"]) is int and type(snap["mode"][0]) is str and type(next(iter(snap))) is str
    nested: dict = {}
    node = nested
    for _ in range(70):
        node["d"] = {}
        node = node["d"]
    depth, cut = 0, json_snapshot(nested)
    while isinstance(cut, dict):
        cut, depth = cut["d"], depth + 1
    assert cut == "<nested too deeply>" and depth == 64
