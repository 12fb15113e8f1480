"""A bounded pool of named worker threads, one per running ticket.

``spawn`` never blocks: when ``max_workers`` threads are registered it returns
None and the conductor tries again on its next tick. Each thread removes itself
from the registry when its target returns (or raises), so the registry is the
set of live workers; a semaphore bounds how many targets execute at once even
while a finished thread is still unwinding.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["WorkerPool"]

log = logging.getLogger(__name__)


class WorkerPool:
    """At most ``max_workers`` daemon threads, keyed by ticket id."""

    def __init__(self, max_workers: int = 4, name_prefix: str = "slop-mma-worker") -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, got {max_workers}")
        self.max_workers = max_workers
        self._prefix = name_prefix
        self._counter = itertools.count(1)
        self._active: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()
        self._semaphore = threading.Semaphore(max_workers)
        self._on_exit: Callable[[str], None] | None = None

    def on_exit(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(ticket_id)`` (on the worker thread) after a worker left the registry."""
        self._on_exit = callback

    def spawn(
        self, ticket_id: str, target: Callable[..., Any], args: tuple[Any, ...] = ()
    ) -> threading.Thread | None:
        """Start ``target(*args)`` on a new thread; None when the pool is full or the id is running."""
        with self._lock:
            if len(self._active) >= self.max_workers or ticket_id in self._active:
                return None

            def run() -> None:
                try:
                    with self._semaphore:
                        target(*args)
                except Exception:
                    log.exception("worker for %s crashed", ticket_id)
                finally:
                    with self._lock:
                        self._active.pop(ticket_id, None)
                    if self._on_exit is not None:
                        self._on_exit(ticket_id)

            thread = threading.Thread(target=run, name=f"{self._prefix}-{next(self._counter)}", daemon=True)
            self._active[ticket_id] = thread
        thread.start()
        return thread

    def active(self) -> list[str]:
        """Ticket ids whose worker is registered (running or finishing)."""
        with self._lock:
            return list(self._active)

    def active_count(self) -> int:
        with self._lock:
            return len(self._active)

    def free_slots(self) -> int:
        with self._lock:
            return self.max_workers - len(self._active)

    def join(self, timeout: float) -> list[str]:
        """Wait up to ``timeout`` s in total for every worker; returns the ids still registered."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                threads = [t for t in self._active.values() if t is not threading.current_thread()]
            if not threads:
                return []
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return self.active()
            threads[0].join(remaining)  # then re-read: finished workers have left the registry
