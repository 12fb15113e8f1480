"""Helpers shared by tests (import as ``from tests.helpers import ...``)."""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from manual_slop.controller import AppController


def pump_until(controller: AppController, predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    """Run frames on the calling thread until ``predicate()`` holds; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        controller.run_frame()
        if predicate():
            return
        controller.wait_for_work(0.01)
    raise AssertionError(f"condition not met within {timeout} s")


def app_env(display: str | None = None, **extra: str) -> dict[str, str]:
    """Environment for an app subprocess: none of the developer's provider keys or hook token,
    a display (with software GL) only when given, plus ``extra``."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "SLOP_HOOK_TOKEN"}
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    if display is not None:
        env.update({"DISPLAY": display, "LIBGL_ALWAYS_SOFTWARE": "1"})
    env.update(extra)
    return env


def cancel_when(
    send: Callable[[], object], ready: Callable[[], bool], token, ready_timeout: float = 60.0
) -> tuple[object, float]:
    """Run ``send()`` on a thread; once ``ready()`` holds (or ``ready_timeout`` passed) cancel
    ``token``. Returns what the send returned or raised, and the seconds it took to stop."""
    import threading

    outcome: list[object] = []
    ended: list[float] = []

    def run() -> None:
        try:
            outcome.append(send())
        except BaseException as exc:
            outcome.append(exc)
        ended.append(time.monotonic())

    sender = threading.Thread(target=run)
    sender.start()
    deadline = time.monotonic() + ready_timeout
    while not ready() and time.monotonic() < deadline:
        time.sleep(0.01)
    asked = time.monotonic()
    token.cancel("stopped by the test")
    sender.join(10)
    assert not sender.is_alive(), "the send did not stop"
    return outcome[0], ended[0] - asked


def markdown_tables(
    path: Path, heading: str, cell: Callable[[str], str] = lambda text: text.strip("`")
) -> list[list[list[str]]]:
    """The tables of a Markdown file under ``heading``, up to the next heading of its level or
    higher: rows of ``cell(stripped text)``, header rows left out."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = lines.index(heading)
    level = len(heading) - len(heading.lstrip("#"))
    found: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in lines[start + 1 :]:
        if line.startswith("#") and len(line) - len(line.lstrip("#")) <= level:
            break
        if line.startswith("|"):
            cells = [cell(c.strip()) for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            if not set("".join(cells)) <= set("-: "):
                current.append(cells)
        elif current:
            found.append(current[1:])
            current = []
    if current:
        found.append(current[1:])
    return found


@contextlib.contextmanager
def no_new_children(grace_s: float = 5.0) -> Iterator[None]:
    """Fail when the block leaves a child process (running or a zombie) behind ``grace_s`` after it."""
    import psutil
    import pytest

    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    yield
    deadline = time.monotonic() + grace_s
    left: list[Any] = []
    while time.monotonic() < deadline:
        left = [p for p in me.children(recursive=True) if p.pid not in before]
        if not left:
            return
        time.sleep(0.05)
    pytest.fail(f"processes left behind: {[(p.pid, _describe_process(p)) for p in left]}")


def _describe_process(process: Any) -> str:
    import psutil

    try:
        return f"{process.status()} {' '.join(process.cmdline())[:120]}"
    except psutil.Error:
        return "gone"
