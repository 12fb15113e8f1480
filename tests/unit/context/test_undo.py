"""Undo/redo: patches record only what changed; limits; rollback of failed edits."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from manual_slop.context import discussions as ops
from manual_slop.context.errors import EntryIndexError, NothingToUndo
from manual_slop.context.undo import DiscussionPatch, EditRecorder


@dataclass
class State:
    discussions: dict = field(default_factory=lambda: {"main": {"history": []}})
    active_discussion: str = "main"
    project_files: list = field(default_factory=list)


def contents(state: State, name: str = "main") -> list[str]:
    return [e["content"] for e in state.discussions[name]["history"]]


def test_undo_and_redo_walk_the_steps_back_and_forth() -> None:
    state = State()
    rec = EditRecorder(state)
    for i in range(5):
        with rec.edit(f"add {i}", discussions=["main"]):
            ops.add_entry(state.discussions, "main", ops.make_entry("User", str(i)))
    with rec.edit("edit 2", discussions=["main"]):
        ops.edit_entry(state.discussions, "main", 2, "two")
    with rec.edit("files", attrs=["project_files"]):
        state.project_files = ["src/*.py"]
    assert rec.history.undo_labels()[:2] == ["files", "edit 2"]
    assert rec.undo() == "files" and state.project_files == []
    assert rec.undo() == "edit 2" and contents(state) == ["0", "1", "2", "3", "4"]
    assert rec.undo() == "add 4" and contents(state) == ["0", "1", "2", "3"]
    assert rec.redo() == "add 4" and rec.redo() == "edit 2"
    assert contents(state) == ["0", "1", "two", "3", "4"]
    with rec.edit("new", discussions=["main"]):
        ops.delete_entry(state.discussions, "main", 0)
    assert rec.history.redo_labels() == []  # a new edit clears redo
    with pytest.raises(NothingToUndo, match="nothing to redo"):
        rec.redo()


def test_a_step_stores_only_the_changed_entries() -> None:
    state = State()
    state.discussions["main"]["history"] = [ops.make_entry("User", str(i)) for i in range(1000)]
    rec = EditRecorder(state)
    with rec.edit("append", discussions=["main"]):
        ops.add_entry(state.discussions, "main", ops.make_entry("AI", "new"))
    with rec.edit("edit", discussions=["main"]):
        ops.edit_entry(state.discussions, "main", 500, "changed")
    patches = [s.patches[0] for s in rec.history._undo]
    assert all(isinstance(p, DiscussionPatch) for p in patches)
    assert [(p.index, len(p.removed), len(p.inserted)) for p in patches] == [(1000, 0, 1), (500, 1, 1)]


def test_creating_deleting_and_renaming_discussions_undo_cleanly() -> None:
    state = State()
    rec = EditRecorder(state)
    with rec.edit("add", discussions=["main"]):
        ops.add_entry(state.discussions, "main", ops.make_entry("User", "x"))
    with rec.edit("rename", discussions=["main", "design"], attrs=["active_discussion"]):
        ops.rename(state.discussions, "main", "design")
        state.active_discussion = "design"
    with rec.edit("delete", discussions=["design"]):
        ops.delete(state.discussions, "design")
    assert state.discussions == {}
    rec.undo()
    assert contents(state, "design") == ["x"]
    rec.undo()
    assert sorted(state.discussions) == ["main"] and state.active_discussion == "main"
    assert contents(state) == ["x"]


def test_the_limit_keeps_the_most_recent_steps() -> None:
    state = State()
    rec = EditRecorder(state, limit=100)
    for i in range(150):
        with rec.edit(f"add {i}", discussions=["main"]):
            ops.add_entry(state.discussions, "main", ops.make_entry("User", str(i)))
    for _ in range(100):
        rec.undo()
    assert contents(state) == [str(i) for i in range(50)]
    with pytest.raises(NothingToUndo):
        rec.undo()


def test_a_failed_edit_is_rolled_back_and_not_recorded() -> None:
    state = State()
    rec = EditRecorder(state)
    with pytest.raises(EntryIndexError), rec.edit("bad", discussions=["main"], attrs=["project_files"]):
        ops.add_entry(state.discussions, "main", ops.make_entry("User", "half"))
        state.project_files = ["x"]
        ops.edit_entry(state.discussions, "main", 7, "boom")
    assert contents(state) == [] and state.project_files == []
    assert rec.history.undo_labels() == []


def test_an_edit_that_changes_nothing_records_nothing() -> None:
    state = State()
    rec = EditRecorder(state)
    with rec.edit("noop", discussions=["main"], attrs=["project_files"]):
        state.project_files = []
    assert rec.history.recorded == 0
