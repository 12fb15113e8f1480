"""Track folders: five files, atomic, round trip, resume after restart, corrupt files moved aside."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from manual_slop.mma.errors import PersistenceError
from manual_slop.mma.models import Ticket, TicketStatus, Track
from manual_slop.mma.persistence import TrackStore


def sample() -> Track:
    return Track(
        "core_1a2b3c", "Core", "Build the core.\nWith detail.",
        tickets=[
            Ticket("a", "first step", status=TicketStatus.COMPLETED, result="did a"),
            Ticket("b", "second step", depends_on=["a"], status=TicketStatus.IN_PROGRESS, assigned_to="w2"),
            Ticket("c", "third", depends_on=["b"], status=TicketStatus.BLOCKED, blocked_reason="needs a key"),
        ],
    )  # fmt: skip


def test_round_trip_writes_five_files_and_resumes_in_progress_as_todo(tmp_path: Path) -> None:
    store = TrackStore(tmp_path)
    track = sample()
    store.save(track)
    folder = tmp_path / "conductor" / "tracks" / track.id
    assert sorted(p.name for p in folder.iterdir()) == [
        "metadata.json", "plan.md", "plan.mmd", "spec.md", "state.toml"
    ]  # fmt: skip
    assert '["c: third"]:::blocked' in (folder / "plan.mmd").read_text()
    assert "Build the core." in (folder / "spec.md").read_text()
    plan = (folder / "plan.md").read_text()
    assert "- [x] **a** first step" in plan and "- [!] **c** third (after b; blocked; needs a key)" in plan
    assert json.loads((folder / "metadata.json").read_text())["title"] == "Core"
    assert tomllib.loads((folder / "state.toml").read_text())["tickets"][1]["status"] == "in_progress"
    loaded = store.load(track.id)
    assert [t.status for t in loaded.tickets] == ["completed", "todo", "blocked"]
    assert loaded.tickets[1].assigned_to == "" and loaded.tickets[0].result == "did a"
    track.tickets[1].status, track.tickets[1].assigned_to, track.tickets[1].started_at = (
        TicketStatus.TODO,
        "",
        0.0,
    )
    assert loaded == track
    assert [t.id for t in store.load_all()[0]] == [track.id]


def test_a_corrupt_state_file_is_moved_aside_and_reported(tmp_path: Path) -> None:
    store = TrackStore(tmp_path)
    track = sample()
    store.save(track)
    state = store.folder(track.id) / "state.toml"
    state.write_text("tickets = [[[")
    tracks, problems = store.load_all()
    assert tracks == [] and "cannot be parsed" in problems[0] and "state.toml.corrupt-" in problems[0]
    assert not state.exists() and list(store.folder(track.id).glob("state.toml.corrupt-*"))


def test_a_corrupt_metadata_file_is_moved_aside_and_survives_the_next_save(tmp_path: Path) -> None:
    store = TrackStore(tmp_path)
    track = sample()
    store.save(track)
    meta = store.folder(track.id) / "metadata.json"
    meta.write_text('{"id": ')
    tracks, problems = store.load_all()
    assert tracks == [] and "cannot be parsed" in problems[0] and "metadata.json.corrupt-" in problems[0]
    store.save(track)  # a track saved again under the same id
    (aside,) = store.folder(track.id).glob("metadata.json.corrupt-*")
    assert aside.read_text() == '{"id": '


def test_bad_records_name_the_folder(tmp_path: Path) -> None:
    store = TrackStore(tmp_path)
    folder = store.folder("x")
    folder.mkdir(parents=True)
    (folder / "metadata.json").write_text('{"id": "x", "title": ""}')
    with pytest.raises(PersistenceError, match=r"x.title: must not be empty"):
        store.load("x")
    with pytest.raises(PersistenceError, match=r"no track 'nope'"):
        store.load("nope")
