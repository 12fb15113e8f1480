"""Thread helpers: an executor of daemon threads that can be joined with a deadline.

``concurrent.futures.ThreadPoolExecutor`` threads are joined at interpreter exit,
so one provider call stuck on a dead socket would keep the app from quitting.
:class:`DaemonThreadExecutor` runs each job on its own named daemon thread and
lets shutdown wait a bounded time for them.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

__all__ = ["DaemonThreadExecutor", "join_all"]

T = TypeVar("T")


class DaemonThreadExecutor(Executor):
    """One daemon thread per submitted job (jobs here are few and long: provider calls)."""

    def __init__(self, name_prefix: str = "slop-job") -> None:
        self._prefix = name_prefix
        self._counter = itertools.count(1)
        self._lock = threading.Lock()
        self._threads: set[threading.Thread] = set()
        self._shutdown = False

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        with self._lock:
            if self._shutdown:
                raise RuntimeError("executor is shut down")

            def run() -> None:
                try:
                    if not future.set_running_or_notify_cancel():
                        return
                    try:
                        future.set_result(fn(*args, **kwargs))
                    except BaseException as exc:
                        future.set_exception(exc)
                finally:
                    with self._lock:
                        self._threads.discard(threading.current_thread())

            thread = threading.Thread(target=run, name=f"{self._prefix}-{next(self._counter)}", daemon=True)
            self._threads.add(thread)
        thread.start()
        return future

    def active(self) -> list[threading.Thread]:
        with self._lock:
            return [t for t in self._threads if t.is_alive()]

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False, timeout: float = 2.0) -> None:
        """Refuse new jobs; with ``wait``, join running ones for at most ``timeout`` s."""
        with self._lock:
            self._shutdown = True
        if wait:
            join_all(self.active(), timeout)


def join_all(threads: list[threading.Thread], timeout: float) -> list[threading.Thread]:
    """Join every thread within one shared deadline; returns those still alive."""
    deadline = time.monotonic() + timeout
    for thread in threads:
        if thread is threading.current_thread():
            continue
        thread.join(max(0.0, deadline - time.monotonic()))
    return [t for t in threads if t.is_alive() and t is not threading.current_thread()]
