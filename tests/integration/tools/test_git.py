"""get_git_diff against a real repository."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from manual_slop.tools import ToolStatus

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(project: Path) -> Path:
    git(project, "init", "-q", "-b", "main")
    (project / "a.py").write_text("x = 1\n")
    (project / "config.toml").write_text("key = 'old'\n")
    (project / "b.txt").write_text("b\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "init")
    return project


def test_unstaged_and_staged_changes(run, repo: Path) -> None:
    (repo / "a.py").write_text("x = 2\n")
    (repo / "b.txt").write_text("bb\n")
    (repo / "new.txt").write_text("n\n")
    diff = run("get_git_diff").content
    assert "-x = 1\n+x = 2" in diff and "+bb" in diff
    assert diff.endswith("untracked files (not in the diff):\n  new.txt")
    only_a = run("get_git_diff", path="a.py").content
    assert "a.py" in only_a and "b.txt" not in only_a
    git(repo, "add", "a.py")
    staged = run("get_git_diff", staged=True).content
    assert "+x = 2" in staged and "bb" not in staged
    assert run("get_git_diff", path="a.py").content == "no unstaged changes in a.py"


def test_protected_files_never_appear_in_a_diff(run, repo: Path) -> None:
    (repo / "config.toml").write_text("key = 'sk-new-secret'\n")
    diff = run("get_git_diff").content
    assert "sk-new-secret" not in diff and "config.toml" not in diff
    assert run("get_git_diff", path="config.toml").status is ToolStatus.DENIED


def test_outside_a_repository(run, project: Path) -> None:
    result = run("get_git_diff")
    assert result.status is ToolStatus.ERROR and "is not inside a git repository" in result.content
