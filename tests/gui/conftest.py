"""GUI tests run the real window under Xvfb (software GL), driven by ImGui's test engine.

``display`` starts Xvfb itself when there is no display (``make test`` installs the
``xvfb`` package); ``run_gui`` runs an App in this process with a test function.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
APP_SIZE = (1280, 800)  # the window's own default (App): for the default layout and the docs' pictures
# Software GL draws every pixel of every frame: 960x600 costs ~40% less CPU than 1280x800, and
# the test engine scrolls to whatever it clicks.
TEST_SIZE = (960, 600)


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture
def run_gui(display: str) -> Callable[..., None]:
    """Run ``App(controller)`` with ``test_fn(ctx, app)``; re-raises test failures."""
    from manual_slop.gui import App

    def runner(controller, test_fn, *, size: tuple[int, int] = TEST_SIZE, setup=None) -> None:
        app = App(controller, size=size)
        app.runner_params.ini_disable = True
        if setup is not None:
            setup(app)
        app.run(test=lambda ctx: test_fn(ctx, app))

    return runner


def frames_until(ctx, predicate: Callable[[], bool], max_frames: int = 600) -> None:
    """Yield frames until ``predicate()`` holds; fail after ``max_frames``."""
    for _ in range(max_frames):
        if predicate():
            return
        ctx.yield_()
    raise AssertionError(f"condition not met within {max_frames} frames")


def dialog_in_thread(ctrl, dialog, workers: list[threading.Thread]) -> None:
    """Ask for approval from a worker thread. The thread is started by the main thread: the
    test function runs on the test engine's own native thread, and starting a thread from
    there would register a never-ending threading._DummyThread for it."""

    def start() -> None:
        thread = threading.Thread(target=lambda: ctrl.request_approval(dialog, timeout=60))
        thread.start()
        workers.append(thread)

    ctrl.post_gui_task({"action": "custom_callback", "callback": start})


def decide_in_window(ctrl, run_gui, dialog, act: Callable[[Any], None]):
    """Ask for approval of ``dialog`` in the real window; ``act(ctx)`` answers its modal.
    Returns the dialog's decision (None when it was never decided)."""
    workers: list[threading.Thread] = []

    def test(ctx, app) -> None:
        ctx.yield_(5)
        dialog_in_thread(ctrl, dialog, workers)
        frames_until(ctx, lambda: bool(ctrl.state.pending_dialogs))
        act(ctx)
        frames_until(ctx, lambda: not ctrl.state.pending_dialogs)

    run_gui(ctrl, test)
    for worker in workers:
        worker.join(10)
    return dialog.decision
