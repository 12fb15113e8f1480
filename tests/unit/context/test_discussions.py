"""Discussion operations, takes and loading of older history tables (pure functions)."""

from __future__ import annotations

import pytest

from manual_slop.context import discussions as ops
from manual_slop.context.errors import DiscussionExists, EntryIndexError, UnknownDiscussion


def book(*contents: str, name: str = "main") -> dict:
    return {name: {"history": [ops.make_entry("User", c, "t") for c in contents]}}


def texts(d: dict, name: str = "main") -> list[str]:
    return [e["content"] for e in d[name]["history"]]


def test_entry_operations() -> None:
    d = book("a", "b", "c")
    ops.insert_entry(d, "main", 1, ops.make_entry("AI", "x"))
    ops.insert_entry(d, "main", 4, ops.make_entry("AI", "end"))
    assert texts(d) == ["a", "x", "b", "c", "end"]
    ops.edit_entry(d, "main", 0, "A")
    ops.set_role(d, "main", 0, "System")
    ops.move_entry(d, "main", 0, 4)
    assert texts(d) == ["x", "b", "c", "end", "A"] and d["main"]["history"][4]["role"] == "System"
    assert ops.delete_entry(d, "main", 1)["content"] == "b"
    assert ops.set_collapsed(d, "main", 0) is True and ops.set_collapsed(d, "main", 0) is False
    ops.set_all_collapsed(d, "main", True)
    assert all(e["collapsed"] for e in d["main"]["history"])


def test_edits_replace_entries_instead_of_mutating_them() -> None:
    d = book("a")
    original = d["main"]["history"][0]
    ops.edit_entry(d, "main", 0, "b")
    ops.set_collapsed(d, "main", 0, True)
    assert original == {"role": "User", "content": "a", "ts": "t", "collapsed": False}


def test_bad_indices_and_names_are_refused_with_the_range() -> None:
    d = book("a", "b")
    with pytest.raises(EntryIndexError, match=r"outside discussion 'main' \(0-1\)"):
        ops.edit_entry(d, "main", 2, "x")
    with pytest.raises(EntryIndexError, match=r"\(0-2\)"):
        ops.insert_entry(d, "main", 3, ops.make_entry("User", "x"))
    with pytest.raises(EntryIndexError, match="has no entries"):
        ops.delete_entry({"e": {"history": []}}, "e", 0)
    with pytest.raises(UnknownDiscussion, match="no discussion named 'nope'; discussions: main"):
        ops.add_entry(d, "nope", ops.make_entry("User", "x"))
    with pytest.raises(DiscussionExists):
        ops.create(d, "main")
    with pytest.raises(UnknownDiscussion, match="non-empty"):
        ops.create(d, "   ")
    assert texts(d) == ["a", "b"]


def test_takes_branch_list_and_promote() -> None:
    d = book("q1", "a1", "q2", "a2")
    take = ops.branch_take(d, "main", 1)
    assert take == "main_take_1" and texts(d, take) == ["q1", "a1"]
    assert d[take]["take_of"] == "main" and d[take]["take_at"] == 1
    ops.add_entry(d, take, ops.make_entry("User", "q2 again"))
    second = ops.branch_take(d, take, 0)  # a take of a take belongs to the same main line
    assert second == "main_take_2" and d[second]["take_of"] == "main"
    assert ops.takes_of(d, "main") == ["main_take_1", "main_take_2"] == ops.takes_of(d, second)
    d["main"]["git_commit"] = "old"
    assert ops.promote_take(d, take) == "main"
    assert texts(d) == ["q1", "a1", "q2 again"]
    assert texts(d, take) == ["q1", "a1", "q2", "a2"] and d[take]["git_commit"] == "old"
    assert "git_commit" not in d["main"]
    with pytest.raises(UnknownDiscussion, match="not a take"):
        ops.promote_take(d, "main")


def test_rename_moves_takes_along_and_delete_detaches_them() -> None:
    d = book("x")
    ops.branch_take(d, "main", 0)
    d["other"] = {"history": []}
    with pytest.raises(DiscussionExists, match="already exists"):
        ops.rename(d, "main", "other")
    assert ops.rename(d, "main", "design") == {"main": "design", "main_take_1": "design_take_1"}
    assert d["design_take_1"]["take_of"] == "design" and "main" not in d
    assert ops.delete(d, "design") == ["design_take_1"]
    assert "take_of" not in d["design_take_1"] and sorted(d) == ["design_take_1", "other"]


def test_older_and_hand_edited_histories_are_normalized_without_loss() -> None:
    d = {
        "main": {
            "history": ["User: hello", "@2024-01-01T10:00:00\nAI: hi there", "no role here", {"content": 5}]
        },
        "flat": {"history": "just text"},
        "empty": {},
        "orphan": {"history": [], "take_of": "gone", "take_at": 2},
        "typed": {"history": [], "git_commit": 42},
    }
    problems = ops.normalize(d)
    assert [(e["role"], e["content"]) for e in d["main"]["history"]] == [
        ("User", "hello"),
        ("AI", "hi there"),
        ("User", "no role here"),
        ("User", "5"),
    ]
    assert d["main"]["history"][1]["ts"] == "2024-01-01T10:00:00"
    assert all(set(e) >= set(ops.ENTRY_KEYS) for e in d["main"]["history"])
    assert texts(d, "flat") == ["just text"] and d["empty"] == {"history": []}
    assert "take_of" not in d["orphan"] and "git_commit" not in d["typed"]
    assert len(problems) == 3 and any("4 entries were converted" in p for p in problems)
    assert ops.normalize(d) == []  # already normal


def test_format_history_for_the_provider() -> None:
    d = book("hi")
    ops.add_entry(d, "main", ops.make_entry("AI", "hello"))
    assert ops.format_history(d["main"]["history"]) == "User: hi\n\nAI: hello"
