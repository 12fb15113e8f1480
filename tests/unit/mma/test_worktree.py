"""Scratch trees with real git in temporary folders: what they contain, the diff they give back,
and that the project (its files and its ``.git``) is left exactly as it was."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from manual_slop.mma.tier4 import apply_patch
from manual_slop.mma.worktree import ScratchTree, ScratchTreeError

HELLO = 'def greet():\n    return "hello"\n'


@pytest.fixture
def scratch_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Scratch trees are made here, so a test can see that none is left behind."""
    folder = tmp_path / "scratch-tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder
    assert list(folder.iterdir()) == [], "a scratch tree was left behind"


def git(cwd: Path, *args: str, home: Path | None = None) -> str:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home or cwd),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "LC_ALL": "C",
    }
    identity = (
        "-c",
        "user.name=Test",
        "-c",
        "user.email=test@example.invalid",
        "-c",
        "init.defaultBranch=main",
    )
    proc = subprocess.run(
        ["git", *identity, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def make_repo(folder: Path, files: dict[str, str | bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    git(folder, "init", "--quiet")
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    git(folder, "add", "-A")
    git(folder, "commit", "--quiet", "-m", "initial")
    return folder


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``folder`` (``.git`` included): its bytes and mtime. Objects are compared by
    content only: git refreshes the mtime of an existing object it is asked to write again (so gc
    keeps it), also when that object sits in a borrowed (alternate) store."""
    return {
        p.relative_to(folder).as_posix(): (
            p.read_bytes(),
            0 if "objects" in p.relative_to(folder).parts[:2] else p.stat().st_mtime_ns,
        )
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def worktrees(repo: Path) -> list[str]:
    return [
        line
        for line in git(repo, "worktree", "list", "--porcelain").splitlines()
        if line.startswith("worktree ")
    ]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = make_repo(
        tmp_path / "repo",
        {"hello.py": HELLO, "notes.txt": "one\ntwo\n", ".gitignore": "*.log\n", "pkg/mod.py": "X = 1\n"},
    )
    return folder


def test_a_worktree_holds_head_plus_the_uncommitted_state_and_diffs_against_it(
    repo: Path, scratch_tmp: Path
) -> None:
    (repo / "hello.py").write_text(HELLO.replace("hello", "dirty"))  # unstaged change
    (repo / "notes.txt").write_text("one\ntwo\nthree\n")
    git(repo, "add", "notes.txt")  # staged change
    (repo / "draft.md").write_text("not yet added\n")  # untracked
    (repo / "debug.log").write_text("ignored\n")
    (repo / ".venv").mkdir()
    (repo / ".venv" / "big.bin").write_bytes(b"x" * 100)
    before = snapshot(repo)
    with ScratchTree(repo) as tree:
        assert tree.mode == "worktree"
        assert len(worktrees(repo)) == 2
        assert (tree.path / "hello.py").read_text() == HELLO.replace("hello", "dirty")
        assert (tree.path / "notes.txt").read_text() == "one\ntwo\nthree\n"
        assert (tree.path / "draft.md").read_text() == "not yet added\n"
        assert not (tree.path / "debug.log").exists()
        assert not (tree.path / ".venv").exists()
        assert tree.diff() == ""
        assert tree.changed_files() == []

        (tree.path / "hello.py").write_text(HELLO.replace("hello", "changed"))
        (tree.path / "pkg" / "sub").mkdir()
        (tree.path / "pkg" / "sub" / "new.py").write_text("NEW = 1\n")
        (tree.path / "notes.txt").unlink()
        patch = tree.diff()
        assert tree.changed_files() == ["hello.py", "notes.txt", "pkg/sub/new.py"]
        scratch = tree.top
    assert not scratch.exists()
    assert len(worktrees(repo)) == 1
    assert snapshot(repo) == before  # files, index, objects, refs: not one byte or mtime changed

    assert patch.startswith("diff --git a/hello.py b/hello.py\n")
    assert '-    return "dirty"\n+    return "changed"\n' in patch
    assert "--- a/notes.txt\n+++ /dev/null\n@@ -1,3 +0,0 @@\n-one\n-two\n-three\n" in patch
    assert (
        "new file mode 100644" in patch
        and "--- /dev/null\n+++ b/pkg/sub/new.py\n@@ -0,0 +1 @@\n+NEW = 1\n" in patch
    )
    written = apply_patch(patch, repo)
    assert sorted(p.relative_to(repo).as_posix() for p in written) == [
        "hello.py",
        "notes.txt",
        "pkg/sub/new.py",
    ]
    assert (repo / "hello.py").read_text() == HELLO.replace("hello", "changed")
    assert not (repo / "notes.txt").exists()
    assert (repo / "pkg" / "sub" / "new.py").read_text() == "NEW = 1\n"


def test_binary_changes_come_back_as_git_binary_patches(
    repo: Path, tmp_path: Path, scratch_tmp: Path
) -> None:
    data = bytes(range(256)) * 4
    with ScratchTree(repo) as tree:
        (tree.path / "blob.bin").write_bytes(data)
        patch = tree.diff()
    assert "GIT binary patch" in patch
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "--quiet", str(repo), str(clone))
    subprocess.run(["git", "apply", "-"], cwd=clone, input=patch.encode(), check=True, timeout=60)
    assert (clone / "blob.bin").read_bytes() == data


def test_objects_written_in_the_tree_stay_out_of_the_project(repo: Path, scratch_tmp: Path) -> None:
    before = snapshot(repo)
    with ScratchTree(repo) as tree:
        (tree.path / "fresh.txt").write_text("a brand new blob\n")
        env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", **tree.env()}
        subprocess.run(["git", "add", "fresh.txt"], cwd=tree.path, env=env, check=True, timeout=60)
        assert "fresh.txt" in tree.diff()
    assert snapshot(repo) == before


def test_a_project_in_a_subfolder_diffs_relative_to_that_folder(tmp_path: Path, scratch_tmp: Path) -> None:
    repo = make_repo(tmp_path / "mono", {"app/main.py": "A = 1\n", "lib/util.py": "B = 1\n"})
    with ScratchTree(repo / "app") as tree:
        assert tree.path == tree.top / "app"
        (tree.path / "main.py").write_text("A = 2\n")
        (tree.top / "lib" / "util.py").write_text("B = 2\n")  # outside the project: not in its diff
        patch = tree.diff()
        assert tree.changed_files() == ["main.py"]
    assert patch.startswith("diff --git a/main.py b/main.py\n")
    assert "util.py" not in patch
    apply_patch(patch, repo / "app")
    assert (repo / "app" / "main.py").read_text() == "A = 2\n"


def test_a_folder_that_is_not_a_repository_is_copied(tmp_path: Path, scratch_tmp: Path) -> None:
    project = tmp_path / "plain"
    (project / "src").mkdir(parents=True)
    (project / "src" / "a.py").write_text("A = 1\n")
    (project / "README").write_text("read me\n")
    for skipped in (".venv", "node_modules", "src/__pycache__", ".slop_cache", ".tools"):
        (project / skipped).mkdir(parents=True)
        (project / skipped / "junk").write_text("junk\n")
    (project / "link").symlink_to("README")
    before = snapshot(project)
    with ScratchTree(project) as tree:
        assert tree.mode == "copy"
        assert tree.path == tree.top
        copied = sorted(
            p.relative_to(tree.path).as_posix() for p in tree.path.rglob("*") if ".git" not in p.parts
        )
        assert copied == ["README", "link", "src", "src/a.py"]
        assert (tree.path / "link").is_symlink()
        assert tree.diff() == ""
        (tree.path / "src" / "a.py").write_text("A = 2\n")
        patch = tree.diff()
    assert patch == (
        "diff --git a/src/a.py b/src/a.py\n"
        + next(line for line in patch.splitlines(keepends=True) if line.startswith("index "))
        + "--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n-A = 1\n+A = 2\n"
    )
    assert snapshot(project) == before
    assert not (project / ".git").exists()


def test_a_repository_without_commits_is_copied(tmp_path: Path, scratch_tmp: Path) -> None:
    project = tmp_path / "fresh"
    project.mkdir()
    git(project, "init", "--quiet")
    (project / "a.txt").write_text("a\n")
    with ScratchTree(project) as tree:
        assert tree.mode == "copy"
        assert (tree.path / "a.txt").read_text() == "a\n"


def test_a_project_too_large_to_copy_is_refused_and_nothing_is_left(
    tmp_path: Path, scratch_tmp: Path
) -> None:
    project = tmp_path / "big"
    project.mkdir()
    (project / "data.bin").write_bytes(b"\0" * 4096)
    with pytest.raises(ScratchTreeError, match=r"more than .* MB of files to copy"):
        ScratchTree(project, max_bytes=1024).open()


def test_user_and_repository_git_settings_do_not_leak_in(
    repo: Path, tmp_path: Path, scratch_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    marker = tmp_path / "hook-ran"
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    (home / ".gitconfig").write_text("[diff]\n\tnoprefix = true\n[core]\n\tautocrlf = true\n")
    git(repo, "config", "diff.mnemonicPrefix", "true")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "nowhere"))  # the caller's git variables are not used
    with ScratchTree(repo) as tree:
        (tree.path / "hello.py").write_text("changed\n")
        patch = tree.diff()
    assert patch.startswith("diff --git a/hello.py b/hello.py\n")
    assert "\n--- a/hello.py\n+++ b/hello.py\n" in patch
    assert not marker.exists()


def test_leaving_with_an_error_still_removes_the_tree(repo: Path, scratch_tmp: Path) -> None:
    tree = ScratchTree(repo)
    with pytest.raises(RuntimeError), tree:
        (tree.path / "hello.py").write_text("half done\n")
        raise RuntimeError("the tool crashed")
    assert len(worktrees(repo)) == 1
    tree.close()  # a second close does nothing
    with pytest.raises(ScratchTreeError, match="not open"):
        tree.diff()


def test_a_missing_project_folder_is_an_error(tmp_path: Path, scratch_tmp: Path) -> None:
    with pytest.raises(ScratchTreeError, match="is not a folder"):
        ScratchTree(tmp_path / "missing").open()
