"""Stopping a request: one :class:`CancelToken` per request, from the Stop button to the socket.

The controller makes a token when a request is submitted and hands it down. The tool loop
checks it before every model call and tool round and waits on it between retries; the
tool registry stops running handlers (a shell script's process group is killed) and the
Execution Clutch rejects the request's pending approvals; each provider stops its own
blocking work:

==============  ==================================================================
provider        how it stops
==============  ==================================================================
local           the generation callback returns "stop" (between tokens, and between
                prompt batches of 64 tokens while the prompt is read)
HTTP providers  the socket the call is reading is shut down (:mod:`manual_slop.ai.providers.transport`),
                and a stream is left between two chunks
Gemini CLI      its process tree is killed
==============  ==================================================================

:meth:`CancelToken.cancel` runs the registered *interrupters* at once on the cancelling
thread; the request thread then sees :class:`RequestCancelled` and ends the request as
``cancelled`` with the partial answer kept.

``cancel_scope(token)`` makes a token current for the calling thread (a context variable):
the HTTP transport registers the socket of every read made under it.

A cancel is not a failure: :class:`RequestCancelled` is not an ``AIError``, so nothing
retries it or falls back to another provider.
"""

from __future__ import annotations

import contextvars
import itertools
import logging
import threading
from collections.abc import Callable

__all__ = ["CancelToken", "RequestCancelled", "cancel_scope", "current_token"]

log = logging.getLogger(__name__)

_CURRENT: contextvars.ContextVar[CancelToken | None] = contextvars.ContextVar(
    "slop_cancel_token", default=None
)


class RequestCancelled(Exception):
    """The request was stopped (Stop, ``POST /api/requests/{id}/cancel``, an MMA abort, quit).

    ``partial`` is the answer text received before it stopped.
    """

    def __init__(self, reason: str = "cancelled", partial: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.partial = partial

    def ui_message(self) -> str:
        return f"[CANCELLED] {self.reason}"


class CancelToken:
    """Set once; interrupters registered with :meth:`on_cancel` run when it is (any thread)."""

    def __init__(self) -> None:
        # made when first asked for (a wait, ``event``): most sends never wait, and an Event (a
        # Condition over a lock, built in Python) is the costliest part of a token
        self._event: threading.Event | None = None
        self._cancelled = False
        self._lock = threading.Lock()
        self._interrupters: dict[int, Callable[[], None]] = {}
        self._ids = itertools.count()
        self.reason = ""

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    @property
    def event(self) -> threading.Event:
        """Set when cancelled (for code that takes an abort flag, e.g. ``ExecutionContext.abort``)."""
        event = self._event
        if event is None:
            with self._lock:
                if self._event is None:
                    self._event = threading.Event()
                    if self._cancelled:
                        self._event.set()
                event = self._event
        return event

    def cancel(self, reason: str = "stopped by the user") -> bool:
        """Cancel and run every interrupter; False when it was already cancelled."""
        with self._lock:
            if self._cancelled:
                return False
            self.reason = reason
            self._cancelled = True
            if self._event is not None:
                self._event.set()
            interrupters = list(self._interrupters.values())
            self._interrupters.clear()
        for interrupt in interrupters:
            try:
                interrupt()
            except Exception:  # one broken interrupter must not keep the others from running
                log.exception("an interrupter failed while cancelling")
        return True

    def on_cancel(self, interrupt: Callable[[], None]) -> Callable[[], None]:
        """Run ``interrupt`` when cancelled (at once if it already is); returns the unregister."""
        with self._lock:
            if not self._cancelled:
                key = next(self._ids)
                self._interrupters[key] = interrupt
                return lambda: self._unregister(key)
        interrupt()
        return lambda: None

    def _unregister(self, key: int) -> None:
        with self._lock:
            self._interrupters.pop(key, None)

    def wait(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` s; True (early) when cancelled."""
        return self.event.wait(timeout)

    def check(self, partial: str = "") -> None:
        """Raise :class:`RequestCancelled` when cancelled."""
        if self._cancelled:
            raise RequestCancelled(self.reason or "cancelled", partial)


def current_token() -> CancelToken | None:
    """The token of the calling thread's request (see :func:`cancel_scope`)."""
    return _CURRENT.get()


class cancel_scope:  # lower case: it replaced a function, and reads as one (``with cancel_scope(t):``)
    """Make ``token`` current for the blocking calls made inside the block.

    A class rather than a generator context manager: entered on every model call, and the
    generator machinery cost three times the two context-variable calls it wraps."""

    __slots__ = ("_reset", "_token")

    def __init__(self, token: CancelToken | None) -> None:
        self._token = token

    def __enter__(self) -> None:
        self._reset = _CURRENT.set(self._token)

    def __exit__(self, *exc: object) -> None:
        _CURRENT.reset(self._reset)
