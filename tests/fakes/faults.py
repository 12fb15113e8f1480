"""Fault injection for the fake provider servers (reliability suite R5).

A :class:`FaultInjector` is a fake's ``responder``: for each model call it draws, from its
own seeded random generator, either a healthy ``Reply`` or one of the faults a real provider
(or the network in front of it) produces::

    rate_limit   429 with Retry-After (now and then one longer than the client will wait)
    server_error 500 / 502 / 503 (and 529 overloaded where the protocol has it)
    reset        the connection is reset (RST) after the request is read
    stall        nothing is sent for longer than the client's timeout
    truncated    the answer stops halfway (a stream inside an SSE event)
    garbage      a 200 whose body is not the protocol (HTML, bytes, half a JSON)

:class:`InBandErrors` wraps an injector for a protocol that also reports errors in a 200 body
(MiniMax's ``base_resp.status_code``): every other 429 or 5xx it draws comes back that way.

:class:`LocalFaultInjector` draws the same way for the local model's fake
(:class:`~tests.fakes.llama.FakeLlamaServer`): a generation that stalls (before its first token
or mid-answer) or dies (raising, or in an error chunk).

While :meth:`FaultInjector.outage` is on, every call fails with a slow transient fault (a
stall, or a 429 asking for ``outage_retry_after`` seconds): only the client's deadline ends a
send then. Every decision is recorded in ``drawn`` (in call order), so a test can compare what
the server did with what the client logged::

    with OpenAIFake() as fake:
        fake.responder = FaultInjector(rate=0.3, seed=7, stall_s=1.0)
"""

from __future__ import annotations

import contextlib
import random
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from tests.fakes.http import Recorded
from tests.fakes.llama import LlamaAbort, LlamaStall
from tests.fakes.script import Fail, Hang, Json, Raw, Reply, Reset, Truncated, Turn

__all__ = ["FAULT_KINDS", "LOCAL_FAULT_KINDS", "FaultInjector", "InBandErrors", "LocalFaultInjector"]

FAULT_KINDS = ("rate_limit", "server_error", "reset", "stall", "truncated", "garbage")
# a local model's generation: stalls before its first token or mid-answer; dies raising or in a chunk
LOCAL_FAULT_KINDS = ("stall_first", "stall", "abort", "abort_chunk")

_GARBAGE = (
    ("<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html"),
    ('{"choices": [{"index": 0, "mess', "application/json"),
    ("\x00\x01\x02\ufffd not a protocol \x7f", "application/octet-stream"),
    ("data: {not json}\n\n", "text/event-stream"),
)


@dataclass(slots=True)
class FaultInjector:
    """A responder that answers ``rate`` of the model calls with a fault (seeded, thread-safe)."""

    rate: float = 0.3
    seed: int = 0
    stall_s: float = 1.0  # how long a stall says nothing: set it above the client's timeout
    kinds: tuple[str, ...] = FAULT_KINDS
    overloaded: bool = False  # the protocol has 529 (Anthropic)
    long_retry_after: float = 120.0  # a Retry-After the client must refuse to wait for
    outage_retry_after: float = 0.1  # the Retry-After of a 429 during an outage
    in_outage: bool = False
    drawn: list[str] = field(default_factory=list)  # "ok" or the fault kind, per call
    _rng: random.Random = field(init=False, repr=False)
    _outage_rng: random.Random = field(init=False, repr=False)  # outages leave the main draw alone
    _deck: list[str] = field(default_factory=list, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    ALL_KINDS: ClassVar[tuple[str, ...]] = FAULT_KINDS

    def __post_init__(self) -> None:
        unknown = set(self.kinds) - set(self.ALL_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kind(s) {sorted(unknown)}; expected some of {self.ALL_KINDS}")
        self._rng = random.Random(self.seed)
        self._outage_rng = random.Random(self.seed + 1)

    def __call__(self, request: Any) -> Any:
        with self._lock:
            rng = self._rng
            if self.in_outage:
                return self._outage_turn(self._outage_rng)
            if rng.random() >= self.rate:
                self.drawn.append("ok")
                return self._ok(f"answer {len(self.drawn)}")
            if not self._deck:  # kinds are dealt from a shuffled deck: every kind within len(kinds)
                self._deck = list(self.kinds)
                rng.shuffle(self._deck)
            kind = self._deck.pop()
            self.drawn.append(kind)
            return self._fault(kind, rng)

    @contextlib.contextmanager
    def outage(self) -> Iterator[None]:
        """Every call within the block fails with a slow transient fault."""
        with self._lock:
            self.in_outage = True
        try:
            yield
        finally:
            with self._lock:
                self.in_outage = False

    def counts(self) -> Counter[str]:
        with self._lock:
            return Counter(self.drawn)

    def _ok(self, text: str) -> Any:
        return Reply(text)

    def _outage_turn(self, rng: random.Random) -> Any:
        kind = rng.choice(("stall", "rate_limit"))
        self.drawn.append(f"outage_{kind}")
        if kind == "stall":
            return Hang(self.stall_s)
        return Fail(429, headers={"Retry-After": f"{self.outage_retry_after:g}"})

    def _fault(self, kind: str, rng: random.Random) -> Any:
        if kind == "rate_limit":
            wait = self.long_retry_after if rng.random() < 0.1 else rng.choice((0.0, 0.01, 0.02))
            return Fail(429, headers={"Retry-After": f"{wait:g}"})
        if kind == "server_error":
            statuses = (500, 502, 503, 529) if self.overloaded else (500, 502, 503)
            return Fail(rng.choice(statuses))
        if kind == "reset":
            return Reset()
        if kind == "stall":
            return Hang(self.stall_s)
        if kind == "truncated":
            return Truncated(Reply("a streamed answer that will be cut off " * 4), mid_event=True)
        body, content_type = rng.choice(_GARBAGE)
        return Raw(body, status=200, content_type=content_type)


# MiniMax's in-band codes for what other servers say with a status: rpm limit, internal error
_IN_BAND = {429: (1002, "rpm limit exceeded"), 500: (1013, "internal service error")}


@dataclass(slots=True)
class InBandErrors:
    """A responder wrapping ``inner``: every other 429 or 5xx it answers becomes an HTTP 200 whose
    body carries only ``base_resp`` (``status_code`` 1002 or 1013), as MiniMax answers."""

    inner: Callable[[Recorded], Turn]
    converted: int = 0
    _flip: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __call__(self, request: Recorded) -> Turn:
        turn = self.inner(request)
        if not isinstance(turn, Fail) or (turn.status != 429 and turn.status < 500):
            return turn
        with self._lock:
            self._flip = not self._flip
            if not self._flip:
                return turn
            self.converted += 1
        code, message = _IN_BAND[429 if turn.status == 429 else 500]
        return Json({"base_resp": {"status_code": code, "status_msg": message}}, status=200)


@dataclass(slots=True)
class LocalFaultInjector(FaultInjector):
    """The same draw for :class:`~tests.fakes.llama.FakeLlamaServer` (its ``responder``): a
    generation stalls for ``stall_s`` (before its first token or mid-answer) or dies (raising, or
    in an error chunk). During an outage every generation stalls."""

    kinds: tuple[str, ...] = LOCAL_FAULT_KINDS
    ALL_KINDS: ClassVar[tuple[str, ...]] = LOCAL_FAULT_KINDS

    def _ok(self, text: str) -> Any:
        return text

    def _outage_turn(self, rng: random.Random) -> Any:
        self.drawn.append("outage_stall")
        return LlamaStall("a late answer", self.stall_s, after=rng.randint(0, 3))

    def _fault(self, kind: str, rng: random.Random) -> Any:
        if kind in ("stall", "stall_first"):
            return LlamaStall(
                "an answer that stalls halfway", self.stall_s, after=0 if kind == "stall_first" else 3
            )
        return LlamaAbort(
            "slot failed: the generation died", after=rng.randint(0, 3), chunk=kind == "abort_chunk"
        )
