"""Event plumbing between the app's threads.

- :class:`EventEmitter`: synchronous pub-sub; callbacks run in the emitting thread.
- :class:`AsyncEventQueue`: the asyncio worker's inbox of ``(name, payload)`` pairs,
  fed from any thread with :meth:`AsyncEventQueue.put_threadsafe`.
- :class:`UserRequestEvent`: what Gen + Send hands to the asyncio worker.
- :class:`EventJournal`: a bounded, numbered record of published events that
  readers on other threads (the Hook API's long poll) consume by sequence number.
- :func:`json_snapshot`: the JSON-ready deep copy an event's payload is stored as.
"""

from __future__ import annotations

import asyncio
import datetime
import enum
import itertools
import logging
import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from manual_slop.log_budget import approx_size

__all__ = [
    "AsyncEventQueue",
    "EventEmitter",
    "EventJournal",
    "JournalEvent",
    "UserRequestEvent",
    "json_snapshot",
]

log = logging.getLogger(__name__)

# The journal's bound in bytes (log_budget.approx_size of the payloads) beside its count: comms
# records carry text fields of up to 20,000 characters, so 20,000 events could hold gigabytes.
JOURNAL_BYTES = 16 * 1024 * 1024

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
        if not self._listeners.get(event_name):  # the usual case on a send: nobody listens
            return
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
    entries: list[tuple[str, str]] = field(default_factory=list)  # (role, text) before this message
    memory: Any = None  # a memory.service.MemorySettings snapshot (None: no memory store)
    tools: tuple[str, ...] | None = None  # the active agent's allowed tools (None: every tool)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


SNAPSHOT_MAX_DEPTH = 64  # deeper structures (or cycles) are cut off with a marker


# exact types whose snapshot is the value itself (immutable; str() / int() of them return them)
_AS_IS = frozenset({str, int, bool, type(None)})


def json_snapshot(value: Any, _depth: int = 0) -> Any:
    """A deep copy of ``value`` made only of JSON types (dict with str keys, list, str,
    int, float, bool, None).

    Tuples and sets become lists, enums their value, dates ISO text, paths strings,
    objects with ``to_dict()`` that dict; anything else its ``str()``. Non-finite floats
    become None. The copy shares nothing mutable with ``value``, so a reader on another
    thread can serialize it while the owner keeps changing the original.
    """
    # Plain dicts and lists of plain leaves first, leaves without a call each: worker threads
    # snapshot 200 tickets per MMA update, and every millisecond here is one a frame may
    # wait for the GIL (issue #22c). The same result as the general path below.
    kind = type(value)
    if kind in _AS_IS:
        return value
    if _depth < SNAPSHOT_MAX_DEPTH:
        if kind is dict:
            deeper = _depth + 1
            return {
                (k if type(k) is str else str(k)): (v if type(v) in _AS_IS else json_snapshot(v, deeper))
                for k, v in list(value.items())
            }
        if kind is list:
            deeper = _depth + 1
            return [v if type(v) in _AS_IS else json_snapshot(v, deeper) for v in list(value)]
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, enum.Enum):
        return json_snapshot(value.value, _depth)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else None
    if _depth >= SNAPSHOT_MAX_DEPTH:
        return "<nested too deeply>"
    if isinstance(value, Mapping):
        return {str(k): json_snapshot(v, _depth + 1) for k, v in list(value.items())}
    if isinstance(value, list | tuple | set | frozenset | deque):
        return [json_snapshot(v, _depth + 1) for v in list(value)]
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return json_snapshot(to_dict(), _depth + 1)
    return str(value)


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
    ring overflowed — more than ``capacity`` events or ``max_bytes`` of payloads —, which
    :meth:`read` reports as ``dropped``.
    """

    def __init__(self, capacity: int = 20_000, max_bytes: int = JOURNAL_BYTES) -> None:
        if capacity < 1 or max_bytes < 1:
            raise ValueError("journal bounds must be positive")
        self._events: deque[JournalEvent] = deque()
        self._sizes: deque[int] = deque()  # approx_size of each event's payload, same order
        self._bytes = 0
        self._capacity = capacity
        self._max_bytes = max_bytes
        self._next_seq = 1
        self._cond = threading.Condition()
        self._closed = False

    def publish(self, event_type: str, payload: Mapping[str, Any] | None = None) -> int:
        """Record an event; returns its sequence number.

        The payload is stored as a :func:`json_snapshot`, so readers can serialize it and
        the publisher may keep mutating what it passed.
        """
        return self.publish_snapshot(event_type, json_snapshot(payload or {}))

    def publish_snapshot(self, event_type: str, snapshot: dict[str, Any], size: int | None = None) -> int:
        """Record an event whose payload the caller already made with :func:`json_snapshot`
        and hands over (nobody else may hold it): the copy is not made again. ``size``: its
        :func:`approx_size`, when the caller measured it off the main thread (0.6 ms for a
        200-ticket MMA snapshot)."""
        if size is None:
            size = approx_size(snapshot)  # outside the lock: readers never wait for it
        with self._cond:
            seq = self._next_seq
            self._next_seq += 1
            self._events.append(JournalEvent(seq, time.time(), event_type, snapshot))
            self._sizes.append(size)
            self._bytes += size
            # the oldest go first; the newest event is always kept, however large
            while len(self._events) > 1 and (
                len(self._events) > self._capacity or self._bytes > self._max_bytes
            ):
                self._events.popleft()
                self._bytes -= self._sizes.popleft()
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
