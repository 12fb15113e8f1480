"""A lock-order witness for the reliability suites (in the spirit of the kernel's lockdep).

Wrap the locks of the code under test in :class:`TrackedLock` (same ``acquire``/``release``/
``with`` surface, reentrant when the wrapped lock is): every acquisition made while other
tracked locks are held records the order "held → acquired". Two locks ever taken in opposite
orders are an inversion — a deadlock waiting for the wrong timing — and :class:`LockOrder`
reports it with both stacks, even on a run where the timing was lucky.

Waits are bounded: a blocking ``acquire`` that has not got its lock after ``wait_s`` records a
stall with a thread dump and raises :class:`~tests.reliability.bounded.Overrun` in the waiting
thread, so a real deadlock breaks up (one side gives up and unwinds) instead of hanging the run.
"""

from __future__ import annotations

import threading
import traceback
from dataclasses import dataclass, field
from typing import Any

from tests.reliability.bounded import Overrun, thread_dump

__all__ = ["LockOrder", "TrackedLock"]


@dataclass(slots=True)
class LockOrder:
    """The orders seen between tracked locks, and what went wrong."""

    wait_s: float = 5.0
    edges: dict[tuple[str, str], str] = field(default_factory=dict)  # (held, taken) -> first stack
    inversions: list[str] = field(default_factory=list)
    stalls: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _held: threading.local = field(default_factory=threading.local)

    def held(self) -> list[str]:
        stack = getattr(self._held, "stack", None)
        if stack is None:
            stack = self._held.stack = []
        return stack

    def note(self, name: str) -> None:
        """``name`` is about to be taken by this thread: record its order after the held ones."""
        held = [h for h in dict.fromkeys(self.held()) if h != name]
        if not held:
            return
        here = "".join(traceback.format_stack(limit=10)[:-2])
        with self._lock:
            for first in held:
                self.edges.setdefault((first, name), here)
                reverse = self.edges.get((name, first))
                if reverse is not None and not any(f"{first} -> {name}" in i for i in self.inversions):
                    self.inversions.append(
                        f"lock-order inversion: {first} -> {name} here:\n{here}\n"
                        f"but {name} -> {first} earlier:\n{reverse}"
                    )

    def report(self) -> str:
        return "\n\n".join([*self.inversions, *self.stalls])


class TrackedLock:
    """A lock (or RLock) whose order against other tracked locks is recorded and whose waits
    are bounded."""

    def __init__(self, name: str, inner: Any, order: LockOrder) -> None:
        self.name = name
        self._inner = inner
        self._order = order

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        self._order.note(self.name)
        if not blocking or timeout >= 0:
            got = self._inner.acquire(blocking, timeout)
        else:
            got = self._inner.acquire(True, self._order.wait_s)
            if not got:
                message = (
                    f"{threading.current_thread().name} waited {self._order.wait_s:.1f} s for {self.name} "
                    f"holding {self._order.held()}; threads:\n{thread_dump()}"
                )
                with self._order._lock:
                    self._order.stalls.append(message)
                raise Overrun(message)
        if got:
            self._order.held().append(self.name)
        return bool(got)

    def release(self) -> None:
        held = self._order.held()
        for index in range(len(held) - 1, -1, -1):
            if held[index] == self.name:
                del held[index]
                break
        self._inner.release()

    def __enter__(self) -> TrackedLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
