"""The headless ticker: the main-thread frame loop when there is no window.

It calls :meth:`AppController.run_frame` about 60 times a second — the same
drain the GUI runs once per frame — and wakes early when another thread posts
work, so automation does not wait for the next tick.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from manual_slop.controller import AppController

__all__ = ["HeadlessTicker"]


class HeadlessTicker:
    """Runs frames on the calling thread until the controller is asked to stop."""

    def __init__(self, controller: AppController, hz: float = 60.0) -> None:
        if hz <= 0:
            raise ValueError("hz must be positive")
        self.controller = controller
        self.interval = 1.0 / hz

    def run(self) -> None:
        controller = self.controller
        controller.bind_main_thread()
        while not controller.should_stop():
            controller.run_frame()
            controller.wait_for_work(self.interval)
