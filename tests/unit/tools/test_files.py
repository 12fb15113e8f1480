"""Read-only file tools on a temporary project, edge cases included."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from manual_slop.tools import ToolStatus


@pytest.fixture
def tree(project: Path) -> Path:
    (project / "src" / "pkg").mkdir(parents=True)
    (project / "src" / "pkg" / "mod.py").write_text("import os\n\ndef main():\n    return os.sep\n")
    (project / "src" / "app.py").write_text("print('app')\n")
    (project / "README.md").write_text("# Title\n\nSome text.\n")
    (project / "crlf.txt").write_bytes(b"alpha\r\nbeta\r\ngamma\r\n")
    (project / "empty.txt").write_bytes(b"")
    (project / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (project / "latin1.txt").write_bytes("caf\xe9 cr\xe8me\n".encode("latin-1"))
    (project / "node_modules" / "dep").mkdir(parents=True)
    (project / "node_modules" / "dep" / "index.js").write_text("main()\n")
    (project / "credentials.toml").write_text('[anthropic]\napi_key = "sk-secret"\n')
    (project / "manual_slop_history.toml").write_text("[discussions]\n")
    return project


# -- read_file ------------------------------------------------------------------------------
def test_read_file_returns_the_text_with_its_line_endings(run, tree: Path) -> None:
    result = run("read_file", path="crlf.txt")
    assert result.ok and result.content == "alpha\r\nbeta\r\ngamma\r\n"


def test_read_file_edge_cases(run, tree: Path) -> None:
    assert run("read_file", path="empty.txt").content == "(empty.txt is empty)"
    binary = run("read_file", path="image.png")
    assert binary.status is ToolStatus.ERROR and "binary file" in binary.content
    latin = run("read_file", path="latin1.txt")
    assert latin.ok and "not valid UTF-8" in latin.content and "café crème" in latin.content
    missing = run("read_file", path="nope.txt")
    assert missing.status is ToolStatus.ERROR and missing.content == "Error: no such file: nope.txt"
    folder = run("read_file", path="src")
    assert "is a directory" in folder.content


def test_read_file_of_a_huge_file_points_to_the_slice_tools(run, project: Path) -> None:
    (project / "big.log").write_text("".join(f"line {i}\n" for i in range(200_000)))
    result = run("read_file", path="big.log")
    assert result.ok and result.metadata["truncated"] is False  # the tool cut it itself, under the cap
    assert result.content.startswith("line 0\nline 1\n")
    assert "use get_file_slice" in result.content.replace("Read further with", "use")
    assert len(result.content.encode()) < 100_000


def test_a_file_deleted_between_calls(run, tree: Path) -> None:
    assert run("read_file", path="src/app.py").ok
    (tree / "src" / "app.py").unlink()
    for tool, extra in [
        ("read_file", {}),
        ("get_file_slice", {"start_line": 1, "end_line": 2}),
        ("grep", {"regex": "x"}),
    ]:
        result = run(tool, path="src/app.py", **extra)
        assert result.status is ToolStatus.ERROR, tool
        assert "no such file" in result.content, tool


def test_protected_files_cannot_be_read(run, tree: Path) -> None:
    for path in ("credentials.toml", "manual_slop_history.toml", "./CREDENTIALS.toml"):
        result = run("read_file", path=path)
        assert result.status is ToolStatus.DENIED and result.content.startswith("ACCESS DENIED:")
        assert "sk-secret" not in result.content


# -- list_directory / get_tree / search_files -------------------------------------------------------
def test_list_directory_shows_name_type_and_size(run, tree: Path) -> None:
    result = run("list_directory", path=".")
    lines = result.content.splitlines()
    assert lines[1].split() == ["type", "size", "name"]
    assert any(line.split() == ["dir", "-", "src/"] for line in lines)
    assert any(line.split() == ["file", "20", "crlf.txt"] for line in lines)
    assert "credentials.toml" not in result.content and "history" not in result.content
    assert "(2 protected or outside entries not shown)" in result.content


def test_list_directory_errors(run, tree: Path) -> None:
    assert "no such directory" in run("list_directory", path="missing").content
    assert "is a file" in run("list_directory", path="README.md").content
    (tree / "void").mkdir()
    assert run("list_directory", path="void").content == "void is empty"


def test_symlinks_pointing_outside_are_hidden(run, tree: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("classified\n")
    (tree / "escape").symlink_to(tmp_path / "secret.txt")
    assert "escape" not in run("list_directory", path=".").content
    assert run("grep", path=".", regex="classified").content.startswith("no matches")
    assert run("read_file", path="escape").status is ToolStatus.DENIED


def test_get_tree_respects_depth_and_skips_noise(run, tree: Path) -> None:
    shallow = run("get_tree", path=".", max_depth=1).content
    assert "  src/" in shallow and "pkg" not in shallow
    deep = run("get_tree", path=".", max_depth=3).content
    assert "      mod.py" in deep
    assert "node_modules/ (not expanded)" in deep and "index.js" not in deep
    assert run("get_tree", path=".", max_depth=0).status is ToolStatus.ERROR  # schema minimum


def test_search_files_globs(run, tree: Path) -> None:
    result = run("search_files", path=".", pattern="**/*.py")
    assert result.content.splitlines()[1:] == ["src/app.py", "src/pkg/mod.py"]
    assert "no files match" in run("search_files", path="src", pattern="*.rs").content
    assert run("search_files", path=".", pattern="../*").status is ToolStatus.ERROR


# -- get_file_slice / grep ----------------------------------------------------------------------------
def test_get_file_slice_returns_exact_lines(run, tree: Path) -> None:
    result = run("get_file_slice", path="crlf.txt", start_line=2, end_line=3)
    assert result.content == "[crlf.txt: lines 2-3 of 3]\nbeta\r\ngamma\r\n"
    past = run("get_file_slice", path="crlf.txt", start_line=9, end_line=12)
    assert past.status is ToolStatus.ERROR and "past the end of crlf.txt (3 lines)" in past.content
    backwards = run("get_file_slice", path="crlf.txt", start_line=3, end_line=2)
    assert "before start_line" in backwards.content
    assert "binary" in run("get_file_slice", path="image.png", start_line=1, end_line=1).content


def test_get_file_slice_of_a_huge_file(run, project: Path) -> None:
    (project / "big.txt").write_text("".join(f"row {i}\n" for i in range(1, 300_001)))
    result = run("get_file_slice", path="big.txt", start_line=150_000, end_line=150_002)
    assert result.content == "[big.txt: lines 150000-150002 of 300000]\nrow 150000\nrow 150001\nrow 150002\n"


def test_grep_finds_lines_and_skips_binaries_noise_and_protected_files(run, tree: Path) -> None:
    result = run("grep", path=".", regex=r"main|sk-secret|IHDR")
    assert result.content.splitlines() == ["src/pkg/mod.py:3: def main():"]
    assert run("grep", path="crlf.txt", regex="^beta$").content == "crlf.txt:2: beta"
    limited = run("grep", path=".", regex=".", max_results=2)
    assert len(limited.content.splitlines()) == 3 and "max_results=2" in limited.content
    bad = run("grep", path=".", regex="(")
    assert bad.status is ToolStatus.ERROR and "invalid regex" in bad.content
    assert "no matches" in run("grep", path=".", regex="zzz_nothing").content


def test_grep_refuses_a_huge_regex_before_compiling_it(run, tree: Path) -> None:
    huge = run("grep", path=".", regex="a" * 1_000_000)
    assert huge.status is ToolStatus.ERROR
    assert "1,000,000 characters, at most 2,000 allowed (at 'regex')" in huge.content
    assert len(huge.content) < 500  # the message states sizes, it does not repeat the argument
    assert run("grep", path=".", regex="m" + "a?" * 900 + "in").status is not ToolStatus.ERROR


def test_unreadable_files_give_a_clear_error(run, tree: Path) -> None:
    if not hasattr(os, "geteuid") or os.geteuid() == 0:
        pytest.skip("root (or Windows) ignores file modes")
    target = tree / "locked.txt"
    target.write_text("x")
    target.chmod(0)
    assert "permission denied: locked.txt" in run("read_file", path="locked.txt").content
