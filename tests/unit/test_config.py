from __future__ import annotations

import tomllib
from pathlib import Path

from manual_slop.config import (
    GLOBAL_SCHEMA,
    AppPaths,
    Credentials,
    Secret,
    TomlFile,
    history_path_for,
)


def test_missing_file_loads_defaults_without_problems(tmp_path: Path) -> None:
    result = TomlFile(tmp_path / "config.toml", GLOBAL_SCHEMA).load()
    assert not result.existed and result.problems == []
    assert result.data["ai"]["provider"] == "local"
    assert result.data["hook"]["port"] == 8999


def test_round_trip_keeps_unknown_keys(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[ai]\ntemperature = 0.5\n[plugins]\nfoo = "bar"\n')
    file = TomlFile(path, GLOBAL_SCHEMA)
    loaded = file.load()
    file.save(loaded.data)
    again = tomllib.loads(path.read_text())
    assert again["ai"]["temperature"] == 0.5
    assert again["plugins"] == {"foo": "bar"}


def test_corrupt_file_is_moved_aside_with_its_bytes_and_defaults_are_used(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    original = b"[ai\nprovider = 'gemini'\n"
    path.write_bytes(original)
    result = TomlFile(path, GLOBAL_SCHEMA).load()
    assert result.data["ai"]["provider"] == "local"
    assert not path.exists()
    moved = list(tmp_path.glob("config.toml.corrupt-*"))
    assert len(moved) == 1 and moved[0].read_bytes() == original
    assert result.problems[0].severity == "error"
    assert moved[0].name in str(result.problems[0])


def test_non_utf8_file_counts_as_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_bytes(b'name = "\xff\xfe"\n')
    result = TomlFile(path, {}).load()
    assert result.problems and result.problems[0].severity == "error"
    assert list(tmp_path.glob("p.toml.corrupt-*"))


def test_invalid_values_are_repaired_and_the_original_is_copied(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[ai]\ntemperature = "hot"\n')
    result = TomlFile(path, GLOBAL_SCHEMA).load()
    assert result.data["ai"]["temperature"] == 0.0
    messages = [str(p) for p in result.problems]
    assert any(m.startswith("config.toml: ai.temperature: expected number") for m in messages)
    backups = list(tmp_path.glob("config.toml.invalid-*"))
    assert len(backups) == 1 and 'temperature = "hot"' in backups[0].read_text()
    assert path.exists()  # still there until the app saves the repaired version


def test_history_path_is_beside_the_project() -> None:
    assert history_path_for(Path("/x/proj.toml")) == Path("/x/proj_history.toml")


def test_app_paths_resolve_project_relative_to_config(tmp_path: Path) -> None:
    config = tmp_path / "cfg" / "config.toml"
    paths = AppPaths.resolve(config, None, None, {"projects": {"active": "../p/mine.toml"}})
    assert paths.project_file == (tmp_path / "p" / "mine.toml").resolve()
    assert paths.history_file.name == "mine_history.toml"
    assert paths.log_dir == (tmp_path / "cfg" / "logs").resolve()
    assert paths.credentials_file == config.resolve().with_name("credentials.toml")


def test_credentials_from_file_with_environment_override(tmp_path: Path) -> None:
    path = tmp_path / "credentials.toml"
    path.write_text('[anthropic]\napi_key = "sk-file-anthropic"\n[gemini]\napi_key = "g-file"\n')
    creds, problems = Credentials.load(path, {"GEMINI_API_KEY": "g-env-value"})
    assert problems == []
    assert creds.api_key("anthropic").reveal() == "sk-file-anthropic"
    assert creds.api_key("gemini").reveal() == "g-env-value"
    assert creds.source("gemini") == "env:GEMINI_API_KEY"
    assert creds.source("anthropic") == "file"
    assert creds.api_key("deepseek") is None
    assert creds.api_key("gemini_cli").reveal() == "g-env-value"  # the CLI takes the same key
    assert creds.configured_providers() == ["anthropic", "gemini", "gemini_cli"]
    assert "sk-file" not in repr(creds)
    # the redactor knows every string of the file, also the keys the environment overrides
    assert creds.file_secrets() == [("anthropic.api_key", "sk-file-anthropic"), ("gemini.api_key", "g-file")]


def test_secret_never_shows_itself() -> None:
    secret = Secret("super-secret-value")
    for text in (str(secret), repr(secret), f"{secret}", f"{secret!r}", "%s" % secret):  # noqa: UP031 (%-formatting is part of what is tested)
        assert "super-secret" not in text
    assert secret.reveal() == "super-secret-value"


def test_the_shipped_config_and_project_files_are_complete_and_canonical() -> None:
    """Running the app must not rewrite the committed files (new keys would dirty the tree)."""
    from manual_slop.config import GLOBAL_SCHEMA, PROJECT_SCHEMA, dump_toml

    root = Path(__file__).resolve().parents[2]
    for name, schema in (("config.toml", GLOBAL_SCHEMA), ("manual_slop.toml", PROJECT_SCHEMA)):
        path = root / name
        loaded = TomlFile(path, schema).load()
        assert [p for p in loaded.problems if p.severity != "info"] == [], name
        assert dump_toml(loaded.data) == path.read_bytes(), f"{name} lacks keys or is not in canonical form"
