"""The client's own behaviour, on the DeepSeek fake (quick) unless a test says otherwise:
fallback, the keyless default, round limits, the output budget, truncation, context
refresh, RAG, tier tags, events, helpers, the send lock and settings."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from manual_slop.ai import MAX_TOOL_ROUNDS, AIClient, ProviderError, set_current_tier
from manual_slop.ai.errors import ConfigurationError
from manual_slop.ai.tool_loop import BUDGET_WARNING
from manual_slop.config import Secret
from tests.fakes import Call, Fail, FakeLlamaServer, Reply
from tests.fakes.openai import raw_tool_call_reply
from tests.integration.ai.harness import HttpHarness, approve_all, make_harness, make_registry


@pytest.fixture
def deepseek(tmp_path: Path):
    harness = make_harness("deepseek", tmp_path)
    assert isinstance(harness, HttpHarness)
    try:
        yield harness
    finally:
        harness.close()


def tool_choices(harness: HttpHarness) -> list[str | None]:
    return [b.get("tool_choice") for b in harness.bodies()]


# ======================================================================================
# fallback and the keyless default
# ======================================================================================
def test_fallback_moves_to_the_next_provider_after_retries(deepseek: HttpHarness, tmp_path: Path) -> None:
    backup = make_harness("anthropic", tmp_path / "backup")
    try:
        deepseek.push(*[Fail(503) for _ in range(4)])
        backup.push(Reply("the backup answered"))
        client = deepseek.client(fallback=["anthropic"])
        client.configure(provider="anthropic", base_url=backup.fake.base_url, api_key="backup-key")
        assert client.send("", "hello") == "the backup answered"
        assert len(deepseek.fake.model_calls()) == 4  # the first try and three retries, then on
        fallback = [e for e in deepseek.entries if e["kind"] == "fallback"]
        assert fallback[0]["payload"]["from"] == "deepseek" and fallback[0]["payload"]["to"] == "anthropic"
        assert "HTTP 503" in fallback[0]["payload"]["reason"]
        assert any("falling back to anthropic" in message for _, message in deepseek.notices)
        assert deepseek.entries[-1]["provider"] == "anthropic"
    finally:
        backup.close()


def test_when_every_provider_fails_the_last_error_is_raised(deepseek: HttpHarness) -> None:
    deepseek.push(Fail(401))
    llama = FakeLlamaServer([])  # the local fallback has nothing scripted either
    client = AIClient(registry=make_registry(deepseek.naps), local_engine_factory=lambda **kw: llama)
    client.set_provider("deepseek")
    client.configure(base_url=deepseek.fake.base_url, api_key="k", fallback=["local"])
    with pytest.raises(ProviderError) as caught:
        client.send("", "hi")
    assert caught.value.provider == "local"


def test_without_any_key_the_local_model_answers_and_the_user_is_told() -> None:
    llama = FakeLlamaServer(["I am the local model."])
    client = AIClient(local_engine_factory=lambda **kw: llama)
    notices: list[tuple[str, str]] = []
    client.notify_callback = lambda level, message: notices.append((level, message))
    client.set_provider("anthropic")
    assert client.send("", "hi", enable_tools=False) == "I am the local model."
    assert notices and notices[0][0] == "warning" and "using the local offline model" in notices[0][1]


def test_a_missing_key_for_the_active_provider_is_an_auth_error_when_others_have_keys() -> None:
    client = AIClient()
    client.set_provider("anthropic")
    client.configure(provider="gemini", api_key="gemini-key")
    with pytest.raises(ProviderError) as caught:
        client.send("", "hi")
    assert caught.value.kind == "auth" and "ANTHROPIC_API_KEY" in caught.value.ui_message()


# ======================================================================================
# the tool loop's limits
# ======================================================================================
def test_ten_tool_rounds_then_grace_rounds_force_a_final_answer(deepseek: HttpHarness) -> None:
    deepseek.push(*[Reply("", [Call("echo", {"text": f"r{n}"})]) for n in range(MAX_TOOL_ROUNDS + 2)])
    deepseek.push(Reply("final answer at last"))
    client = deepseek.client()
    answer = client.send("", "loop", pre_tool_callback=approve_all)
    # a forced answer is reported as one, never passed off as a normal answer
    assert answer.startswith("final answer at last\n\n[stopped at the limit of 10 tool rounds")
    assert answer.limit == "round_limit"
    assert [e["payload"]["kind"] for e in deepseek.entries if e["kind"] == "guard"] == ["round_limit"]
    executed = [e for e in deepseek.tool_entries if e["tool"] == "echo"]
    assert len(executed) == MAX_TOOL_ROUNDS  # the grace rounds run nothing
    choices = tool_choices(deepseek)
    assert choices == ["auto"] * (MAX_TOOL_ROUNDS) + ["none"] * 3
    grace = deepseek.sent()[MAX_TOOL_ROUNDS + 1]
    assert "NOT EXECUTED" in grace and "limit of 10 tool rounds" in grace


def test_a_model_that_never_stops_calling_tools_gets_cut_off(deepseek: HttpHarness) -> None:
    deepseek.push(*[Reply("", [Call("echo", {"text": "again"})]) for _ in range(MAX_TOOL_ROUNDS + 3)])
    answer = deepseek.client().send("", "loop", pre_tool_callback=approve_all)
    assert "kept calling tools" in answer and answer.limit == "round_limit"
    assert len(deepseek.fake.model_calls()) == MAX_TOOL_ROUNDS + 3  # 1 + 10 rounds + 2 grace rounds


def test_the_500kb_budget_warns_and_forces_the_answer(deepseek: HttpHarness) -> None:
    big = "b" * 300_000
    deepseek.push(
        Reply("", [Call("echo", {"text": big})]),
        Reply("", [Call("echo", {"text": big})]),
        Reply("summarised"),
    )
    answer = deepseek.client().send("", "go", pre_tool_callback=approve_all)
    assert answer.startswith("summarised\n\n[stopped at the 500 KB tool output budget")
    assert answer.limit == "output_budget"
    assert tool_choices(deepseek) == ["auto", "auto", "none"]
    assert BUDGET_WARNING in deepseek.sent()[2] and BUDGET_WARNING not in deepseek.sent()[1]


def test_old_tool_outputs_are_truncated_to_history_trunc_limit(deepseek: HttpHarness) -> None:
    deepseek.push(
        Reply("", [Call("echo", {"text": "A" * 5_000})]),
        Reply("", [Call("echo", {"text": "B" * 5_000})]),
        Reply("done"),
    )
    deepseek.client(history_trunc_limit=100).send("", "go", pre_tool_callback=approve_all)
    last = [m for m in deepseek.bodies()[-1]["messages"] if m["role"] == "tool"]
    assert last[0]["content"].startswith("A" * 100) and "truncated" in last[0]["content"]
    assert last[1]["content"] == "B" * 5_000  # the latest round is whole


def test_invalid_json_arguments_come_back_to_the_model_as_an_error(deepseek: HttpHarness) -> None:
    from tests.fakes import Json

    broken = raw_tool_call_reply("echo", "{oops", "call_1")
    deepseek.push(Json(broken), Reply("sorry"))
    assert deepseek.client().send("", "go", pre_tool_callback=approve_all) == "sorry"
    tool = next(m for m in deepseek.bodies()[1]["messages"] if m["role"] == "tool")
    assert tool["tool_call_id"] == "call_1" and "not valid JSON" in tool["content"]
    assert deepseek.tool_entries == []  # nothing ran


def test_unknown_tools_and_bad_arguments_are_answered_by_the_registry(deepseek: HttpHarness) -> None:
    deepseek.push(Reply("", [Call("no_such_tool", {}), Call("echo", {"wrong": 1})]), Reply("ok"))
    deepseek.client().send("", "go", pre_tool_callback=approve_all)
    outputs = [m["content"] for m in deepseek.bodies()[1]["messages"] if m["role"] == "tool"]
    assert "Unknown tool 'no_such_tool'" in outputs[0] and "Parameter validation error" in outputs[1]


def test_tools_disabled_means_no_declarations_and_calls_are_not_run(deepseek: HttpHarness) -> None:
    deepseek.push(Reply("I would call a tool", [Call("echo", {"text": "x"})]))
    assert deepseek.client().send("", "go", enable_tools=False) == "I would call a tool"
    assert "tools" not in deepseek.bodies()[0] and deepseek.tool_entries == []


def test_a_failed_call_gets_the_qa_and_patch_callbacks_opinions(deepseek: HttpHarness) -> None:
    deepseek.push(Reply("", [Call("no_such_tool", {})]), Reply("ok"))
    deepseek.client().send(
        "",
        "go",
        pre_tool_callback=approve_all,
        qa_callback=lambda error: f"QA says: {error[:20]}",
        patch_callback=lambda error, context: f"--- a/x\n+++ b/x\n# for {context}",
    )
    output = next(m["content"] for m in deepseek.bodies()[1]["messages"] if m["role"] == "tool")
    assert "[QA ANALYSIS]\nQA says: Unknown tool" in output and "[SUGGESTED PATCH]" in output
    assert "no_such_tool({})" in output


# ======================================================================================
# context: refresh, RAG, discussion
# ======================================================================================
def test_files_changed_by_a_tool_are_refreshed_into_the_next_request(
    deepseek: HttpHarness, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("old text\n")
    deepseek.push(
        Reply("", [Call("write_note", {"path": "notes.txt", "text": "new text\n"})]),
        Reply("", [Call("echo", {"text": "second round"})]),
        Reply("done"),
    )
    items = [{"path": "notes.txt", "content": "old text\n", "mtime": 1.0}]
    os.utime(project / "notes.txt", (1.0, 1.0))
    deepseek.client().send(
        "", "rewrite the note", base_dir=str(project), file_items=items, pre_tool_callback=approve_all
    )
    second = [m["content"] for m in deepseek.bodies()[1]["messages"] if m["role"] == "tool"]
    assert "[SYSTEM: FILES UPDATED]" in second[-1] and "### notes.txt (full content)" in second[-1]
    assert "new text" in second[-1]
    third = [m["content"] for m in deepseek.bodies()[2]["messages"] if m["role"] == "tool"]
    assert "[SYSTEM: FILES UPDATED]" not in third[0]  # the stale block was stripped from history
    assert "block removed" in third[0] and "[SYSTEM: FILES UPDATED]" not in third[1]


def test_rag_results_reach_the_provider(deepseek: HttpHarness) -> None:
    class Index:
        def query(self, text: str, top_k: int = 5) -> list[dict[str, str]]:
            return [{"text": f"passage about {text}", "source": "docs/x.md"}]

    deepseek.push(Reply("ok"))
    deepseek.client().send("## Files\nA", "caching", rag_engine=Index())
    system = deepseek.bodies()[0]["messages"][0]["content"]
    assert "## Retrieved context" in system and "passage about caching" in system


def test_the_discussion_goes_with_the_first_message_only(deepseek: HttpHarness) -> None:
    deepseek.push(Reply("one"), Reply("two"))
    client = deepseek.client()
    client.send("", "first", discussion_history="User: earlier words")
    client.send("", "second", discussion_history="User: earlier words\n\nAI: one")
    first, second = deepseek.bodies()
    assert "earlier words" in first["messages"][-1]["content"]
    assert second["messages"][-1]["content"] == "second"


# ======================================================================================
# logging, tiers, events
# ======================================================================================
def test_comms_and_tool_entries_carry_the_senders_tier(deepseek: HttpHarness) -> None:
    deepseek.push(Reply("", [Call("echo", {"text": "x"})]), Reply("done"))
    client = deepseek.client()
    done = threading.Event()

    def worker() -> None:
        set_current_tier("Tier 3")
        client.send("", "go", pre_tool_callback=approve_all)
        done.set()

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(20)
    assert done.is_set()
    assert {e["source_tier"] for e in deepseek.entries} == {"Tier 3"}
    assert [e["source_tier"] for e in deepseek.tool_entries] == ["Tier 3"]
    assert deepseek.tool_entries[0]["provider"] == "deepseek"


def test_events_announce_requests_responses_and_tool_runs(deepseek: HttpHarness) -> None:
    deepseek.push(Reply("", [Call("echo", {"text": "x"})]), Reply("done"))
    client = deepseek.client()
    seen: list[tuple[str, dict[str, Any]]] = []
    for name in ("request_start", "response_received", "tool_execution"):
        client.events.on(name, lambda _event=name, **info: seen.append((_event, info)))
    client.send("", "go", pre_tool_callback=approve_all)
    assert [name for name, _ in seen] == [
        "request_start",
        "response_received",
        "tool_execution",
        "request_start",
        "response_received",
    ]
    assert seen[2][1]["name"] == "echo" and seen[2][1]["status"] == "success"
    assert seen[1][1]["provider"] == "deepseek" and "input_tokens" in seen[1][1]["usage"]


def test_sends_from_two_threads_are_serialised(deepseek: HttpHarness) -> None:
    deepseek.push(Reply("a", delay=0.3), Reply("b", delay=0.3))
    client = deepseek.client()
    answers: list[str] = []
    threads = [threading.Thread(target=lambda m=m: answers.append(client.send("", m))) for m in ("x", "y")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert sorted(answers) == ["a", "b"]
    first, second = deepseek.fake.model_calls()
    assert second.ts - first.ts >= 0.3  # the second request waited for the first to finish


# ======================================================================================
# helpers, sessions, settings
# ======================================================================================
def test_text_helpers_use_no_tools_and_leave_the_history_alone(deepseek: HttpHarness) -> None:
    deepseek.push(Reply("main answer"), Reply("summary"), Reply("file summary"), Reply("--- a/x\n+++ b/x"))
    client = deepseek.client()
    client.send("", "main question")
    assert client.run_discussion_compression("User: a\nAI: b") == "summary"
    assert client.run_subagent_summarization("src/x.py", "def f(): pass", True, "f()") == "file summary"
    assert client.run_tier4_patch_generation("AssertionError", "x.py: ...").startswith("--- a/x")
    bodies = deepseek.bodies()
    for body in bodies[1:]:
        assert "tools" not in body
        assert len([m for m in body["messages"] if m["role"] != "system"]) == 1
    assert "Summarise the discussion" in bodies[1]["messages"][0]["content"]
    assert "src/x.py (source file)" in bodies[2]["messages"][-1]["content"]
    assert "unified diff" in bodies[3]["messages"][0]["content"]
    assert [m.text for m in client.history().messages] == ["main question", "main answer"]


def test_reset_session_forgets_the_conversation(deepseek: HttpHarness) -> None:
    deepseek.push(Reply("one"), Reply("two"))
    client = deepseek.client()
    client.send("", "first")
    client.reset_session()
    client.send("", "second")
    assert [m["content"] for m in deepseek.bodies()[1]["messages"] if m["role"] != "system"] == ["second"]


def test_apply_settings_takes_the_controllers_snapshot(deepseek: HttpHarness) -> None:
    deepseek.push(Reply("ok"))
    client = AIClient(registry=make_registry(deepseek.naps))
    client.apply_settings(
        {
            "provider": "deepseek",
            "model": "deepseek-reasoner",
            "base_url": deepseek.fake.base_url,
            "api_key": Secret("from-settings"),
            "temperature": 0.5,
            "top_p": 0.9,
            "max_tokens": 123,
            "history_trunc_limit": 50,
            "system_prompt": "Answer in French.",
            "fallback": ["local"],
            "providers": {"local": {"options": {"model_path": "/models/x.gguf"}}, "bogus": {}},
        }
    )
    assert client.send("", "hi") == "ok"
    body = deepseek.bodies()[0]
    assert (body["model"], body["temperature"], body["top_p"], body["max_tokens"]) == (
        "deepseek-reasoner",
        0.5,
        0.9,
        123,
    )
    assert "Answer in French." in body["messages"][0]["content"]
    assert deepseek.fake.model_calls()[0].header("authorization") == "Bearer from-settings"
    assert client.settings.fallback == ("local",) and client.settings.history_trunc_limit == 50
    assert client.settings.options["local"] == {"model_path": "/models/x.gguf"}
    assert "from-settings" not in json.dumps(deepseek.entries, default=str)  # never logged


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"temperature": 3}, "temperature"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"fallback": ["nope"]}, "unknown provider 'nope'"),
    ],
)
def test_bad_settings_are_refused_with_the_setting_named(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        AIClient().configure(**change)
    with pytest.raises(ConfigurationError, match="unknown provider"):
        AIClient().set_provider("gpt-99")


def test_a_minimax_temperature_of_zero_is_sent_as_its_smallest_allowed_value(tmp_path: Path) -> None:
    harness = make_harness("minimax", tmp_path)
    try:
        harness.push(Reply("ok"))
        harness.client().send("", "hi")
        assert harness.bodies()[0]["temperature"] == 0.01
    finally:
        harness.close()


def test_unknown_fallback_names_in_the_config_are_ignored_with_a_warning() -> None:
    client = AIClient()
    notices: list[tuple[str, str]] = []
    client.notify_callback = lambda level, message: notices.append((level, message))
    client.apply_settings({"provider": "local", "fallback": ["Anthropic", "gpt-99", "local"]})
    assert client.settings.fallback == ("anthropic", "local")
    assert notices == [("warning", "ai.fallback: unknown provider(s) gpt-99 ignored")]
