"""The comms log: every request, response, tool call and tool result, as it happens.

Each entry is ``{ts, local_ts, direction, kind, provider, model, source_tier, payload}``:
``direction`` is ``OUT`` (to the provider) or ``IN``; ``kind`` is ``request``,
``response``, ``tool_call``, ``tool_result``, ``error``, ``retry``, ``fallback``,
``notice``, ``cache_*`` or ``history``. Entries are kept in a bounded in-memory log and pushed
to a callback (the controller's ``add_comms_entry``) the moment they are made.

``source_tier`` comes from a thread-local tag (:func:`set_current_tier`), so entries made by
several MMA workers at once are each labelled with their own tier. An entry made during an agent
run also carries the run's ``run_id``, ``conversation`` and ``ticket``
(:mod:`manual_slop.governance.correlation`): one grep joins it to the run log and ``audit.log``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from manual_slop.governance.correlation import correlation
from manual_slop.log_budget import LogBudget

__all__ = ["PAYLOAD_TEXT_LIMIT", "CommsLog", "clip", "get_current_tier", "set_current_tier"]

log = logging.getLogger(__name__)

PAYLOAD_TEXT_LIMIT = 20_000  # characters of one text field kept in an entry
_tier = threading.local()


def get_current_tier() -> str | None:
    """The calling thread's tier tag (``"Tier 3"`` ...), or None."""
    return getattr(_tier, "value", None)


def set_current_tier(tier: str | None) -> None:
    """Tag the calling thread's comms and tool entries with ``tier`` (None clears it)."""
    _tier.value = tier


_PLAIN = (int, float, bool, type(None))


def clip(value: Any, limit: int = PAYLOAD_TEXT_LIMIT) -> Any:
    """``value`` with long strings cut (nested in dicts and lists too)."""
    kind = type(value)
    if kind is str:
        return value if len(value) <= limit else value[:limit] + f"...[{len(value):,} chars]"
    if kind in _PLAIN:
        return value
    if isinstance(value, dict):
        return {
            k: v if type(v) in _PLAIN or (type(v) is str and len(v) <= limit) else clip(v, limit)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [clip(v, limit) for v in value]
    if isinstance(value, str):  # a str subclass (StrEnum)
        return clip(str(value), limit)
    return value


class CommsLog:
    """Bounded, thread-safe list of comms entries with a live callback.

    Bounded by count and by bytes (``max_bytes``): the app's view is the controller's (the
    callback); this copy serves the client's own readers, so it is kept small.
    """

    def __init__(self, capacity: int = 2_000, max_bytes: int = 4 * 1024 * 1024) -> None:
        self._entries: list[dict[str, Any]] = []
        self._budget = LogBudget(max_bytes, capacity)
        self._lock = threading.Lock()
        self.callback: Callable[[dict[str, Any]], Any] | None = None
        self._ts: tuple[int, str] = (-1, "")  # (second, its "%H:%M:%S"): replaced whole, never torn

    def append(
        self, direction: str, kind: str, provider: str, model: str, payload: dict[str, Any]
    ) -> dict[str, Any]:
        now = time.time()
        second = int(now)
        if second != self._ts[0]:  # formatted once a second, not per entry (two per send)
            self._ts = (second, time.strftime("%H:%M:%S", time.localtime(second)))
        entry = {
            "ts": self._ts[1],
            "local_ts": now,
            "direction": direction,
            "kind": kind,
            "provider": provider,
            "model": model,
            "source_tier": get_current_tier(),
            "payload": clip(payload),
            **correlation(),
        }
        with self._lock:
            self._budget.extend(self._entries, [entry])
        callback = self.callback
        if callback is not None:
            try:
                callback(entry)
            except Exception:  # the log must never break a request
                log.exception("comms callback failed")
        return entry

    def entries(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
