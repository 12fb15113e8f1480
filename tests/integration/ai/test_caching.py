"""Provider caching as the fake servers saw it: Anthropic's breakpoints, Gemini's CachedContent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from manual_slop.ai.providers.anthropic import CHUNK_CHARS
from manual_slop.ai.providers.gemini import CACHE_TTL_S
from tests.fakes import AnthropicFake, Call, GeminiFake, Json, Reply
from tests.integration.ai.harness import approve_all, make_harness

BIG_CONTEXT = "## Files\n" + "def function_number_n(): return 42\n" * 8_000  # ~280,000 chars


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


# ======================================================================================
# Anthropic: four breakpoints
# ======================================================================================
def test_anthropic_places_the_four_breakpoints(tmp_path: Path) -> None:
    harness = make_harness("anthropic", tmp_path)
    assert isinstance(harness.fake, AnthropicFake)
    try:
        client = harness.client(system_prompt="Project rules: be terse.")
        harness.push(
            Reply("first"), Reply("", [Call("nap", {"label": "a"})]), Reply("second"), Reply("third")
        )
        client.send(BIG_CONTEXT, "one")
        client.send(BIG_CONTEXT, "two", pre_tool_callback=approve_all)
        client.send(BIG_CONTEXT, "three")
        bodies = harness.bodies()
        last = bodies[-1]
        chunks = [b for b in last["system"][1:]]
        assert len(chunks) == -(-len(BIG_CONTEXT) // CHUNK_CHARS) == 3
        assert all(len(b["text"]) <= CHUNK_CHARS for b in chunks)
        user_indexes = [i for i, m in enumerate(last["messages"]) if m["role"] == "user"]
        second_to_last_user = user_indexes[-2]
        last_block = len(last["messages"][second_to_last_user]["content"]) - 1
        assert AnthropicFake.breakpoints(last) == [
            "system[0]",  # the stable system prompt
            f"system[{len(last['system']) - 1}]",  # the last context chunk
            f"tools[{len(last['tools']) - 1}]",  # the last tool definition
            f"messages[{second_to_last_user}].content[{last_block}]",  # the conversation so far
        ]
        for body in bodies:
            assert len(AnthropicFake.breakpoints(body)) <= 4  # old breakpoints never pile up
        usage = [e["payload"]["usage"] for e in harness.entries if e["kind"] == "response"]
        assert usage[0]["cache_write_tokens"] > 0 and usage[0]["cache_read_tokens"] == 0
        assert usage[-1]["cache_read_tokens"] > 0  # the fake served the prefix from its cache
    finally:
        harness.close()


# ======================================================================================
# Gemini: CachedContent create / reuse / rebuild / delete
# ======================================================================================
class GeminiSetup:
    """The Gemini harness with a clock the test moves."""

    def __init__(self, tmp_path: Path) -> None:
        self.harness = make_harness("gemini", tmp_path)
        assert isinstance(self.harness.fake, GeminiFake)
        self.fake: GeminiFake = self.harness.fake
        self.clock = FakeClock()
        self.harness.client_options = lambda: {"clock": self.clock}  # type: ignore[method-assign]


@pytest.fixture
def gemini(tmp_path: Path) -> Iterator[GeminiSetup]:
    setup = GeminiSetup(tmp_path)
    try:
        yield setup
    finally:
        setup.harness.close()


def test_gemini_caches_a_large_context_and_reuses_it(gemini: GeminiSetup) -> None:
    harness, fake = gemini.harness, gemini.fake
    client = harness.client()
    harness.push(Reply("one"), Reply("two"))
    client.send(BIG_CONTEXT, "first", file_items=[{"path": "src/app.py", "content": "x", "mtime": 1.0}])
    client.send(BIG_CONTEXT, "second")
    assert [action for action, _ in fake.cache_log] == ["create"]
    name = fake.cache_log[0][1]
    for body in harness.bodies():
        assert body["cachedContent"] == name
        assert "systemInstruction" not in body and "tools" not in body  # they live in the cache
    cached = fake.caches[name]["body"]
    assert "function_number_n" in str(cached["systemInstruction"]) and cached["ttl"] == f"{CACHE_TTL_S}s"
    assert cached["tools"][0]["functionDeclarations"]
    info = client.cache_info()["gemini"]
    assert info["name"] == name and info["file_paths"] == ["src/app.py"]
    assert [e["kind"] for e in harness.entries].count("cache_created") == 1


def test_gemini_rebuilds_the_cache_when_the_context_changes(gemini: GeminiSetup) -> None:
    harness, fake = gemini.harness, gemini.fake
    client = harness.client()
    harness.push(Reply("one"), Reply("two"))
    client.send(BIG_CONTEXT, "first")
    client.send(BIG_CONTEXT + "\n# one more line", "second")
    assert [action for action, _ in fake.cache_log] == ["create", "delete", "create"]
    assert fake.cache_log[1][1] == fake.cache_log[0][1]  # the old one went
    assert harness.bodies()[1]["cachedContent"] == fake.cache_log[2][1]
    deleted = [e["payload"] for e in harness.entries if e["kind"] == "cache_deleted"]
    assert deleted[0]["reason"] == "content changed"


def test_gemini_renews_the_cache_at_ninety_percent_of_its_ttl(gemini: GeminiSetup) -> None:
    harness, fake, clock = gemini.harness, gemini.fake, gemini.clock
    client = harness.client()
    harness.push(Reply("one"), Reply("two"), Reply("three"))
    client.send(BIG_CONTEXT, "first")
    clock.now += CACHE_TTL_S * 0.9 - 1
    client.send(BIG_CONTEXT, "second")
    assert [action for action, _ in fake.cache_log] == ["create"]  # still young enough
    clock.now += 2
    client.send(BIG_CONTEXT, "third")
    assert [action for action, _ in fake.cache_log] == ["create", "delete", "create"]
    deleted = [e["payload"] for e in harness.entries if e["kind"] == "cache_deleted"]
    assert "90%" in deleted[0]["reason"]


def test_gemini_sends_a_small_context_inline(gemini: GeminiSetup) -> None:
    harness, fake = gemini.harness, gemini.fake
    client = harness.client()
    harness.push(Reply("one"))
    client.send("## Files\nsmall", "first")
    assert fake.cache_log == []
    body = harness.bodies()[0]
    assert "small" in str(body["systemInstruction"]) and "cachedContent" not in body


def test_cleanup_and_reset_delete_the_gemini_cache(gemini: GeminiSetup) -> None:
    harness, fake = gemini.harness, gemini.fake
    client = harness.client()
    harness.push(Reply("one"), Reply("two"))
    client.send(BIG_CONTEXT, "first")
    client.reset_session()
    assert [action for action, _ in fake.cache_log] == ["create", "delete"] and fake.caches == {}
    client.send(BIG_CONTEXT, "again")
    client.cleanup()
    assert [action for action, _ in fake.cache_log] == ["create", "delete", "create", "delete"]
    assert fake.caches == {}
    assert client.cache_info() == {}


def test_a_failed_cache_creation_falls_back_to_inline_context(gemini: GeminiSetup) -> None:
    harness, fake = gemini.harness, gemini.fake
    client = harness.client()
    harness.push(Reply("one"))
    original = fake._caches

    def refuse(request, cache_id, body):  # the service refuses to cache (e.g. model without caching)
        from tests.fakes.http import Response

        if request.method == "POST":
            return Response(400, fake.error_body(400, "caching not supported for this model"))
        return original(request, cache_id, body)

    fake._caches = refuse  # type: ignore[method-assign]
    assert client.send(BIG_CONTEXT, "first") == "one"
    body = harness.bodies()[0]
    assert "cachedContent" not in body and "function_number_n" in str(body["systemInstruction"])
    assert any(e["kind"] == "cache_error" for e in harness.entries)


def test_the_gemini_chat_grows_its_history_and_is_rebuilt_when_history_changes(
    gemini: GeminiSetup,
) -> None:
    harness = gemini.harness
    client = harness.client(history_trunc_limit=10)
    harness.push(Reply("", [Call("echo", {"text": "y" * 200})]), Reply("one"), Reply("two"), Reply("three"))
    client.send("", "first", pre_tool_callback=approve_all)
    client.send("", "second")
    contents = [len(b["contents"]) for b in harness.bodies()]
    # the SDK chat re-sends its history each call; the history grows turn by turn
    assert contents == [1, 3, 5]
    third = harness.bodies()[2]["contents"]
    assert "truncated" in str(third[2])  # the old echo output was cut to history_trunc_limit
    client.history().messages.pop(0)  # history changed behind the chat's back ...
    client.history().repair()
    client.send("", "third")
    assert harness.bodies()[-1]["contents"][0]["parts"][0]["text"] == "second"  # ... so it was rebuilt


def test_gemini_sends_thought_parts_back_unchanged_and_reads_usage(gemini: GeminiSetup) -> None:
    """A thought part and its signature go back in the next request exactly as they came (the API
    refuses a function call turn without them); the reply's usage reaches the client."""
    harness = gemini.harness
    client = harness.client()
    thought = {"text": "planning", "thought": True, "thoughtSignature": "c2lnbmF0dXJlLTE="}
    answer = {"text": "the answer", "thoughtSignature": "c2lnLTI="}
    reply = {
        "candidates": [{"content": {"role": "model", "parts": [thought, answer]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 41, "candidatesTokenCount": 7, "cachedContentTokenCount": 3},
        "modelVersion": "gemini-2.5-flash",
        "someFieldNewerThanTheSdk": {"ignored": True},
    }
    harness.push(Json(reply), Reply("two"))
    assert client.send("", "first") == "the answer"  # the thought is not part of the answer
    usage = client.last_usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (41, 7, 3)
    assert client.send("", "second") == "two"
    model_turn = harness.bodies()[1]["contents"][1]
    assert model_turn == {"role": "model", "parts": [thought, answer]}


def test_anthropic_sends_thinking_blocks_back_unchanged_and_reads_usage(tmp_path: Path) -> None:
    """The reply is read from its raw body: thinking blocks go back as they came, a block type the
    client does not know is left out, and the usage (with cache counts) reaches the client."""
    harness = make_harness("anthropic", tmp_path)
    try:
        client = harness.client()
        thinking = {"type": "thinking", "thinking": "plan it", "signature": "sig-1"}
        redacted = {"type": "redacted_thinking", "data": "opaque"}
        reply = {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
            "content": [thinking, redacted, {"type": "text", "text": "the answer", "citations": None},
                        {"type": "some_future_block", "x": 1}],
            "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 41, "output_tokens": 7, "cache_read_input_tokens": 3,
                      "cache_creation_input_tokens": None},
        }  # fmt: skip
        harness.push(Json(reply), Reply("two"))
        assert client.send("", "first") == "the answer"
        usage = client.last_usage
        assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (41, 7, 3)
        assert usage.cache_write_tokens == 0  # null counts as none
        assert client.send("", "second") == "two"
        sent = harness.bodies()[1]["messages"][1]
        assert sent == {
            "role": "assistant",
            "content": [thinking, redacted, {"type": "text", "text": "the answer"}],
        }
    finally:
        harness.close()
