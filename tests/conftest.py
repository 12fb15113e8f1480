"""Shared fixtures: temporary app folders, controllers that always shut down, leak checks."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# Bytecode caches are written even where the environment turns them off (PYTHONDONTWRITEBYTECODE):
# the suite starts the app and other Python programs hundreds of times, and without caches each
# start compiles every module it imports again (~0.6 s of CPU an app start), and every worker
# re-parses the modules pytest rewrites. Measured on the subprocess-heavy files: a quarter of
# their CPU. Subprocesses inherit the environment, so they write and read the caches too.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

from manual_slop.controller import AppController, LaunchOptions  # noqa: E402 (caches on first)
from tests.xvfb import XvfbMissing, xvfb_display  # noqa: E402

THREAD_GRACE_S = 3.0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Heavy tests first, longest first (stable otherwise): with workers, the run does not end
    on a lone four-minute test that started last."""

    def weight(item: pytest.Item) -> float:
        marker = item.get_closest_marker("heavy")
        return -float(marker.args[0]) if marker is not None and marker.args else 0.0

    items.sort(key=weight)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The reliability suites' one-line summaries (tests/reliability/conftest.py), printed here:
    under xdist only this, the top conftest, is loaded in the controller."""
    lines = [
        value
        for reports in terminalreporter.stats.values()
        for report in reports
        if getattr(report, "when", "") == "call"
        for key, value in getattr(report, "user_properties", ())
        if key == "reliability_summary"
    ]
    if lines:
        terminalreporter.section("reliability summary")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture(autouse=True)
def no_thread_leaks() -> Iterator[None]:
    """Fail a test that leaves threads running (after a short grace period to finish)."""
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + THREAD_GRACE_S
    leaked: list[threading.Thread] = []
    while time.monotonic() < deadline:
        leaked = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        if not leaked:
            return
        time.sleep(0.02)
    pytest.fail(f"threads left running: {sorted(t.name for t in leaked)}")


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    """An empty folder standing in for the user's working directory."""
    folder = tmp_path / "app"
    folder.mkdir()
    return folder


ControllerFactory = Callable[..., AppController]


@pytest.fixture
def make_controller(app_dir: Path) -> Iterator[ControllerFactory]:
    """Build controllers on ``app_dir`` (no real environment keys); all are shut down afterwards."""
    made: list[AppController] = []

    def factory(**kwargs: object) -> AppController:
        kwargs.setdefault("options", LaunchOptions(headless=True))
        kwargs.setdefault("environ", {})
        config = kwargs.pop("config_file", app_dir / "config.toml")
        controller = AppController(config, **kwargs)  # type: ignore[arg-type]
        made.append(controller)
        return controller

    yield factory
    for controller in made:
        controller.bind_main_thread()
        controller.shutdown()


@pytest.fixture(scope="session")
def display() -> Iterator[str]:
    """A display for the window: the current one, or a private Xvfb started here."""
    if os.environ.get("DISPLAY") and not os.environ.get("SLOP_TEST_OWN_XVFB"):
        yield os.environ["DISPLAY"]
        return
    try:
        with xvfb_display() as name:
            yield name
    except XvfbMissing as exc:
        pytest.fail(str(exc))
