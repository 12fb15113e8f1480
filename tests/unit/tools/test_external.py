"""An external agent's read-only tools are approved like ours: only inside the project."""

from __future__ import annotations

from pathlib import Path

from manual_slop.tools.external import read_only_approval
from manual_slop.tools.security import PathPolicy


def policy(tmp_path: Path) -> PathPolicy:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n")
    (tmp_path / "credentials.toml").write_text('[x]\napi_key = "k"\n')
    return PathPolicy.for_project(tmp_path, [], [])


def test_reads_inside_the_project_are_approved(tmp_path: Path) -> None:
    rules = policy(tmp_path)
    assert read_only_approval("read_file", {"file_path": "docs/a.md"}, rules) == (
        "read-only tool read_file inside the project"
    )
    assert read_only_approval("list_directory", {"dir_path": str(tmp_path / "docs")}, rules)
    assert read_only_approval("glob", {"pattern": "**/*.md"}, rules)  # the CLI's cwd is the project
    assert read_only_approval("read_many_files", {"paths": ["docs/a.md"], "include": ["*.md"]}, rules)


def test_anything_else_asks(tmp_path: Path) -> None:
    rules = policy(tmp_path)
    for tool, args in (
        ("read_file", {"file_path": "/etc/passwd"}),
        ("read_file", {"file_path": "../outside.txt"}),
        ("read_file", {"file_path": "credentials.toml"}),
        ("read_many_files", {"paths": ["docs/a.md", "/etc/hosts"]}),
        ("read_file", {"file_path": 42}),
        ("write_file", {"file_path": "docs/a.md", "content": "x"}),
        ("run_shell_command", {"command": "ls"}),
        ("web_fetch", {"prompt": "https://example.com"}),
        ("some_new_tool", {}),
    ):
        assert read_only_approval(tool, args, rules) == "", (tool, args)
