"""One turn at a time for Python-heavy work on background threads, so a frame waits for one.

Why (issue #22c): CPython runs one thread's bytecode at a time (the GIL). The window's main
thread gives the GIL up each time the C++ frame loop runs between two Python callbacks and
takes it back at the next one. When it comes back while N worker threads are queued for the
GIL with CPU-bound work (building a Tier 3 context, snapshotting 200 tickets for an
``mma_state`` event), it waits behind up to N of them, each running up to the switch interval
(5 ms) before it must hand over: a 4 ms frame took 25-45 ms at the p99 with four workers
(``scripts/bench_gui.py``). Two threads never run Python at the same moment anyway, so letting
one worker at a time into such a section costs the workers no throughput: the others wait on
a lock, outside the GIL's queue, and the frame waits behind one thread at most.

While the main thread draws a frame (:func:`frame_begins` to :func:`frame_ends`, called by the
controller's ``begin_frame`` / ``end_frame``) no new turn starts: the frame's Python then
competes with at most the one section already running when it began. A frame takes a few
milliseconds of the 16-100 between two, so the workers lose little.

``with cpu_turn():`` goes around a short block of pure-Python work that waits on nothing slow
(no network, no other thread). Threads that must never wait go through at once: the main
thread (it draws the frames) and a thread running an asyncio loop (the loop never blocks).
Others wait for the frame and the turn at most ``MAX_WAIT_S`` in all, then go ahead anyway: a
turn held long (a context over a big project) or a long frame delays them by that much, never
more. Re-entrant.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["MAX_WAIT_S", "cpu_turn", "frame_begins", "frame_ends"]

MAX_WAIT_S = 0.05
_TURN = threading.RLock()  # declared singleton: the process has one GIL, hence one turn
_NO_FRAME = threading.Event()  # declared singleton: cleared while the main thread draws a frame
_NO_FRAME.set()
_MAIN_IDENT = threading.main_thread().ident


def frame_begins() -> None:
    """The main thread starts a frame: no new turn starts until :func:`frame_ends`."""
    _NO_FRAME.clear()


def frame_ends() -> None:
    """The frame is drawn: turns start again."""
    _NO_FRAME.set()


@contextmanager
def cpu_turn(max_wait_s: float = MAX_WAIT_S) -> Iterator[bool]:
    """Hold the process's CPU turn for the block; yields whether it was taken (False: the
    thread may not wait, or the turn stayed busy for ``max_wait_s``)."""
    # get_ident, not current_thread(): that would register a never-ending _DummyThread for a
    # thread threading did not start (the ImGui test engine's coroutine, a C library's)
    if threading.get_ident() == _MAIN_IDENT or asyncio._get_running_loop() is not None:
        yield False
        return
    deadline = time.monotonic() + max_wait_s
    _NO_FRAME.wait(max_wait_s)  # a frame being drawn goes first
    taken = _TURN.acquire(timeout=max(0.0, deadline - time.monotonic()))
    try:
        yield taken
    finally:
        if taken:
            _TURN.release()
