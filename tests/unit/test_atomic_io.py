from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from manual_slop.atomic_io import atomic_write_bytes, atomic_write_text, move_aside, sweep_stale_temps


def test_write_creates_and_replaces(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "file.toml"
    atomic_write_text(target, "a = 1\n")
    assert target.read_text() == "a = 1\n"
    atomic_write_text(target, "a = 2\n")
    assert target.read_text() == "a = 2\n"
    assert [p.name for p in target.parent.iterdir()] == ["file.toml"]  # no temp files left


def test_write_keeps_permissions_of_the_replaced_file(tmp_path: Path) -> None:
    target = tmp_path / "credentials.toml"
    target.write_text("x")
    os.chmod(target, 0o600)
    atomic_write_bytes(target, b"y")
    assert target.stat().st_mode & 0o777 == 0o600


def test_an_explicit_mode_wins_over_the_replaced_files(tmp_path: Path) -> None:
    target = tmp_path / "hook.token"
    target.write_text("old")
    os.chmod(target, 0o644)
    atomic_write_text(target, "new\n", mode=0o600)
    assert target.stat().st_mode & 0o777 == 0o600 and target.read_text() == "new\n"
    atomic_write_bytes(target, b"newer", mode=0o640)
    assert target.stat().st_mode & 0o777 == 0o640


def test_failed_write_removes_its_temp_file_and_keeps_the_old_content(tmp_path: Path) -> None:
    target = tmp_path / "dir_in_the_way"
    target.mkdir()  # os.replace onto a directory fails
    (target / "keep").write_text("old")
    with pytest.raises(OSError):
        atomic_write_bytes(target, b"new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir_in_the_way"]
    assert (target / "keep").read_text() == "old"


def test_move_aside_never_clobbers(tmp_path: Path) -> None:
    first = tmp_path / "config.toml"
    first.write_text("one")
    moved_one = move_aside(first)
    first.write_text("two")
    moved_two = move_aside(first)
    assert moved_one != moved_two
    assert moved_one.name.startswith("config.toml.corrupt-")
    assert moved_one.read_text() == "one" and moved_two.read_text() == "two"
    assert not first.exists()


def test_sweep_removes_only_old_temp_files_of_that_target(tmp_path: Path) -> None:
    target = tmp_path / "config.toml"
    old = tmp_path / ".config.toml.abc.tmp"
    fresh = tmp_path / ".config.toml.def.tmp"
    other = tmp_path / ".other.toml.abc.tmp"
    for path in (old, fresh, other):
        path.write_text("partial")
    past = time.time() - 3600
    os.utime(old, (past, past))
    os.utime(other, (past, past))
    removed = sweep_stale_temps(target, older_than_s=60)
    assert removed == [old]
    assert fresh.exists() and other.exists()
