"""Which token is in effect, the private runtime file, and how clients find it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from manual_slop.hooks.errors import HookStartError
from manual_slop.hooks.token import (
    TokenSource,
    discover_token,
    remove_token_file,
    resolve_hook_auth,
    runtime_dir,
    runtime_token_path,
    write_token_file,
)


def test_the_environment_wins_then_the_config_then_a_fresh_token() -> None:
    assert resolve_hook_auth({"SLOP_HOOK_TOKEN": "from-env"}, "from-config").token == "from-env"
    assert resolve_hook_auth({}, "from-config").source is TokenSource.CONFIG
    first, second = resolve_hook_auth({}, ""), resolve_hook_auth({}, "")
    assert first.source is TokenSource.GENERATED and not first.configured
    assert len(first.token) >= 43 and first.token != second.token  # 32 random bytes, new each start
    off = resolve_hook_auth({}, "", require_token=False)
    assert off.token == "" and not off.required and off.source is TokenSource.OFF
    assert resolve_hook_auth({}, "set", require_token=False).required  # a configured token still counts


def test_the_runtime_folder_is_per_user(tmp_path: Path) -> None:
    assert runtime_dir({"XDG_RUNTIME_DIR": str(tmp_path)}) == tmp_path / "manual_slop"
    fallback = runtime_dir({"XDG_RUNTIME_DIR": "relative/not/allowed"})
    assert fallback.name == f"manual_slop-{os.getuid()}"
    assert runtime_token_path(4321, {"XDG_RUNTIME_DIR": str(tmp_path)}).name == "hook-4321.token"


def test_the_token_file_is_private_and_found_by_port(tmp_path: Path) -> None:
    env = {"XDG_RUNTIME_DIR": str(tmp_path)}
    path = write_token_file(runtime_token_path(5555, env), "secret-token", private_folder=True)
    assert path.read_text() == "secret-token\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert discover_token(5555, env) == "secret-token"
    assert discover_token(5556, env) == ""
    assert discover_token(5555, {**env, "SLOP_HOOK_TOKEN": "explicit"}) == "explicit"
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp file left behind


def test_a_loose_folder_is_tightened_and_a_replaced_file_stays_private(tmp_path: Path) -> None:
    folder = tmp_path / "manual_slop"
    folder.mkdir(mode=0o777)
    os.chmod(folder, 0o777)
    target = folder / "hook-1.token"
    target.write_text("old\n")
    os.chmod(target, 0o644)
    write_token_file(target, "new-token", private_folder=True)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(target.stat().st_mode) == 0o600 and target.read_text() == "new-token\n"


def test_a_planted_symlink_folder_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "attacker"
    elsewhere.mkdir()
    (tmp_path / "manual_slop").symlink_to(elsewhere)
    with pytest.raises(HookStartError, match="not a plain folder"):
        write_token_file(runtime_token_path(7, {"XDG_RUNTIME_DIR": str(tmp_path)}), "t", private_folder=True)
    assert list(elsewhere.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can make a folder owned by another user")
def test_a_folder_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "manual_slop"
    folder.mkdir(mode=0o700)
    os.chown(folder, 65534, 65534)
    with pytest.raises(HookStartError, match="belongs to another user"):
        write_token_file(folder / "hook-9.token", "t", private_folder=True)
    assert list(folder.iterdir()) == []


def test_removal_leaves_a_file_that_another_app_rewrote(tmp_path: Path) -> None:
    path = write_token_file(tmp_path / "hook.token", "mine")
    path.write_text("theirs\n")
    remove_token_file(path, "mine")
    assert path.read_text() == "theirs\n"
    remove_token_file(path, "theirs")
    assert not path.exists()
    remove_token_file(path, "theirs")  # already gone: no error
