"""Event plumbing between the app's threads.

- :class:`EventEmitter`: synchronous pub-sub; callbacks run in the emitting thread.
- :class:`AsyncEventQueue`: the asyncio worker's inbox of ``(name, payload)`` pairs,
  fed from any thread with :meth:`AsyncEventQueue.put_threadsafe`.
- :class:`UserRequestEvent`: what Gen + Send hands to the asyncio worker.
- :class:`EventJournal`: a bounded, numbered record of published events that
  readers on other threads (the Hook API's long poll) consume by sequence number.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["AsyncEventQueue", "EventEmitter", "EventJournal", "JournalEvent", "UserRequestEvent"]

log = logging.getLogger(__name__)

Listener = Callable[..., None]


class EventEmitter:
    """Synchronous pub-sub keyed by event name.

    Safe to subscribe and emit from several threads: the listener list is copied
    under a lock before callbacks run, and a failing callback is logged without
    stopping the others.
    """

    def __init__(self) -> None:
        self._listeners: dict[str, list[Listener]] = {}
        self._lock = threading.Lock()

    def on(self, event_name: str, callback: Listener) -> Callable[[], None]:
        """Subscribe; returns a function that unsubscribes."""
        with self._lock:
            self._listeners.setdefault(event_name, []).append(callback)

        def unsubscribe() -> None:
            with self._lock:
                listeners = self._listeners.get(event_name, [])
                if callback in listeners:
                    listeners.remove(callback)

        return unsubscribe

    def emit(self, event_name: str, *args: Any, **kwargs: Any) -> None:
        with self._lock:
            listeners = list(self._listeners.get(event_name, ()))
        for callback in listeners:
            try:
                callback(*args, **kwargs)
            except Exception:
                log.exception("listener for %r failed", event_name)

    def listener_count(self, event_name: str) -> int:
        with self._lock:
            return len(self._listeners.get(event_name, ()))


class AsyncEventQueue:
    """``asyncio.Queue`` of ``(name, payload)`` bound to one event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._closed = False

    async def put(self, event_name: str, payload: Any = None) -> None:
        await self._queue.put((event_name, payload))

    async def get(self) -> tuple[str, Any]:
        return await self._queue.get()

    def put_threadsafe(self, event_name: str, payload: Any = None) -> bool:
        """Enqueue from any thread; False once the loop is closed or stopped."""
        if self._closed or self._loop.is_closed():
            return False
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, (event_name, payload))
        except RuntimeError:  # loop closed between the check and the call
            return False
        return True

    def close(self) -> None:
        self._closed = True

    def qsize(self) -> int:
        return self._queue.qsize()


@dataclass(frozen=True, slots=True)
class UserRequestEvent:
    """One Gen + Send: the user's words and the context compiled for them."""

    prompt: str
    stable_md: str
    file_items: list[Any] = field(default_factory=list)
    disc_text: str = ""
    base_dir: str = "."
    request_id: str = ""
    settings: dict[str, Any] = field(default_factory=dict)  # provider, model, parameters at send time
    context: Any = None  # a context.ContextRequest: aggregated off the main thread before the send
    discussion: str = ""  # where the reply goes (the discussion active when the message was sent)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class JournalEvent:
    """A published event as readers see it."""

    seq: int
    ts: float
    type: str
    payload: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "ts": self.ts, "type": self.type, "payload": self.payload}


class EventJournal:
    """Numbered ring buffer of events with blocking reads by sequence number.

    Writers call :meth:`publish` from any thread. A reader remembers the ``next``
    number it was given and asks again with it, so no event is missed unless the
    ring overflowed, which :meth:`read` reports as ``dropped``.
    """

    def __init__(self, capacity: int = 20_000) -> None:
        self._events: deque[JournalEvent] = deque(maxlen=capacity)
        self._next_seq = 1
        self._cond = threading.Condition()
        self._closed = False

    def publish(self, event_type: str, payload: dict[str, Any] | None = None) -> int:
        """Record an event; returns its sequence number."""
        with self._cond:
            seq = self._next_seq
            self._next_seq += 1
            self._events.append(JournalEvent(seq, time.time(), event_type, dict(payload or {})))
            self._cond.notify_all()
            return seq

    @property
    def last_seq(self) -> int:
        with self._cond:
            return self._next_seq - 1

    def read(
        self, since: int = 0, timeout: float = 0.0, limit: int = 1000
    ) -> tuple[list[JournalEvent], int, int]:
        """Events with ``seq > since``; waits up to ``timeout`` s for the first one.

        Returns ``(events, next_since, dropped)`` where ``dropped`` counts events
        after ``since`` that the ring no longer holds.
        """
        deadline = time.monotonic() + max(0.0, timeout)
        with self._cond:
            while self._next_seq - 1 <= since and not self._closed:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            oldest = self._events[0].seq if self._events else self._next_seq
            dropped = max(0, oldest - since - 1) if since < oldest else 0
            start = max(0, since + 1 - oldest)
            events = list(itertools.islice(self._events, start, start + limit))
            next_since = events[-1].seq if events else max(since, oldest - 1)
            return events, next_since, dropped

    def close(self) -> None:
        """Wake every blocked reader (used at shutdown)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
