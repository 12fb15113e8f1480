"""Fixtures for the ``gemini_cli`` provider: the real Gemini CLI (``make gemini-cli`` installs
it into ``.tools/gemini-cli``), the Gemini fake it talks to, the real Hook API, an AI client
wired to them, and a check that no CLI process outlives its test."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from manual_slop.ai import AIClient, RetryPolicy
from tests.fakes import GeminiFake
from tests.helpers import no_new_children
from tests.integration.hooks.conftest import HookApp, HookAppFactory, hook_app_factory  # noqa: F401

ROOT = Path(__file__).resolve().parents[3]
CLI_DIR = ROOT / ".tools" / "gemini-cli"
CLI = CLI_DIR / "node_modules" / ".bin" / "gemini"
PINNED = re.search(r"^GEMINI_CLI_VERSION := (\S+)$", (ROOT / "Makefile").read_text(), re.M).group(1)  # type: ignore[union-attr]
KEY = "cli-test-key-5c7e1f"
MODEL = "gemini-2.5-flash"
NO_RETRY = RetryPolicy(max_retries=0)


@pytest.fixture(scope="session")
def real_cli() -> Path:
    """The pinned real CLI; skipped (saying why) only when Node.js is missing."""
    if shutil.which("node") is None:
        pytest.skip("Node.js is not installed, so the real Gemini CLI cannot run (install node and npm)")
    if not CLI.exists():
        pytest.fail(f"the Gemini CLI is not installed at {CLI}: run `make gemini-cli` (`make test` does)")
    return CLI


@pytest.fixture
def gemini_fake() -> Iterator[GeminiFake]:
    """The wire-level Gemini fake; it refuses any key but ``KEY`` like the real API."""
    with GeminiFake(api_key=KEY) as fake:
        yield fake


@pytest.fixture(autouse=True)
def no_cli_left_behind() -> Iterator[None]:
    """Fail a test that leaves a child process (running or a zombie) behind."""
    with no_new_children():
        yield


@dataclass
class Rig:
    """An AI client on the gemini_cli provider and everything it logged."""

    client: AIClient
    comms: list[dict[str, Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)
    cli_calls: list[dict[str, Any]] = field(default_factory=list)

    def kinds(self) -> list[str]:
        return [e["kind"] for e in self.comms]


def make_rig(
    binary: Path | str, fake: GeminiFake | None = None, *, hook_api: Any = None, **configure: Any
) -> Rig:
    client = AIClient(retry=configure.pop("retry", NO_RETRY))
    rig = Rig(client)
    client.comms_log_callback = rig.comms.append
    client.tool_log_callback = rig.tools.append
    client.cli_log_callback = rig.cli_calls.append
    client.hook_api_callback = hook_api
    client.set_provider("gemini_cli", MODEL)
    options: dict[str, Any] = {"api_key": KEY, "binary": str(binary), "timeout_s": 60.0}
    if fake is not None:
        options["base_url"] = fake.base_url
    client.configure(**{**options, **configure})
    return rig


@pytest.fixture
def rigs() -> Iterator[Any]:
    """``rigs(binary, fake, ...)`` makes a Rig; every client is cleaned up (its CLI home deleted)."""
    made: list[Rig] = []

    def factory(*args: Any, **kwargs: Any) -> Rig:
        rig = make_rig(*args, **kwargs)
        made.append(rig)
        return rig

    yield factory
    for rig in made:
        rig.client.cleanup()
