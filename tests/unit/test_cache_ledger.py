"""CacheLedger: live caches with their TTL left, cache hits per request and per provider."""

from __future__ import annotations

from typing import Any

from manual_slop.cache_ledger import DEFAULT_GEMINI_TTL_S, REQUESTS_KEPT, CacheLedger


def entry(kind: str, payload: Any, provider: str = "gemini", at: float = 1000.0, **extra: Any) -> dict:
    return {"kind": kind, "provider": provider, "model": "m", "ts": "10:00:00", "local_ts": at,
            "payload": payload, **extra}  # fmt: skip


def usage(read: int = 0, write: int = 0, fresh: int = 100) -> dict:
    return {"usage": {"input_tokens": fresh, "output_tokens": 5, "cache_read_tokens": read,
                      "cache_write_tokens": write}}  # fmt: skip


def test_a_gemini_cache_counts_down_its_ttl_and_goes_when_deleted_or_expired() -> None:
    ledger = CacheLedger()
    ledger.add(entry("cache_created", {"name": "cachedContents/a", "tokens": 5000, "ttl_s": 600}, at=1000.0))
    ledger.add(entry("cache_created", {"name": "cachedContents/b", "tokens": 3000}, at=1000.0))
    view = ledger.view(now=1100.0)
    assert [(c["name"], c["tokens"], c["ttl_left_s"]) for c in view["contents"]] == [
        ("cachedContents/a", 5000, 500.0),
        ("cachedContents/b", 3000, DEFAULT_GEMINI_TTL_S - 100),  # no ttl_s: the provider's TTL
    ]
    assert [c["name"] for c in ledger.view(now=1700.0)["contents"]] == ["cachedContents/b"]  # a expired
    ledger.add(entry("cache_deleted", {"name": "cachedContents/b", "reason": "cleanup"}))
    assert ledger.view(now=1100.0)["contents"] == [c for c in view["contents"] if c["name"].endswith("a")]


def test_requests_with_cache_activity_are_listed_newest_first_and_totals_count_every_response() -> None:
    ledger = CacheLedger()
    ledger.add_all(
        [
            entry("response", usage(write=4000), provider="anthropic"),
            entry("response", usage(read=4000, fresh=1000), provider="anthropic", source_tier="Tier 3"),
            entry("response", usage(), provider="anthropic"),  # a miss: counted, not listed
            entry("response", usage(read=300), provider="openai_compatible"),
            entry("request", {"usage": {"cache_read_tokens": 99}}, provider="anthropic"),  # not a response
            entry("response", "garbled", provider="anthropic"),
        ]
    )
    view = ledger.view(now=0.0)
    keys = ("provider", "cache_read_tokens", "cache_write_tokens", "hit")
    rows = [tuple(r[k] for k in keys) for r in view["requests"]]
    assert rows == [
        ("openai_compatible", 300, 0, True),
        ("anthropic", 4000, 0, True),
        ("anthropic", 0, 4000, False),
    ]  # fmt: skip
    assert view["requests"][1]["read_share"] == 0.8 and view["requests"][1]["source_tier"] == "Tier 3"
    assert view["providers"]["anthropic"] == {
        "requests": 3, "hits": 1, "hit_rate": 0.333, "cache_read_tokens": 4000, "cache_write_tokens": 4000,
    }  # fmt: skip


def test_the_request_list_is_bounded() -> None:
    ledger = CacheLedger()
    count = REQUESTS_KEPT + 5
    ledger.add_all(entry("response", usage(read=i + 1), provider="anthropic") for i in range(count))
    view = ledger.view(now=0.0)
    assert len(view["requests"]) == REQUESTS_KEPT
    assert view["requests"][0]["cache_read_tokens"] == REQUESTS_KEPT + 5
    assert view["providers"]["anthropic"]["requests"] == REQUESTS_KEPT + 5
