"""What the providers' caches are doing, read from the comms log as it arrives.

Two kinds of cache show up in comms entries:

- Gemini's server-side ``CachedContent`` of the system context: ``cache_created``
  (name, estimated tokens, TTL) and ``cache_deleted`` entries from the Gemini provider;
- prompt caching billed per request (Anthropic's breakpoints, Gemini's and OpenAI-compatible
  servers' cached prefixes): ``cache_read_tokens`` / ``cache_write_tokens`` in each
  ``response`` entry's usage.

:class:`CacheLedger` is fed every comms entry on the main thread (``process_pending``) and
keeps only what the Cache panel and the ``cache_state`` field show, so neither walks the whole
comms log each frame. :meth:`CacheLedger.view` is a pure function of the ledger and a clock.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DEFAULT_GEMINI_TTL_S", "CacheLedger", "CachedContent", "CachedRequest"]

DEFAULT_GEMINI_TTL_S = 3600.0  # the Gemini provider's CACHE_TTL_S, for entries that do not say
REQUESTS_KEPT = 200  # the newest responses with cache activity


@dataclass(slots=True)
class CachedContent:
    """One live server-side cache (Gemini)."""

    provider: str
    name: str
    model: str
    tokens: int
    created_at: float  # wall clock (the comms entry's local_ts)
    ttl_s: float

    def ttl_left_s(self, now: float) -> float:
        return max(0.0, self.created_at + self.ttl_s - now)


@dataclass(frozen=True, slots=True)
class CachedRequest:
    """The cache usage of one response."""

    ts: str
    provider: str
    model: str
    source_tier: str
    input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int

    @property
    def hit(self) -> bool:
        return self.cache_read_tokens > 0

    @property
    def read_share(self) -> float:
        """Cached tokens read over all prompt tokens of the request (0..1)."""
        prompt = self.input_tokens + self.cache_read_tokens + self.cache_write_tokens
        return self.cache_read_tokens / prompt if prompt else 0.0


@dataclass(slots=True)
class _Totals:
    requests: int = 0
    hits: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    input_tokens: int = 0


@dataclass(slots=True)
class CacheLedger:
    """Live caches by name, the recent requests that used a cache, totals per provider."""

    contents: dict[str, CachedContent] = field(default_factory=dict)
    requests: deque[CachedRequest] = field(default_factory=lambda: deque(maxlen=REQUESTS_KEPT))
    totals: dict[str, _Totals] = field(default_factory=dict)

    def add_all(self, entries: Iterable[dict[str, Any]]) -> None:
        for entry in entries:
            self.add(entry)

    def add(self, entry: dict[str, Any]) -> None:
        """Take one comms entry (entries of other kinds are ignored)."""
        kind = entry.get("kind")
        payload = entry.get("payload")
        if not isinstance(payload, dict):
            return
        if kind == "cache_created" and payload.get("name"):
            name = str(payload["name"])
            self.contents[name] = CachedContent(
                provider=str(entry.get("provider", "")),
                name=name,
                model=str(entry.get("model", "")),
                tokens=_int(payload.get("tokens")),
                created_at=float(entry.get("local_ts") or 0.0),
                ttl_s=float(payload.get("ttl_s") or DEFAULT_GEMINI_TTL_S),
            )
        elif kind == "cache_deleted":
            self.contents.pop(str(payload.get("name", "")), None)
        elif kind == "response" and isinstance(payload.get("usage"), dict):
            self._response(entry, payload["usage"])

    def _response(self, entry: dict[str, Any], usage: dict[str, Any]) -> None:
        provider = str(entry.get("provider", ""))
        request = CachedRequest(
            ts=str(entry.get("ts", "")),
            provider=provider,
            model=str(entry.get("model", "")),
            source_tier=str(entry.get("source_tier") or ""),
            input_tokens=_int(usage.get("input_tokens")),
            cache_read_tokens=_int(usage.get("cache_read_tokens")),
            cache_write_tokens=_int(usage.get("cache_write_tokens")),
        )
        totals = self.totals.setdefault(provider, _Totals())
        totals.requests += 1
        totals.input_tokens += request.input_tokens
        if not (request.cache_read_tokens or request.cache_write_tokens):
            return  # counted (a miss), not listed: the list is of requests that touched a cache
        totals.hits += request.hit
        totals.cache_read_tokens += request.cache_read_tokens
        totals.cache_write_tokens += request.cache_write_tokens
        self.requests.append(request)

    def clear(self) -> None:
        self.contents.clear()
        self.requests.clear()
        self.totals.clear()

    def view(self, now: float) -> dict[str, Any]:
        """The ``cache_state`` field: live caches with their TTL left (expired ones go), requests
        newest first, and per provider requests, hits, hit rate and tokens read and written."""
        contents = [
            {
                "provider": c.provider,
                "name": c.name,
                "model": c.model,
                "tokens": c.tokens,
                "ttl_s": c.ttl_s,
                "ttl_left_s": round(c.ttl_left_s(now), 1),
            }
            for c in self.contents.values()
            if c.ttl_left_s(now) > 0
        ]
        requests = [
            {
                "ts": r.ts,
                "provider": r.provider,
                "model": r.model,
                "source_tier": r.source_tier,
                "hit": r.hit,
                "input_tokens": r.input_tokens,
                "cache_read_tokens": r.cache_read_tokens,
                "cache_write_tokens": r.cache_write_tokens,
                "read_share": round(r.read_share, 3),
            }
            for r in reversed(self.requests)
        ]
        providers = {
            name: {
                "requests": t.requests,
                "hits": t.hits,
                "hit_rate": round(t.hits / t.requests, 3) if t.requests else 0.0,
                "cache_read_tokens": t.cache_read_tokens,
                "cache_write_tokens": t.cache_write_tokens,
            }
            for name, t in sorted(self.totals.items())
        }
        return {"contents": contents, "requests": requests, "providers": providers}


def _int(value: Any) -> int:
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0
