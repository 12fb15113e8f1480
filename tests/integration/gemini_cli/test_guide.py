"""The Gemini CLI section of docs/guide_ai_client.md must match the code: the settings of the
private home, the environment the CLI gets, the events handled and the CLI's exit codes."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from manual_slop.ai.providers.base import ProviderConfig
from manual_slop.ai.providers.gemini_cli import CLI_EXIT_CODES, GeminiCliProvider, _CliCall
from manual_slop.ai.providers.gemini_cli_home import settings
from manual_slop.config import Secret

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guide_ai_client.md"


def section(heading: str) -> str:
    """The text from ``heading`` to the next heading of any level."""
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index(heading)
    return text[start : text.index("\n#", start + 1)]


def table_names(heading: str) -> set[str]:
    """The `names` in the first column of the table under ``heading``."""
    rows = [line for line in section(heading).splitlines() if line.startswith("|")][2:]
    return {name for row in rows for name in re.findall(r"`([^`]+)`", row.strip("|").split("|")[0])}


def leaves(data: dict[str, Any], prefix: str = "") -> set[str]:
    out: set[str] = set()
    for key, value in data.items():
        out |= leaves(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}"}
    return out


def test_the_settings_table_lists_every_setting() -> None:
    assert table_names("### The private home") == leaves(settings("the bridge command"))


def test_the_environment_table_lists_what_the_cli_gets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "environ", {})  # only what the provider sets, nothing inherited
    config = ProviderConfig("gemini_cli", "m", base_url="http://127.0.0.1:1", api_key=Secret("k"))
    provider = GeminiCliProvider(config)
    try:
        assert table_names("### Environment") == set(provider.environment())
    finally:
        provider.close()


def test_the_event_table_lists_every_event_handled() -> None:
    handled = {name.removeprefix("_on_") for name in vars(_CliCall) if name.startswith("_on_")}
    assert table_names("### Events") == handled


def test_the_failure_table_names_every_exit_code_of_the_cli() -> None:
    documented = {int(n) for n in re.findall(r"\b\d+\b", section("### Failures"))}
    assert set(CLI_EXIT_CODES) | {1, 144, 145, 173, 244} <= documented
