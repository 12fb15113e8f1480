"""Shared pieces of the run log tests: the real app (controller, AI client, Hook API) talking,
as DeepSeek, to the wire-level fake OpenAI-compatible server, and a client that records runs
without an app."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from manual_slop.ai import AIClient, RetryPolicy
from manual_slop.governance.run_log import RunLogs
from manual_slop.hooks import ApiHookClient
from manual_slop.redaction import Redactor
from tests.fakes import OpenAIFake
from tests.integration.hooks.conftest import (
    HookApp,
    HookAppFactory,
    hook_app_factory,  # noqa: F401  (the fixture)
)

KEY = "sk-deepseek-run-log-0123456789abcdef"


@pytest.fixture
def fake() -> Iterator[OpenAIFake]:
    with OpenAIFake() as server:
        yield server


def recording_app(factory: HookAppFactory, fake: OpenAIFake) -> tuple[HookApp, ApiHookClient]:
    """The app as the user runs it (manual approvals), its AI client on the fake as DeepSeek."""
    app = factory(backend=AIClient(retry=RetryPolicy(base_delay_s=0.01)), environ={"DEEPSEEK_API_KEY": KEY})
    api = app.client()
    for name, value in (("current_provider", "deepseek"), ("provider_base_url", fake.base_url)):
        api.wait_for_task(api.set_value(name, value))
    return app, api


def recording_client(tmp_path: Path, fake: OpenAIFake) -> AIClient:
    """An AI client of its own (no app) that records its sends under ``tmp_path/runs``."""
    client = AIClient(retry=RetryPolicy(base_delay_s=0.01))
    client.set_provider("deepseek", "deepseek-chat")
    client.configure(base_url=fake.base_url, api_key=KEY)
    client.runs = RunLogs(tmp_path / "runs", Redactor([KEY]), "test-session")
    return client


def run_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.jsonl"))


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
