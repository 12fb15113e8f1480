"""Fixtures for our MCP server: an in-process app (controller, ticker, Hook API) serving MCP over
streamable HTTP from the app itself, the official SDK's client, and a check that no child
process outlives its test."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.helpers import no_new_children
from tests.integration.hooks.conftest import HookApp, HookAppFactory, hook_app_factory  # noqa: F401

ROOT = Path(__file__).resolve().parents[3]
NPM_BIN = ROOT / ".tools" / "mcp-npm" / "node_modules"
INSPECTOR = NPM_BIN / "@modelcontextprotocol" / "inspector-cli" / "build" / "index.js"
GEMINI = ROOT / ".tools" / "gemini-cli" / "node_modules" / ".bin" / "gemini"


def needs_node(program: Path, installer: str) -> Path:
    """``program`` from npm; skipped (saying why) only when Node.js is missing."""
    if shutil.which("node") is None:
        pytest.skip(f"Node.js is not installed, so {program.name} cannot run (install node and npm)")
    if not program.exists():
        pytest.fail(f"{program} is not installed: run `{installer}` (`make test` does)")
    return program


@dataclass
class Served:
    """An app serving MCP over HTTP from its own process, and its project folder."""

    app: HookApp
    url: str
    base: Path

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.app.token}"}

    def session(self, headers: dict[str, str] | None = None) -> Any:
        """An official SDK client on the app's MCP URL (an async context manager)."""
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        http = httpx2.AsyncClient(headers=self.headers if headers is None else headers, timeout=30)
        return Client(streamable_http_client(self.url, http_client=http))


@pytest.fixture
def served(hook_app_factory: HookAppFactory) -> Iterator[Served]:  # noqa: F811
    app = hook_app_factory()
    reply = app.call("POST", "/api/mcp/serve", {"address": "127.0.0.1:0"}).body
    base = Path(app.ctrl.call_on_main(lambda: str(app.ctrl.base_dir()), 5.0))
    yield Served(app, reply["url"], base)
    app.call("DELETE", "/api/mcp/serve")


def run_async(fn: Callable[[], Any], timeout: float = 60.0) -> Any:
    """Run ``fn()`` (a coroutine function) to completion within ``timeout`` seconds."""

    async def bounded() -> Any:
        with anyio.fail_after(timeout):
            return await fn()

    return anyio.run(bounded)


@pytest.fixture(autouse=True)
def no_child_left_behind() -> Iterator[None]:
    """Fail a test that leaves a child process (running or a zombie) behind."""
    with no_new_children():
        yield
