"""A project's files as a git bundle: uncommitted and untracked files travel, nothing is written
to the project, and the changes made elsewhere come back as a patch that applies."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from manual_slop.mma.snapshot import Snapshot
from manual_slop.mma.worktree import ScratchTree


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    git(project, "config", "user.email", "t@example.com")
    git(project, "config", "user.name", "t")
    (project / "a.txt").write_text("one\n")
    (project / "bin.dat").write_bytes(bytes(range(256)))
    git(project, "add", "-A")
    git(project, "commit", "-qm", "first")
    (project / "a.txt").write_text("one\nchanged, not committed\n")
    (project / "new.txt").write_text("untracked\n")
    return project


def test_uncommitted_and_untracked_files_travel_and_the_project_is_untouched(
    repo: Path, tmp_path: Path
) -> None:
    refs_before, status_before = git(repo, "for-each-ref"), git(repo, "status", "--porcelain")
    with ScratchTree(repo) as tree:
        snapshot = Snapshot.of(tree)
    assert git(repo, "for-each-ref") == refs_before and git(repo, "status", "--porcelain") == status_before
    assert git(repo, "worktree", "list").count("\n") == 1
    folder = snapshot.unpack(tmp_path / "remote")
    assert (folder / "a.txt").read_text() == "one\nchanged, not committed\n"
    assert (folder / "new.txt").read_text() == "untracked\n"
    assert (folder / "bin.dat").read_bytes() == bytes(range(256))
    assert not snapshot.diff(folder)


def test_changes_made_elsewhere_come_back_as_a_patch_the_scratch_tree_accepts(
    repo: Path, tmp_path: Path
) -> None:
    with ScratchTree(repo) as tree:
        snapshot = Snapshot.of(tree)
        folder = snapshot.unpack(tmp_path / "remote")
        (folder / "a.txt").write_text("one\nchanged remotely\n")
        (folder / "bin.dat").write_bytes(bytes(reversed(range(256))))
        (folder / "added.txt").write_text("added\n")
        (folder / "new.txt").unlink()
        patch = snapshot.diff(folder)
        subprocess.run(["git", "apply", "--binary", "-"], cwd=tree.path, input=patch.encode(), check=True)
        assert tree.diff() == patch  # the same change, seen from the app's side
        assert (tree.path / "bin.dat").read_bytes() == bytes(reversed(range(256)))


def test_a_project_in_a_subfolder_and_one_without_git(tmp_path: Path, repo: Path) -> None:
    sub = repo / "pkg"
    sub.mkdir()
    (sub / "m.py").write_text("x = 1\n")
    with ScratchTree(sub) as tree:
        snapshot = Snapshot.of(tree)
    assert snapshot.subdir == "pkg"
    folder = snapshot.unpack(tmp_path / "r1")
    assert folder.name == "pkg" and (folder / "m.py").read_text() == "x = 1\n"
    (folder / "m.py").write_text("x = 2\n")
    assert "+x = 2" in snapshot.diff(folder) and "b/m.py" in snapshot.diff(folder)

    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "f.txt").write_text("plain\n")
    with ScratchTree(plain) as tree:
        assert tree.mode == "copy"
        snapshot = Snapshot.of(tree)
    assert (snapshot.unpack(tmp_path / "r2") / "f.txt").read_text() == "plain\n"
