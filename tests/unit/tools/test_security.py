"""PathPolicy: resolution, the blacklist, the allowlist and containment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from manual_slop.tools import AccessDenied, PathPolicy
from manual_slop.tools.security import name_skeleton


@pytest.fixture
def project(tmp_path: Path) -> Path:
    base = tmp_path / "proj"
    (base / "src").mkdir(parents=True)
    (base / "src" / "main.py").write_text("print(1)\n")
    (tmp_path / "outside.txt").write_text("secret\n")
    return base


def test_relative_paths_resolve_against_the_base_dir(project: Path) -> None:
    policy = PathPolicy.for_project(project)
    assert policy.check("src/main.py") == project.resolve() / "src" / "main.py"
    assert policy.check("./src/../src/main.py") == project.resolve() / "src" / "main.py"
    assert policy.check("new/file.txt", write=True) == project.resolve() / "new" / "file.txt"
    assert policy.display(policy.check("src/main.py")) == "src/main.py"


def test_escapes_are_denied_with_the_reason(project: Path) -> None:
    policy = PathPolicy.for_project(project)
    with pytest.raises(AccessDenied, match="outside the project"):
        policy.check("../outside.txt")
    (project / "link").symlink_to(project.parent / "outside.txt")
    with pytest.raises(AccessDenied, match="outside the project"):
        policy.check("link")
    with pytest.raises(AccessDenied, match="outside the project"):
        policy.check("link", write=True)
    assert policy.is_allowed("link") == (
        False,
        f"resolves to {project.parent.resolve() / 'outside.txt'}, outside the project "
        f"(allowed: {project.resolve()})",
    )


def test_tracked_files_outside_the_base_dir_are_allowed_by_name(project: Path) -> None:
    policy = PathPolicy.for_project(project, ["../outside.txt"])
    assert policy.check("../outside.txt") == (project.parent / "outside.txt").resolve()
    assert policy.is_allowed("../other.txt")[0] is False


def test_the_blacklist_comes_first(project: Path) -> None:
    (project / "credentials.toml").write_text("[x]\n")
    policy = PathPolicy.for_project(project, ["credentials.toml"])  # even when tracked
    for path in ("credentials.toml", "CONFIG.TOML", "sub/history.toml", "manual_slop_history.toml"):
        with pytest.raises(AccessDenied):
            policy.check(path)
    with pytest.raises(AccessDenied, match="session logs folder"):
        policy.check("logs/sessions/x/comms.log")


def test_protected_files_are_recognised_through_hard_links(project: Path, tmp_path: Path) -> None:
    secret = tmp_path / "keys.toml"
    secret.write_text("k")
    os.link(secret, project / "notes.txt")
    policy = PathPolicy.for_project(project, protected_files=[secret])
    with pytest.raises(AccessDenied, match="app's own"):
        policy.check("notes.txt")


@pytest.mark.parametrize(
    "name",
    [
        "credentials.toml",
        "".join(chr(ord(c) + 0xFEE0) for c in "CREDENTIALS") + ".toml",  # full-width
        "cr\u0435dentials.toml",
        "credentials.toml. ",
        "c\u200bredentials.toml",
    ],
)
def test_name_skeletons_fold_look_alikes(name: str) -> None:
    assert name_skeleton(name) == "credentials.toml"


def test_unresolvable_paths_are_denied_not_raised(project: Path) -> None:
    policy = PathPolicy.for_project(project)
    (project / "loop").symlink_to(project / "loop")
    for bad in ("a\x00b", "", "x" * 300, "a/" * 3000, "loop", "\u2025/etc", 42):
        allowed, reason = policy.is_allowed(bad)
        assert allowed is False and reason, bad
