"""Run metrics: failure rates and latency percentiles per provider and per tool, guard trips.

:class:`MetricsCollector` listens to the AI client's :class:`~manual_slop.events.EventEmitter`
(:meth:`MetricsCollector.attach`); the tool loop emits, from whichever thread runs it:

==================== =======================================================================
``request_start``    ``provider``, ``model``: a provider call begins
``response_received`` ``provider``, ``model``, ``latency_ms`` (and ``usage``): it answered
``request_failed``   ``provider``, ``model``, ``kind`` (``ProviderError.kind``): it failed for good
``tool_execution``   ``name``, ``status`` (``ToolStatus``), ``duration_ms``: a tool call ended
``guard_trip``       ``kind``, ``tool``: a loop guard fired (repeated call, unknown tool, …)
==================== =======================================================================

Memory is bounded whatever the run does: each provider and tool keeps only its last
:data:`WINDOW` latencies (a ring buffer: the percentiles describe recent behaviour), and the
tables hold at most :data:`MAX_KEYS` names each; later names (a model inventing tool names)
are counted under :data:`OTHER`. Recording is O(1) under one lock; :meth:`snapshot` copies the
numbers under it and computes percentiles outside, and is cached until the next event.
"""

from __future__ import annotations

import copy
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from manual_slop.events import EventEmitter

__all__ = [
    "EVENTS",
    "FAILED_TOOL_STATUSES",
    "MAX_KEYS",
    "OTHER",
    "WINDOW",
    "MetricsCollector",
    "percentile",
]

WINDOW = 512  # latencies kept per provider and per tool
MAX_KEYS = 100  # providers, tools and guard kinds tracked by name, each
OTHER = "(other)"  # where names past MAX_KEYS are counted
FAILED_TOOL_STATUSES = frozenset({"error", "timeout"})  # a rejection or denial is no tool failure

# what attach() subscribes to
EVENTS = ("request_start", "response_received", "request_failed", "tool_execution", "guard_trip")


def percentile(samples: Iterable[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) by linear interpolation between the closest ranks
    (numpy's default); None without samples."""
    ordered = sorted(samples)
    if not ordered:
        return None
    rank = (len(ordered) - 1) * min(max(q, 0.0), 100.0) / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(slots=True)
class _Provider:
    model: str = ""
    requests: int = 0
    ok: int = 0
    failures: int = 0
    failures_by_kind: dict[str, int] = field(default_factory=dict)
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=WINDOW))


@dataclass(slots=True)
class _Tool:
    calls: int = 0
    errors: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    guard_trips: int = 0
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=WINDOW))


def _bounded_key(table: dict[str, Any], name: str) -> str:
    """``name``, or OTHER once the table is full and does not know it."""
    return name if name in table or len(table) < MAX_KEYS else OTHER


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return max(0.0, float(value))


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


class MetricsCollector:
    """Thread-safe counters fed by tool-loop events; :meth:`snapshot` is JSON-ready."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._revision = 0
        self._cached: tuple[int, dict[str, Any]] | None = None
        self._reset_locked()

    def _reset_locked(self) -> None:
        self._since = self._clock()
        self._providers: dict[str, _Provider] = {}
        self._tools: dict[str, _Tool] = {}
        self._guards: dict[str, int] = {}
        self._revision += 1

    # -- wiring --------------------------------------------------------------------------------
    def attach(self, emitter: EventEmitter) -> Callable[[], None]:
        """Subscribe to ``emitter``'s events; returns a function that unsubscribes them all."""
        handlers: dict[str, Callable[..., None]] = {
            "request_start": self.request_started,
            "response_received": self.response_received,
            "request_failed": self.request_failed,
            "tool_execution": self.tool_executed,
            "guard_trip": self.guard_tripped,
        }
        unsubscribers = [emitter.on(name, handlers[name]) for name in EVENTS]

        def detach() -> None:
            for unsubscribe in unsubscribers:
                unsubscribe()

        return detach

    # -- recording (any thread; extra keyword arguments are ignored) ----------------------------
    def _provider(self, provider: str, model: str) -> _Provider:
        key = _bounded_key(self._providers, provider or "?")
        entry = self._providers.setdefault(key, _Provider())
        if model:
            entry.model = model
        self._revision += 1
        return entry

    def request_started(self, provider: str = "", model: str = "", **_: Any) -> None:
        with self._lock:
            self._provider(provider, model).requests += 1

    def response_received(
        self, provider: str = "", model: str = "", latency_ms: Any = None, **_: Any
    ) -> None:
        latency = _number(latency_ms)
        with self._lock:
            entry = self._provider(provider, model)
            entry.ok += 1
            if latency is not None:
                entry.latencies.append(latency)

    def request_failed(self, provider: str = "", model: str = "", kind: Any = "unknown", **_: Any) -> None:
        with self._lock:
            entry = self._provider(provider, model)
            entry.failures += 1
            key = _bounded_key(entry.failures_by_kind, str(kind or "unknown"))
            entry.failures_by_kind[key] = entry.failures_by_kind.get(key, 0) + 1

    def _tool(self, name: str) -> _Tool:
        self._revision += 1
        return self._tools.setdefault(_bounded_key(self._tools, name or "?"), _Tool())

    def tool_executed(self, name: str = "", status: Any = "", duration_ms: Any = None, **_: Any) -> None:
        status = str(status or "unknown")
        duration = _number(duration_ms)
        with self._lock:
            entry = self._tool(name)
            entry.calls += 1
            if status in FAILED_TOOL_STATUSES:
                entry.errors += 1
            key = _bounded_key(entry.by_status, status)
            entry.by_status[key] = entry.by_status.get(key, 0) + 1
            if duration is not None:
                entry.latencies.append(duration)

    def guard_tripped(self, kind: Any = "", tool: Any = "", **_: Any) -> None:
        with self._lock:
            key = _bounded_key(self._guards, str(kind or "unknown"))
            self._guards[key] = self._guards.get(key, 0) + 1
            if tool:
                self._tool(str(tool)).guard_trips += 1
            self._revision += 1

    def reset(self) -> None:
        """Forget everything recorded so far (the panel's Reset, ``btn_reset_metrics``)."""
        with self._lock:
            self._reset_locked()

    # -- reading -------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """``{since, window, providers: [...], tools: [...], guard_trips: {total, by_kind}}``,
        rows sorted by name; a fresh copy the caller may keep or change."""
        with self._lock:
            revision = self._revision
            cached = self._cached
            if cached is None or cached[0] != revision:
                raw = (
                    self._since,
                    {name: _copy_provider(p) for name, p in self._providers.items()},
                    {name: _copy_tool(t) for name, t in self._tools.items()},
                    dict(self._guards),
                )
            else:
                raw = None
        if raw is None:
            assert cached is not None
            return copy.deepcopy(cached[1])
        built = _build(*raw)
        with self._lock:
            if self._revision == revision:
                self._cached = (revision, built)
        return copy.deepcopy(built)


def _copy_provider(p: _Provider) -> _Provider:
    return _Provider(p.model, p.requests, p.ok, p.failures, dict(p.failures_by_kind), deque(p.latencies))


def _copy_tool(t: _Tool) -> _Tool:
    return _Tool(t.calls, t.errors, dict(t.by_status), t.guard_trips, deque(t.latencies))


def _latency(samples: deque[float]) -> dict[str, Any]:
    return {
        "p50_ms": _rounded(percentile(samples, 50)),
        "p95_ms": _rounded(percentile(samples, 95)),
        "samples": len(samples),
    }


def _rate(failed: int, total: int) -> float:
    return round(failed / total, 4) if total else 0.0


def _build(
    since: float, providers: dict[str, _Provider], tools: dict[str, _Tool], guards: dict[str, int]
) -> dict[str, Any]:
    return {
        "since": since,
        "window": WINDOW,
        "providers": [
            {
                "provider": name,
                "model": p.model,
                "requests": p.requests,
                "ok": p.ok,
                "failures": p.failures,
                # of the calls that ended (one still running is neither)
                "failure_rate": _rate(p.failures, p.ok + p.failures),
                "failures_by_kind": dict(sorted(p.failures_by_kind.items())),
                **_latency(p.latencies),
            }
            for name, p in sorted(providers.items())
        ],
        "tools": [
            {
                "tool": name,
                "calls": t.calls,
                "errors": t.errors,
                "failure_rate": _rate(t.errors, t.calls),
                "by_status": dict(sorted(t.by_status.items())),
                "guard_trips": t.guard_trips,
                **_latency(t.latencies),
            }
            for name, t in sorted(tools.items())
        ],
        "guard_trips": {"total": sum(guards.values()), "by_kind": dict(sorted(guards.items()))},
    }
