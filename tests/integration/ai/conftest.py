"""Fixtures of the AI client's integration tests: one harness per provider (see harness.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.ai.harness import (
    ALL_PROVIDERS,
    HARNESSES,
    HTTP_PROVIDERS,
    Harness,
    HttpHarness,
    NapLog,
)


@pytest.fixture
def naps() -> NapLog:
    return NapLog()


@pytest.fixture(params=ALL_PROVIDERS)
def harness(request: pytest.FixtureRequest, tmp_path: Path, naps: NapLog) -> Iterator[Harness]:
    made = HARNESSES[request.param](tmp_path, naps)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture(params=HTTP_PROVIDERS)
def http_harness(request: pytest.FixtureRequest, tmp_path: Path, naps: NapLog) -> Iterator[HttpHarness]:
    made = HARNESSES[request.param](tmp_path, naps)
    assert isinstance(made, HttpHarness)
    try:
        yield made
    finally:
        made.close()
