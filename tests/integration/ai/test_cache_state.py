"""The Cache panel's data (``cache_state``) from real provider traffic: the real SDKs against the
fake Gemini and Anthropic servers, their comms entries fed to a controller as the app does."""

from __future__ import annotations

from pathlib import Path

from manual_slop.ai.providers.gemini import CACHE_TTL_S
from tests.fakes import Reply
from tests.integration.ai.harness import make_harness
from tests.integration.ai.test_caching import BIG_CONTEXT


def _cache_state(ctrl, entries: list[dict]) -> dict:
    """``entries`` handed to the controller as the AI client does; the main thread's drain
    feeds the ledger."""
    for entry in entries:
        ctrl.add_comms_entry(entry)
    ctrl.process_pending()
    return ctrl.fields.get("cache_state")


def test_gemini_cached_content_shows_with_its_ttl_until_deleted(make_controller, tmp_path: Path) -> None:
    harness = make_harness("gemini", tmp_path)
    try:
        client = harness.client()
        harness.push(Reply("one"), Reply("two"))
        client.send(BIG_CONTEXT, "first")
        client.send(BIG_CONTEXT, "second")
        name = next(iter(harness.fake.caches))
        ctrl = make_controller()
        state = _cache_state(ctrl, list(harness.entries))
        seen = len(harness.entries)
        [content] = state["contents"]
        assert content["provider"] == "gemini" and content["name"] == name
        assert content["tokens"] > 2048 and content["ttl_s"] == CACHE_TTL_S
        assert CACHE_TTL_S - 60 < content["ttl_left_s"] <= CACHE_TTL_S
        # the second request read the cached system context: a hit the fake counted
        assert state["providers"]["gemini"]["hits"] >= 1
        client.reset_session()  # deletes the server-side cache
        assert harness.fake.caches == {}
        assert _cache_state(ctrl, harness.entries[seen:])["contents"] == []
    finally:
        harness.close()


def test_anthropic_cache_writes_then_hits_per_request(make_controller, tmp_path: Path) -> None:
    harness = make_harness("anthropic", tmp_path)
    try:
        client = harness.client(system_prompt="Project rules: be terse.")
        harness.push(Reply("first"), Reply("second"))
        client.send(BIG_CONTEXT, "one")
        client.send(BIG_CONTEXT, "two")
        state = _cache_state(make_controller(), list(harness.entries))
        second, first = state["requests"]  # newest first
        assert first["provider"] == second["provider"] == "anthropic"
        assert first["cache_write_tokens"] > 0 and not first["hit"]
        assert second["hit"] and second["cache_read_tokens"] > 0 and second["read_share"] > 0.5
        totals = state["providers"]["anthropic"]
        assert totals["requests"] == 2 and totals["hits"] == 1 and totals["hit_rate"] == 0.5
        assert totals["cache_read_tokens"] == second["cache_read_tokens"]
        assert state["contents"] == []
    finally:
        harness.close()
