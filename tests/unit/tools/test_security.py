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


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("credentials.toml", "credentials"), ("CREDENTIALS.TOML", "credentials"),
        ("credentials.toml.bak", "credentials"), ("credentials.toml.corrupt-20261124-120000", "credentials"),
        ("config.toml", "app config"), ("config.toml.invalid-20261124-120000", "app config"),
        ("x_history.toml", "history"), ("history.toml.corrupt-1", "history"),
        (".env", "env file"), (".env.local", "env file"), (".ENV.production", "env file"),
        ("prod.env", "env file"), (".envrc", "env file"),
        ("server.pem", "key file"), ("tls.KEY", "key file"), ("cert.p12", "key file"), ("id_rsa", "key file"),
        ("id_ed25519.pub", "key file"), ("id_ecdsa_sk", "key file"),
        (".netrc", "password store"), (".git-credentials", "password store"), (".pgpass", "password store"),
        ("\uff0eenv", "env file"), ("credentials.toml.", "credentials"),
        ("cred\u0435ntials.toml", "credentials"),
    ],
)  # fmt: skip
def test_secret_files_are_refused_by_name_with_the_rule(project: Path, name: str, rule: str) -> None:
    (project / "sub").mkdir(exist_ok=True)
    policy = PathPolicy.for_project(project, [f"sub/{name}"])  # even when tracked
    reason = policy.refusal(f"sub/{name}")
    assert reason is not None and f"(rule: {rule})" in reason
    with pytest.raises(AccessDenied, match=f"rule: {rule}"):
        policy.check(f"sub/{name}")


@pytest.mark.parametrize(
    "name",
    [
        "environment.py", "env.py", "envs/x.txt", "dotenv.md", "identity.py", "id_utils.py", "keyboard.py",
        "monkey.txt", "my_config.toml", "config.toml.bak", "history.toml.md", "credentials.json",
        "pem_notes.md", "netrc.py", ".environment",
    ],
)  # fmt: skip
def test_ordinary_names_are_not_refused(project: Path, name: str) -> None:
    policy = PathPolicy.for_project(project)
    assert policy.refusal(name) is None
    policy.check(name)


def test_a_symlink_to_a_secret_file_is_refused_under_its_innocent_name(project: Path) -> None:
    (project / ".env").write_text("TOKEN=abc\n")
    (project / "notes.txt").symlink_to(project / ".env")
    (project / "dir").mkdir()
    (project / "dir" / "keys").symlink_to(project.parent, target_is_directory=True)
    (project.parent / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    policy = PathPolicy.for_project(project, ["notes.txt"])
    assert "rule: env file" in (policy.refusal("notes.txt") or "")
    assert "rule: key file" in (policy.refusal("dir/keys/id_rsa") or "")
    assert "rule: key file" in (policy.refusal(project.parent / "id_rsa") or "")


def test_refusal_never_raises_and_refuses_what_cannot_be_resolved(project: Path) -> None:
    policy = PathPolicy.for_project(project)
    assert "NUL byte" in (policy.refusal("a\x00b") or "")
    assert "must be a string" in (policy.refusal(42) or "")
    assert "invisible characters" in (policy.refusal(".e\u200bnv") or "")
    assert policy.refusal("src/main.py") is None


def test_private_dirs_are_off_limits_with_their_label(project: Path, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.mkdir()
    (tokens / "hook-1.token").write_text("t\n")
    policy = PathPolicy.for_project(
        project, [str(tokens / "hook-1.token")], private_dirs=[(tokens, "the token folder")]
    )
    assert policy.refusal(tokens / "hook-1.token") == "the token folder is off limits to tools"
