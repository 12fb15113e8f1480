"""An external agent's read-only tools are approved like ours: only inside the project."""

from __future__ import annotations

from pathlib import Path

from manual_slop.tools.external import external_refusal, read_only_approval
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


def test_files_the_policy_refuses_are_refused_without_asking(tmp_path: Path) -> None:
    rules = policy(tmp_path)
    (tmp_path / ".env").write_text("TOKEN=x\n")
    (tmp_path / "docs" / "alias.md").symlink_to(tmp_path / "credentials.toml")
    for tool, args, rule in (
        ("read_file", {"file_path": "credentials.toml"}, "credentials"),
        ("read_file", {"absolute_path": str(tmp_path / ".env")}, "env file"),
        ("read_many_files", {"paths": ["docs/a.md", "docs/alias.md"]}, "credentials"),
        ("write_file", {"file_path": ".env.local", "content": "x"}, "env file"),
        ("replace", {"file_path": "server.pem", "old_string": "a", "new_string": "b"}, "key file"),
    ):
        refusal = external_refusal(tool, args, rules)
        assert refusal.startswith("ACCESS DENIED:") and f"(rule: {rule})" in refusal, (tool, args)
    for tool, args in (
        ("read_file", {"file_path": "docs/a.md"}),
        ("read_many_files", {"include": ["*.env"]}),  # a glob the CLI resolves inside its paths
        ("run_shell_command", {"command": "cat .env"}),  # not a file tool: the user sees the script
        ("write_file", {"file_path": "docs/b.md", "content": "x"}),
    ):
        assert external_refusal(tool, args, rules) == "", (tool, args)
