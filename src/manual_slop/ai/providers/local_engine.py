"""The lifetime of the in-process model: loaded on first use, freed only once no call runs on it.

xllamacpp computes on its own C++ thread. Dropping the ``Server`` object is safe — its
destructor stops that thread and joins it — but two things are not:

- **the process exiting while that thread computes**: ``exit()`` runs the C++ static
  destructors (ggml's list of CPU buffer types among them) under the running computation, which
  then reads freed memory — SIGSEGV in ``ggml_cpu_extra_compute_forward`` (offset ``e066f0`` of
  ``xllamacpp.abi3.so``); a daemon thread re-entering Python from the token callback after
  finalization began aborts instead ("FATAL: exception not rethrown"). It happens when the
  interpreter ends with a send still running (a daemon thread, a quit that stopped waiting) or
  with an engine kept alive past exit by a stray reference (a kept traceback's frame), whose
  thread nobody joins. ``scripts/stress_local_engine.py`` reproduces both.
- **a second owner**: a reference kept elsewhere (a kept traceback's frame, a caller's local)
  keeps the engine and its thread alive after the provider let go of it.

So one :class:`EngineHolder` owns each engine and is the only long-lived reference to it.
Calls go through :meth:`EngineHolder.call` (counted; no frame keeps the engine afterwards).
:meth:`EngineHolder.close` raises :attr:`EngineHolder.stopping` — the token callback checks it
and stops the call between two tokens or two prompt batches — waits for the running calls to
return, then drops the engine, so the C++ thread is joined before ``close`` returns. A close
that times out leaves the engine to the last call out, which frees it. At interpreter exit an
``atexit`` hook closes every holder still open in this process; if a call will not stop even
then, the process ends with ``os._exit`` (no C++ destructors) rather than crash. (A send on a
non-daemon thread is waited for by the interpreter before atexit hooks run: it ends by itself.)
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["CLOSE_TIMEOUT_S", "EXIT_TIMEOUT_S", "EngineHolder", "EngineStopping", "close_all"]

CLOSE_TIMEOUT_S = 10.0  # a call stops at its next token or prompt batch: ~1 s, several on a busy machine
EXIT_TIMEOUT_S = 20.0
EXIT_STATUS_STUCK = 70  # os._exit status when a call would not stop at exit (EX_SOFTWARE)

# declared singleton: the open holders of this process, closed by the atexit hook below
_OPEN: weakref.WeakSet[EngineHolder] = weakref.WeakSet()


class EngineStopping(RuntimeError):
    """Raised by :meth:`EngineHolder.call` when the engine is being closed and did not finish
    closing in time (a call on it has not returned)."""


class EngineHolder:
    """Owns one engine made by ``load()``; see the module docstring for the rules."""

    def __init__(self, load: Callable[[], Any]) -> None:
        self._load = load
        self._cond = threading.Condition()
        self._engine: Any = None
        self._calls = 0
        self._closing = False
        self._abandoned = False  # a close timed out: the last call out frees the engine
        self._freeing = 0  # engines handed over and not yet destroyed (their thread not yet joined)
        self._final = False  # closed at exit: never load again
        self._pid = os.getpid()  # a forked child never frees its parent's threads
        _OPEN.add(self)

    @property
    def stopping(self) -> bool:
        """True while a close waits: running calls should stop at their next chance."""
        return self._closing

    @property
    def calls(self) -> int:
        """Calls running on the engine now."""
        return self._calls

    @property
    def loaded(self) -> bool:
        return self._engine is not None

    def call(self, method: str, *args: Any, wait: float = CLOSE_TIMEOUT_S) -> Any:
        """``engine.<method>(*args)``, loading the engine first if needed. Waits at most ``wait``
        seconds for a close in progress to finish, else raises :class:`EngineStopping`."""
        engine = self._enter(wait)
        try:
            return getattr(engine, method)(*args)
        finally:
            del engine  # a traceback the caller keeps must not keep the model (and its thread) alive
            self._leave()

    @contextlib.contextmanager
    def using(self, wait: float = CLOSE_TIMEOUT_S) -> Iterator[Any]:
        """The engine, counted as a call while inside (close waits for it). Do not keep it."""
        engine = self._enter(wait)
        try:
            yield engine
        finally:
            del engine
            self._leave()

    def close(self, timeout: float = CLOSE_TIMEOUT_S, *, final: bool = False) -> bool:
        """Stop the running calls (see :attr:`stopping`), wait up to ``timeout`` s for them to
        return, and free the engine; True once it is freed (its thread joined). False when a
        call did not return in time: the last call to return frees it, and new calls wait for
        that. ``final``: no call may load it again (the process is exiting)."""
        with self._cond:
            self._final = self._final or final
            if self._engine is None and not self._calls and not self._freeing:
                return True
            self._closing = True
            self._cond.wait_for(lambda: self._calls == 0 and self._freeing == 0, timeout)
            if self._calls or self._freeing:
                self._abandoned = True
                return False
            handed = self._take()
        self._destroy(handed)
        return True

    def _enter(self, wait: float) -> Any:
        with self._cond:
            if not self._cond.wait_for(lambda: not self._closing, wait):
                raise EngineStopping(
                    f"the local model is still closing ({self._calls} call(s) on it have not "
                    f"returned after {wait:.0f} s); try again"
                )
            if self._final:
                raise EngineStopping("the local model was closed: the app is exiting")
            if self._engine is None:
                self._engine = self._load()
            self._calls += 1
            return self._engine

    def _leave(self) -> None:
        with self._cond:
            self._calls -= 1
            self._cond.notify_all()
            if self._calls or not self._abandoned:
                return
            handed = self._take()
        self._destroy(handed)

    def _take(self) -> list[Any]:
        """Hand the engine over for freeing (in a list: the one reference, cleared by
        :meth:`_destroy`) and open the holder again. Called under the lock."""
        handed, self._engine = [self._engine], None
        self._closing = self._abandoned = False
        self._freeing += 1
        self._cond.notify_all()
        return handed

    def _destroy(self, handed: list[Any]) -> None:
        # outside the lock: the C++ destructor joins llama.cpp's thread (up to one batch)
        handed.clear()
        with self._cond:
            self._freeing -= 1
            self._cond.notify_all()


def close_all(timeout: float = EXIT_TIMEOUT_S) -> int:
    """Close every open holder of this process; the number whose calls did not stop in time."""
    stuck = 0
    for holder in list(_OPEN):
        if holder._pid == os.getpid() and not holder.close(timeout, final=True):
            stuck += 1
    return stuck


@atexit.register
def _close_at_exit() -> None:
    # atexit runs before the interpreter tears down threads and before C++ static destructors
    stuck = close_all()
    if stuck:
        with contextlib.suppress(Exception):  # no stderr (pythonw), or closed already
            sys.stderr.write(
                f"manual_slop: {stuck} local model call(s) did not stop within {EXIT_TIMEOUT_S:.0f} s; "
                "exiting without C++ cleanup to avoid a crash\n"
            )
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(EXIT_STATUS_STUCK)
