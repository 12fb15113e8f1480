"""Agent profiles on disk: loading, refusing bad folders with the reason, writing, deleting."""

from __future__ import annotations

from pathlib import Path

import pytest

from manual_slop.agents.profiles import (
    AgentProfile,
    ProfileError,
    delete_profile,
    load_catalog,
    load_profile,
    profile_from_dict,
    save_profile,
)


def make(root: Path, key: str, prompt: str = "You design systems.", **files: str) -> Path:
    folder = root / "agents" / key
    folder.mkdir(parents=True)
    (folder / "system_prompt.md").write_text(prompt, encoding="utf-8")
    for name, text in files.items():
        (folder / name.replace("__", ".")).write_text(text, encoding="utf-8")
    return folder


def test_a_full_profile_loads_every_file(tmp_path: Path) -> None:
    folder = make(
        tmp_path,
        "architect",
        description__txt="  System design\n",
        memory_categories__txt="Design\n\nAPI\ndesign\n",
        workspace_slug__txt="main\n",
        agent__toml=(
            'provider = "deepseek"\nmodel = "deepseek-chat"\n'
            'tools = ["read_file"]\ntoken_profile = "extreme"\n'
        ),
    )
    profile = load_profile(folder)
    assert profile == AgentProfile(
        key="architect",
        system_prompt="You design systems.",
        description="System design",
        memory_categories=("design", "api"),  # lower-cased, blank lines and repeats dropped
        workspace_slug="main",
        provider="deepseek",
        model="deepseek-chat",
        tools=("read_file",),
        token_profile="extreme",
        scope="project",
        path=str(folder),
    )


def test_project_profiles_hide_user_profiles_and_bad_folders_are_listed(tmp_path: Path) -> None:
    project, user = tmp_path / "project", tmp_path / "user"
    make(user, "coder", "user coder")
    make(user, "writer", "user writer")
    make(project, "coder", "project coder")
    make(project, "empty", "   ")
    make(project, "badtoml", "ok", agent__toml="provider = [")
    make(project, "unknownkey", "ok", agent__toml='colour = "red"\n')
    make(project, "badprovider", "ok", agent__toml='provider = "openai-ish"\n')
    (project / "agents" / "no prompt").mkdir()
    (project / "agents" / ".hidden").mkdir()
    (project / "agents" / "README.md").write_text("not a profile")
    binary = make(project, "binary", "ok")
    (binary / "description.txt").write_bytes(b"\xff\xfe bad")
    catalog = load_catalog(project, user)
    assert catalog.keys() == ["coder", "writer"]
    assert catalog.get("coder").system_prompt == "project coder"  # project wins
    assert catalog.get("coder").scope == "project" and catalog.get("writer").scope == "user"
    reasons = {p.key: p.reason for p in catalog.problems}
    assert set(reasons) == {"empty", "badtoml", "unknownkey", "badprovider", "no prompt", "binary"}
    assert "system_prompt.md is missing or empty" in reasons["empty"]
    assert "not valid TOML" in reasons["badtoml"]
    assert "unknown key(s) colour" in reasons["unknownkey"]
    assert "provider 'openai-ish'" in reasons["badprovider"]
    assert "agent key 'no prompt'" in reasons["no prompt"]
    assert "description.txt is not UTF-8" in reasons["binary"]


def test_missing_folders_give_an_empty_catalog(tmp_path: Path) -> None:
    catalog = load_catalog(tmp_path / "nowhere", None)
    assert catalog.keys() == [] and catalog.problems == ()


def test_save_then_load_round_trips_and_clears_agent_toml(tmp_path: Path) -> None:
    profile = profile_from_dict(
        "coder",
        {
            "system_prompt": 'You write "code".\n',
            "description": "Writes\ncode",
            "memory_categories": ["python", "tests"],
            "model": 'm "quoted" \\ x',
            "tools": ["read_file", "edit_file"],
        },
    )
    folder = save_profile(tmp_path, profile)
    loaded = load_profile(folder)
    assert loaded.system_prompt == 'You write "code".\n'
    assert loaded.description == "Writes code"
    assert loaded.model == 'm "quoted" \\ x' and loaded.tools == ("read_file", "edit_file")
    assert loaded.memory_categories == ("python", "tests")
    save_profile(tmp_path, profile_from_dict("coder", {"system_prompt": "plain"}))
    assert not (folder / "agent.toml").exists()
    assert load_profile(folder).tools is None


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"system_prompt": ""}, "system_prompt must not be empty"),
        ({"system_prompt": "x", "tools": "read_file"}, "tools must be a list of strings"),
        ({"system_prompt": "x", "tools": ["nope"]}, "unknown tool(s): nope"),
        ({"system_prompt": "x", "memory_categories": ["a/b"]}, "memory_categories"),
        ({"system_prompt": "x", "token_profile": "huge"}, "token_profile 'huge'"),
        ({"system_prompt": "x", "workspace_slug": "a\nb"}, "workspace_slug must be one line"),
        ({"system_prompt": 3}, "system_prompt must be text"),
    ],
)
def test_bad_values_name_the_field(values: dict, message: str) -> None:
    with pytest.raises(ProfileError) as caught:
        profile_from_dict("k", values, known_tools=["read_file"], known_token_profiles=["balanced"])
    assert message in str(caught.value) and "agent k" in str(caught.value)


@pytest.mark.parametrize("key", ["", "../up", "a/b", "-dash", "x" * 65, "spa ce", "é"])
def test_bad_keys_are_refused(key: str, tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="agent key"):
        profile_from_dict(key, {"system_prompt": "x"})


def test_delete_moves_the_folder_aside_and_never_destroys_it(tmp_path: Path) -> None:
    make(tmp_path, "coder", "keep me")
    first = delete_profile(tmp_path, "coder", tmp_path)
    make(tmp_path, "coder", "keep me too")
    second = delete_profile(tmp_path, "coder", tmp_path)
    assert first != second
    assert (first / "system_prompt.md").read_text() == "keep me"
    assert (second / "system_prompt.md").read_text() == "keep me too"
    assert not (tmp_path / "agents" / "coder").exists()
    with pytest.raises(ProfileError, match="no profile folder"):
        delete_profile(tmp_path, "coder", tmp_path)
