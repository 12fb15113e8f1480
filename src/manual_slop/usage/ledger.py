"""The session's tokens and dollars, per provider, model, tier, track, ticket and plan subtask.

One :class:`UsageLedger` per controller, fed with every comms ``response`` entry (each is one
provider call: its provider, model, tier tag, run ids and ``usage``) from whichever thread made
it. Each call is priced once, when it is recorded, by the :class:`~.prices.PriceBook` in force;
a call whose price is unknown is counted in tokens and in ``unknown_calls``, never as $0.

Where a call belongs comes from the entry itself: ``source_tier`` (``main`` for a chat
message), ``ticket`` with a conversation ``mma:…`` (an MMA ticket) or ``plan:<plan>:…`` (a plan
subtask), and the track the MMA runtime says is running (:meth:`UsageLedger.set_track`: the
runtime hands in "the running conductor's track", so calls made between runs belong to none).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from manual_slop.usage.prices import PriceBook, Tokens, priced_tokens

__all__ = ["DIMENSIONS", "Spend", "Tally", "UsageLedger", "format_usd"]

# the breakdowns, in the order the panel and GET /api/usage give them
DIMENSIONS: tuple[str, ...] = ("provider", "model", "tier", "track", "ticket", "subtask")
MAX_POINTS = 20_000  # points of the cost plot kept (a long session thins nothing: it stops adding)


def format_usd(usd: Decimal | float | None, unknown_calls: int = 0) -> str:
    """``$0.0123``, ``unknown`` (no call priced) or ``$0.0123 + 2 unknown``."""
    if usd is None:
        return "unknown"
    text = f"${float(usd):.4f}"
    return f"{text} + {unknown_calls} unknown" if unknown_calls else text


@dataclass(slots=True)
class Tally:
    """Calls, tokens and known dollars of one row of a breakdown."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    usd: Decimal = Decimal(0)  # the calls with a known price only
    unknown_calls: int = 0

    def add(self, tokens: Tokens, usd: Decimal | None) -> None:
        self.calls += 1
        self.input_tokens += tokens.input
        self.output_tokens += tokens.output
        self.cache_read_tokens += tokens.cache_read
        self.cache_write_tokens += tokens.cache_write
        if usd is None:
            self.unknown_calls += 1
        else:
            self.usd += usd

    @property
    def known_usd(self) -> Decimal | None:
        """The dollars, or None when no call of the row has a known price."""
        return None if self.calls and self.unknown_calls == self.calls else self.usd

    def to_dict(self) -> dict[str, Any]:
        known = self.known_usd
        return {
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "usd": None if known is None else float(known),
            "unknown_calls": self.unknown_calls,
        }


@dataclass(frozen=True, slots=True)
class Spend:
    """What a budget is compared with: known dollars, and how many calls had no price."""

    usd: Decimal = Decimal(0)
    unknown_calls: int = 0


@dataclass(slots=True)
class _Rows:
    total: Tally = field(default_factory=Tally)
    by: dict[str, dict[str, Tally]] = field(default_factory=lambda: {name: {} for name in DIMENSIONS})


class UsageLedger:
    """Thread-safe totals of every priced call of the session, and the cost over time."""

    def __init__(self, prices: PriceBook | None = None) -> None:
        self._lock = threading.Lock()
        self._prices = prices or PriceBook()
        self._rows = _Rows()
        self._track: Callable[[], str] = str  # the track whose MMA calls are made now ('' = none)
        self._started: float | None = None
        self._times: list[float] = []  # seconds since the first call
        self._dollars: list[float] = []  # the session's known dollars after each call
        self.version = 0  # grows with every recorded call (the panel redraws on change)

    # -- configuration ---------------------------------------------------------------------------
    @property
    def prices(self) -> PriceBook:
        return self._prices

    def set_prices(self, prices: PriceBook) -> None:
        """Price the calls recorded from now on with ``prices`` (recorded ones keep theirs)."""
        with self._lock:
            self._prices = prices

    def set_track(self, track: str | Callable[[], str]) -> None:
        """MMA and plan calls from now on belong to ``track``: an id ('' = no track) or a function
        giving the id at each call (any thread; it must be quick and lock-free)."""
        source = track if callable(track) else (lambda: track)
        with self._lock:
            self._track = source

    # -- recording (any thread) -----------------------------------------------------------------
    def record(self, entry: Mapping[str, Any]) -> Decimal | None:
        """Count a comms entry when it is a ``response``; its dollars (None: unknown price)."""
        if entry.get("kind") != "response":
            return None
        payload = entry.get("payload")
        usage = payload.get("usage") if isinstance(payload, Mapping) else None
        provider, model = str(entry.get("provider") or "?"), str(entry.get("model") or "")
        tokens = priced_tokens(provider, usage if isinstance(usage, Mapping) else {})
        usd = self._prices.cost(provider, model, tokens)
        stamp = float(entry.get("local_ts") or time.time())
        conversation = str(entry.get("conversation") or "")
        ticket = str(entry.get("ticket") or "")
        tier = str(entry.get("source_tier") or "main")
        mma = conversation.startswith(("mma:", "plan:"))
        with self._lock:
            track = self._track() if mma else ""
            keys = {
                "provider": provider,
                "model": f"{provider} / {model or '?'}",
                "tier": tier,
                "track": "",
                "ticket": "",
                "subtask": "",
            }
            if mma and tier != "Tier 1":
                keys["track"] = track
            if ticket and conversation.startswith("mma:"):
                keys["ticket"] = f"{track}/{ticket}" if track else ticket
            elif ticket and conversation.startswith("plan:"):
                keys["subtask"] = f"{conversation.split(':')[1]}/{ticket}"
            self._rows.total.add(tokens, usd)
            for dimension, key in keys.items():
                if key:
                    self._rows.by[dimension].setdefault(key, Tally()).add(tokens, usd)
            if self._started is None:
                self._started = stamp
            if len(self._times) < MAX_POINTS:
                self._times.append(stamp - self._started)
                self._dollars.append(float(self._rows.total.usd))
            self.version += 1
        return usd

    # -- reading (any thread) -------------------------------------------------------------------
    def spend(self, track_id: str | None = None) -> Spend:
        """The session's spend, or one track's."""
        with self._lock:
            tally = self._rows.total if track_id is None else self._rows.by["track"].get(track_id, Tally())
            return Spend(tally.usd, tally.unknown_calls)

    def tally(self, dimension: str, key: str) -> Tally:
        """A copy of one row (an empty one when nothing was recorded for it)."""
        with self._lock:
            row = self._rows.by[dimension].get(key)
            return Tally() if row is None else dataclasses.replace(row)

    def series(self) -> tuple[list[float], list[float]]:
        """The cost plot: seconds since the first call, and the session's known dollars then."""
        with self._lock:
            return list(self._times), list(self._dollars)

    def breakdown(self) -> dict[str, Any]:
        """Everything, JSON-ready: ``total``, ``by_<dimension>`` rows and the track in progress."""
        with self._lock:
            return {
                "total": self._rows.total.to_dict(),
                **{
                    f"by_{name}": {key: tally.to_dict() for key, tally in sorted(rows.items())}
                    for name, rows in self._rows.by.items()
                },
                "track": self._track(),
                "price_overrides": sorted(self._prices.overrides),
            }

    def reset(self) -> None:
        """Forget every call (the track in progress and the prices stay)."""
        with self._lock:
            self._rows = _Rows()
            self._started = None
            self._times, self._dollars = [], []
            self.version += 1
