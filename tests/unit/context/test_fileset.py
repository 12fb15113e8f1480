"""Resolving the tracked file set: globs, excludes, explicit paths."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from manual_slop.context.errors import FileSetError
from manual_slop.context.fileset import glob_regex, is_excluded, resolve_files
from tests.unit.context.fixture_project import build_project


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return build_project(tmp_path / "proj")


def names(project: Path, patterns, exclude=()) -> list[str]:
    return [r.name for r in resolve_files(project, patterns, exclude)]


def test_double_star_matches_any_depth_and_single_star_one_segment(project: Path) -> None:
    (project / "src" / "pkg" / "deep").mkdir(parents=True)
    (project / "src" / "pkg" / "deep" / "x.py").write_text("")
    assert "src/pkg/deep/x.py" in names(project, ["src/**/*.py"])
    assert "src/app.py" in names(project, ["src/**/*.py"])
    assert names(project, ["src/*.py"]) == ["src/app.py", "src/big.py", "src/broken.py", "src/secrets.py"]
    assert names(project, ["*.t?ml"]) == ["settings.toml"]


def test_excludes_by_name_or_path_and_explicit_files_stay(project: Path) -> None:
    everything = names(project, ["**/*"])
    assert "src/__pycache__/app.cpython-311.pyc" in everything
    assert not any("__pycache__" in n for n in names(project, ["**/*"], ["__pycache__"]))
    assert not any("__pycache__" in n for n in names(project, ["**/*"], ["**/__pycache__/**"]))
    assert not any(n.startswith("docs/") for n in names(project, ["**/*"], ["docs"]))
    assert names(project, ["src/*.py"], ["src/b*.py"]) == ["src/app.py", "src/secrets.py"]
    assert names(project, ["notes.txt"], ["*.txt"]) == ["notes.txt"]  # named explicitly


def test_result_is_sorted_unique_and_names_missing_files(project: Path) -> None:
    found = resolve_files(project, ["src/app.py", "src/*.py", "nope.py", "src/app.py"])
    assert [r.name for r in found] == [
        "nope.py",
        "src/app.py",
        "src/big.py",
        "src/broken.py",
        "src/secrets.py",
    ]
    assert [r.missing for r in found] == [True, False, False, False, False]


def test_a_directory_path_means_everything_below_it(project: Path) -> None:
    assert names(project, ["docs"]) == ["docs/big.md", "docs/guide.md"]


def test_git_dirs_are_never_walked_and_fifos_are_skipped(project: Path) -> None:
    (project / ".git").mkdir()
    (project / ".git" / "config").write_text("x")
    os.mkfifo(project / "pipe.txt")
    found = names(project, ["**/*"])
    assert not any(n.startswith(".git/") for n in found)
    assert "pipe.txt" not in found


def test_paths_outside_the_base_dir_are_shown_absolute(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "other.py"
    outside.write_text("x = 1\n")
    assert names(project, [str(outside)]) == [outside.as_posix()]
    assert names(project, ["../other.py"]) == [outside.as_posix()]


def test_a_missing_base_dir_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileSetError, match="does not exist"):
        resolve_files(tmp_path / "nowhere", ["*.py"])


def test_glob_translation() -> None:
    assert glob_regex("src/**/*.py").fullmatch("src/a/b/c.py")
    assert glob_regex("src/**/*.py").fullmatch("src/c.py")
    assert not glob_regex("src/*.py").fullmatch("src/a/c.py")
    assert glob_regex("[!a]?.md").fullmatch("bx.md") and not glob_regex("[!a]?.md").fullmatch("ax.md")
    assert is_excluded("a/build", ["build"], is_dir=True)
    assert is_excluded("docs/old", ["docs/old/**"], is_dir=True)
    assert not is_excluded("docs/older/x.md", ["docs/old"])


def test_a_pattern_the_os_cannot_look_up_is_missing_not_an_error(project: Path) -> None:
    """A name over the file system's limit (ENAMETOOLONG) is listed as missing; the rest resolve."""
    found = resolve_files(project, ["x" * 300, "y/" * 2100 + "z.txt", "notes.txt"])
    assert {r.name: r.missing for r in found}["notes.txt"] is False
    assert sum(r.missing for r in found) == 2 and len(found) == 3
