"""Bounded waits for the reliability suites: run something with a deadline, and when it does not
end in time, fail with a dump of every thread's stack (where it hangs, which lock it waits for).

    outcome = run_bounded(lambda: client.send(...), 1.5, name="r5-send")
    outcome.value / outcome.error / outcome.elapsed

:class:`Overrun` is the deadlock/hang detector's verdict; its message carries the thread dump.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Outcome", "Overrun", "run_bounded", "thread_dump", "wait_until"]


class Overrun(AssertionError):
    """Something did not end within its deadline (a hang or a deadlock); the message holds a
    thread dump."""


@dataclass(slots=True)
class Outcome:
    """How a bounded call ended: its value or the exception it raised, and how long it took."""

    value: Any = None
    error: BaseException | None = None
    elapsed: float = 0.0


def thread_dump(limit: int = 12) -> str:
    """Every live thread's name and innermost ``limit`` frames."""
    frames = sys._current_frames()
    parts = []
    for thread in threading.enumerate():
        frame = frames.get(thread.ident or -1)
        stack = "".join(traceback.format_stack(frame, limit=limit)) if frame is not None else "  (no frame)\n"
        parts.append(f"--- thread {thread.name!r} (daemon={thread.daemon})\n{stack}")
    return "".join(parts)


def run_bounded(
    call: Callable[[], Any],
    deadline_s: float,
    *,
    name: str = "bounded",
    on_overrun: Callable[[], None] | None = None,
) -> Outcome:
    """``call()`` on its own thread; its outcome, or :class:`Overrun` (with a thread dump) when it
    has not ended after ``deadline_s``. ``on_overrun`` is then asked to unblock it (cancel,
    close a server) so that no thread is left behind."""
    outcome = Outcome()

    def body() -> None:
        started = time.monotonic()
        try:
            outcome.value = call()
        except BaseException as exc:  # the caller judges every ending
            outcome.error = exc
        finally:
            outcome.elapsed = time.monotonic() - started

    thread = threading.Thread(target=body, name=name, daemon=True)
    thread.start()
    thread.join(deadline_s)
    if not thread.is_alive():
        return outcome
    dump = thread_dump()
    if on_overrun is not None:
        on_overrun()
    thread.join(5.0)
    raise Overrun(f"{name} did not end within its deadline of {deadline_s:.2f} s; threads:\n{dump}")


def wait_until(predicate: Callable[[], bool], timeout_s: float, what: str, poll_s: float = 0.01) -> None:
    """Poll ``predicate`` until it holds; :class:`Overrun` with a thread dump after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise Overrun(f"{what}: not within {timeout_s:.2f} s; threads:\n{thread_dump()}")
        time.sleep(poll_s)
