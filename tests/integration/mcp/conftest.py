"""The real MCP servers of ``make mcp-tools`` (``.tools/``), and helpers to configure them.

Tests that need them skip, saying why, only when Node.js is missing; a missing program while
Node is there is a failure (run ``make mcp-tools``; ``make test`` does)."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import tomli_w

ROOT = Path(__file__).resolve().parents[3]
NPM_BIN = ROOT / ".tools" / "mcp-npm" / "node_modules" / ".bin"
FILESYSTEM = NPM_BIN / "mcp-server-filesystem"
EVERYTHING = NPM_BIN / "mcp-server-everything"
GIT = ROOT / ".tools" / "mcp-git" / "bin" / "mcp-server-git"


@pytest.fixture(scope="session")
def mcp_programs() -> None:
    """The three reference servers; skipped (saying why) only when Node.js is missing."""
    if shutil.which("node") is None:
        pytest.skip("Node.js is not installed, so the npm MCP servers cannot run (install node and npm)")
    missing = [str(p) for p in (FILESYSTEM, EVERYTHING, GIT) if not p.exists()]
    if missing:
        listed = ", ".join(missing)
        pytest.fail(f"MCP servers not installed: {listed}: run `make mcp-tools` (`make test` does)")


def toml_servers(servers: dict[str, dict[str, Any]], **top: Any) -> str:
    """A config or project file holding ``[mcp.servers.<name>]`` tables (and ``top`` tables)."""
    return tomli_w.dumps({**top, "mcp": {"servers": servers}})


def children(besides: set[int] = frozenset()) -> list[psutil.Process]:  # type: ignore[assignment]
    """This process's descendants that are still alive (zombies count: nobody reaped them),
    except the pids in ``besides`` (those that were there before, like a test display)."""
    return [p for p in psutil.Process().children(recursive=True) if p.pid not in besides]


def child_pids() -> set[int]:
    return {p.pid for p in children()}


WAITPID = "asyncio-waitpid-"  # asyncio's watcher thread of one child: it lives as long as the child
THREAD_GRACE_S = 3.0


@pytest.fixture(autouse=True)
def no_thread_leaks() -> Iterator[None]:
    """The suite's thread check, except for asyncio's per-child watcher threads: a server the
    module's controller restarted lives on to the module's end (whose teardown checks that no
    child, and so no watcher, is left)."""
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + THREAD_GRACE_S
    leaked: list[threading.Thread] = []
    while time.monotonic() < deadline:
        fresh = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        leaked = [t for t in fresh if not t.name.startswith(WAITPID)]
        if not leaked:
            return
        time.sleep(0.02)
    pytest.fail(f"threads left running: {sorted(t.name for t in leaked)}")


def watcher_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(WAITPID)]
