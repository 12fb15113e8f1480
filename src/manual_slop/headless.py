"""The headless ticker: the main-thread frame loop when there is no window.

It calls :meth:`AppController.run_frame` about 60 times a second — the same
drain the GUI runs once per frame — and wakes early when another thread posts
work, so automation does not wait for the next tick. Between ticks the garbage collector's
policy (:mod:`manual_slop.gc_policy`), when given, runs what is due; the ticker counts as idle
once nothing was posted for ``IDLE_AFTER_S``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from manual_slop.controller import AppController
    from manual_slop.gc_policy import GcPolicy

__all__ = ["HeadlessTicker"]

IDLE_AFTER_S = 1.0  # no work posted for this long: a full collection would delay nobody


class HeadlessTicker:
    """Runs frames on the calling thread until the controller is asked to stop."""

    def __init__(
        self, controller: AppController, hz: float = 60.0, gc_policy: GcPolicy | None = None
    ) -> None:
        if hz <= 0:
            raise ValueError("hz must be positive")
        self.controller = controller
        self.interval = 1.0 / hz
        self.gc_policy = gc_policy

    def run(self) -> None:
        controller = self.controller
        controller.bind_main_thread()
        policy = self.gc_policy
        if policy is not None:
            policy.install()
        try:
            busy_at = time.monotonic()
            while not controller.should_stop():
                controller.run_frame()
                if controller.wait_for_work(self.interval):
                    busy_at = time.monotonic()
                if policy is not None:
                    policy.tick(idle=time.monotonic() - busy_at >= IDLE_AFTER_S)
        finally:
            if policy is not None:
                policy.uninstall()
