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

A turn that is already running when a frame begins would still run to its end, and the frame
would wait for it at each of its Python callbacks (the main thread gives the GIL up between
them, and the worker takes it back for up to a switch interval each time). Long sections
therefore call :func:`give_way` between their steps (per file of a context, between the
redaction and the snapshot of an MMA update): while a frame is being drawn, the worker stops
there, which hands the GIL to the main thread at once, and goes on when the frame is drawn.

``with cpu_turn():`` goes around a short block of pure-Python work that waits on nothing slow
(no network, no other thread). Threads that must never wait go through at once: the main
thread (it draws the frames) and a thread running an asyncio loop (the loop never blocks).
Others wait for the turn at most ``MAX_WAIT_S``, then go ahead anyway: a turn held long (a
context over a big project) delays them by that much, never more. A frame holds each thread
back at most ``MAX_WAIT_S`` in all, however many turns and steps the thread reaches while it
lasts: a frame stuck for seconds costs a worker 50 ms, not 50 ms per file. Re-entrant.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["MAX_WAIT_S", "cpu_turn", "frame_begins", "frame_ends", "give_way"]

MAX_WAIT_S = 0.05


class _FrameGate:
    """Whether the main thread is drawing a frame, and which: a thread waits for one frame at
    most ``max_wait_s`` in all, however many turns and steps it reaches while that frame lasts
    (a frame stuck for seconds, e.g. the main thread in a long call, must not cost a worker
    50 ms per file)."""

    def __init__(self) -> None:
        self.idle = threading.Event()  # cleared while a frame is drawn
        self.idle.set()
        self.number = 0  # frames begun (main thread only writes it)
        self._gave_up = threading.local()  # per thread: the frame it stopped waiting for

    def begin(self) -> None:
        self.number += 1
        self.idle.clear()

    def end(self) -> None:
        self.idle.set()

    def wait(self, max_wait_s: float) -> None:
        if self.idle.is_set():
            return
        number = self.number
        if getattr(self._gave_up, "number", None) == number:
            return
        if not self.idle.wait(max_wait_s):
            self._gave_up.number = number


_TURN = threading.RLock()  # declared singleton: the process has one GIL, hence one turn
_FRAME = _FrameGate()  # declared singleton: the process has one main thread drawing frames
_MAIN_IDENT = threading.main_thread().ident


def frame_begins() -> None:
    """The main thread starts a frame: no new turn starts until :func:`frame_ends`."""
    _FRAME.begin()


def frame_ends() -> None:
    """The frame is drawn: turns start again."""
    _FRAME.end()


def _may_wait() -> bool:
    # get_ident, not current_thread(): that would register a never-ending _DummyThread for a
    # thread threading did not start (the ImGui test engine's coroutine, a C library's)
    return threading.get_ident() != _MAIN_IDENT and asyncio._get_running_loop() is None


@contextmanager
def cpu_turn(max_wait_s: float = MAX_WAIT_S) -> Iterator[bool]:
    """Hold the process's CPU turn for the block; yields whether it was taken (False: the
    thread may not wait, or the turn stayed busy for ``max_wait_s``)."""
    if not _may_wait():
        yield False
        return
    deadline = time.monotonic() + max_wait_s
    _FRAME.wait(max_wait_s)  # a frame being drawn goes first
    taken = _TURN.acquire(timeout=max(0.0, deadline - time.monotonic()))
    try:
        yield taken
    finally:
        if taken:
            _TURN.release()


def give_way(max_wait_s: float = MAX_WAIT_S) -> None:
    """Between two steps of Python-heavy work: wait while the main thread draws a frame (at
    most ``max_wait_s`` per frame and thread). Returns at once when no frame is being drawn (an
    attribute read), on the main thread and on a thread running an asyncio loop."""
    if not _FRAME.idle.is_set() and _may_wait():
        _FRAME.wait(max_wait_s)
