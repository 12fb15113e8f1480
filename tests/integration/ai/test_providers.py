"""Every provider, through its real SDK or transport, against its wire-level fake.

The same behaviours for each provider: a plain reply; a two-round tool loop whose calls
run concurrently; a rejected call the model hears about; streamed chunks in order;
trimming that keeps tool calls with their outputs; error classification; retries.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from manual_slop.ai import ErrorKind, ProviderError
from manual_slop.ai.errors import ConfigurationError
from tests.fakes import Call, Fail, Hang, Json, Raw, Reply, Truncated, overloaded, rate_limited, server_error
from tests.integration.ai.harness import (
    NO_RETRY,
    Harness,
    HttpHarness,
    approve_all,
    make_harness,
    reject_all,
)


def kinds(harness: Harness) -> list[str]:
    return [e["kind"] for e in harness.entries]


# ======================================================================================
# the same behaviour from every provider
# ======================================================================================
def test_plain_reply(harness: Harness) -> None:
    harness.push(Reply("Hello from the fake."))
    client = harness.client()
    assert client.send("## Context\nnothing yet", "Say hello") == "Hello from the fake."
    sent = harness.sent()
    assert len(sent) == 1 and "Say hello" in sent[0] and "nothing yet" in sent[0]
    assert kinds(harness) == ["request", "response"]
    assert {e["provider"] for e in harness.entries} == {harness.name}
    assert harness.entries[1]["payload"]["text"] == "Hello from the fake."
    assert client.get_token_usage()["input_tokens"] > 0


def test_two_round_tool_loop_runs_the_calls_of_a_round_concurrently(harness: Harness) -> None:
    harness.push(
        Reply("Napping twice.", [Call("nap", {"label": "a"}), Call("nap", {"label": "b"})]),
        Reply("", [Call("nap", {"label": "c"})]),
        Reply("All naps done."),
    )
    client = harness.client()
    assert client.send("", "take three naps", pre_tool_callback=approve_all) == "All naps done."
    sent = harness.sent()
    assert len(sent) == 3
    assert "napped a" in sent[1] and "napped b" in sent[1]  # round 1's outputs reached the model
    assert "napped c" in sent[2]
    spans = {label: (start, end) for label, start, end in harness.naps.spans}
    assert set(spans) == {"a", "b", "c"}
    # a and b overlapped in time: each started before the other ended
    assert spans["a"][0] < spans["b"][1] and spans["b"][0] < spans["a"][1]
    assert spans["c"][0] >= max(spans["a"][1], spans["b"][1])  # round 2 came after round 1
    assert [e["tool"] for e in harness.tool_entries].count("nap") == 3
    assert kinds(harness).count("tool_result") == 3
    assert [e["payload"]["status"] for e in harness.entries if e["kind"] == "tool_result"] == ["success"] * 3


def test_a_rejected_call_is_reported_to_the_model(harness: Harness, tmp_path) -> None:
    harness.push(
        Reply("", [Call("write_note", {"path": "note.txt", "text": "hi"})]),
        Reply("Understood, I will not write it."),
    )
    client = harness.client()
    answer = client.send("", "write a note", base_dir=str(tmp_path), pre_tool_callback=reject_all)
    assert answer == "Understood, I will not write it."
    assert not (tmp_path / "note.txt").exists()
    assert "REJECTED by user: not today" in harness.sent()[1]
    result = next(e for e in harness.entries if e["kind"] == "tool_result")["payload"]
    assert result["status"] == "rejected"


def test_an_empty_answer_after_tools_is_replaced_by_what_the_tools_did(harness: Harness, tmp_path) -> None:
    from manual_slop.ai.tool_loop import EMPTY_ANSWER

    harness.push(
        Reply("", [Call("write_note", {"path": "note.txt", "text": "hi"})]),
        Reply(""),  # the model says nothing after its tool round
    )
    client = harness.client()
    answer = client.send("", "write a note", base_dir=str(tmp_path), pre_tool_callback=reject_all)
    assert answer.startswith(EMPTY_ANSWER)
    assert "- write_note(path='note.txt', text='hi'): rejected — REJECTED by user: not today" in answer
    assert client.history().messages[-1].text == answer  # the conversation has it too, never ""


def test_streamed_chunks_arrive_in_order(harness: Harness) -> None:
    text = "One, two, three, four, five, six, seven."
    harness.push(Reply(text, chunks=["One, ", "two, three, ", "four, five, ", "six, seven."]))
    chunks: list[str] = []
    client = harness.client()
    assert client.send("", "count", stream_callback=chunks.append) == text
    assert "".join(chunks) == text
    assert len(chunks) >= 3  # it really streamed


def test_compaction_summarizes_older_rounds_and_keeps_every_user_message(harness: Harness) -> None:
    # working memory: 50 % of 1,000 tokens; compaction at 70 % of that (350 tokens, ~1,400 chars)
    client = harness.client(memory_budget_tokens=1_000)
    for n in range(4):
        summary = [Reply(f"summary {n}: echo printed out{n - 1}")] if n else []  # the sub-call's answer
        harness.push(
            *summary, Reply("", [Call("echo", {"text": f"out{n} " + "x" * 1_500})]), Reply(f"answer {n}")
        )
        assert client.send("", f"question {n}", pre_tool_callback=approve_all) == f"answer {n}"
    compacted = [
        e["payload"]
        for e in harness.entries
        if e["kind"] == "history" and "compacted_messages" in e["payload"]
    ]
    assert len(compacted) == 3, compacted
    assert all(c["tokens_after"] < c["tokens_before"] for c in compacted)
    conversation = client.history()
    assert conversation.messages[0].role == "user"
    final = "\n".join(harness.sent()[-2:])  # the last exchange (the Gemini CLI resumes its session)
    for n in range(4):
        assert f"question {n}" in final  # every user message, verbatim
    assert "summary 3" in final and "summary 2" not in final  # only the latest summary
    assert "out0 xxx" not in final and "out3 xxx" in final  # tool results of summarized rounds dropped
    if harness.name != "gemini_cli":  # (its last call resumes the session with the results alone)
        check_pairs(harness.name, harness.sent()[-1])


def test_history_is_cut_to_the_window_when_compaction_cannot_fold_it(harness: Harness) -> None:
    # a memory budget far above the provider's window: compaction never starts, so the history
    # must still be cut to max_prompt_tokens before it reaches the provider
    client = harness.client(memory_budget_tokens=100_000, max_prompt_tokens=800)
    for n in range(3):
        harness.push(Reply("", [Call("echo", {"text": f"out{n} " + "x" * 1_500})]), Reply(f"answer {n}"))
        assert client.send("", f"question {n}", pre_tool_callback=approve_all) == f"answer {n}"
    trims = [
        e["payload"] for e in harness.entries if e["kind"] == "history" and "trimmed_messages" in e["payload"]
    ]
    assert trims and all(t["budget_tokens"] == 800 for t in trims)
    kept = "\n".join(m.text for m in client.history().messages)
    assert "question 0" not in kept and "question 2" in kept  # the oldest exchange left, the latest kept


def test_errors_are_classified(harness: Harness) -> None:
    for turn, kind, status in ERRORS[harness.name]:
        harness.push(turn)
        client = harness.client(retry=NO_RETRY, timeout_s=0.5 if isinstance(harness, HttpHarness) else None)
        with pytest.raises(ProviderError) as caught:
            client.send("", "hi")
        error = caught.value
        assert (error.kind, error.status) == (kind, status), f"{turn!r}: {error!r}"
        assert error.provider == harness.name
        assert error.ui_message().startswith(f"[{harness.name.upper()} ")


def test_a_rate_limit_is_retried_after_retry_after(http_harness: HttpHarness) -> None:
    http_harness.push(rate_limited(0.2), server_error(503), Reply("third time lucky"))
    client = http_harness.client()
    assert client.send("", "hi") == "third time lucky"
    retries = [e["payload"] for e in http_harness.entries if e["kind"] == "retry"]
    assert [r["status"] for r in retries] == [429, 503]
    assert retries[0]["delay_s"] == pytest.approx(0.2)  # the server's Retry-After
    calls = http_harness.fake.model_calls()
    assert len(calls) == 3 and calls[1].ts - calls[0].ts >= 0.2


def test_retries_stop_after_three(http_harness: HttpHarness) -> None:
    http_harness.push(*[server_error(500) for _ in range(5)])
    client = http_harness.client()
    with pytest.raises(ProviderError) as caught:
        client.send("", "hi")
    assert caught.value.status == 500
    assert len(http_harness.fake.model_calls()) == 4  # the first try and three retries


def test_an_auth_error_is_not_retried(http_harness: HttpHarness) -> None:
    http_harness.push(Fail(401), Reply("never"))
    with pytest.raises(ProviderError) as caught:
        http_harness.client().send("", "hi")
    assert caught.value.kind is ErrorKind.AUTH
    assert len(http_harness.fake.model_calls()) == 1


def test_a_stream_cut_short_is_retried_and_the_reader_told(http_harness: HttpHarness) -> None:
    http_harness.push(Truncated(Reply("a long answer " * 20)), Reply("complete answer"))
    chunks: list[str] = []
    client = http_harness.client()
    assert client.send("", "hi", stream_callback=chunks.append) == "complete answer"
    streamed = "".join(chunks)
    assert streamed.endswith("complete answer")
    if "retrying" in streamed:  # partial text reached the reader before the cut
        assert streamed.index("retrying") < streamed.index("complete answer")


# ======================================================================================
# error tables
# ======================================================================================
U, R, A, B, N, Q = (
    ErrorKind.UNKNOWN,
    ErrorKind.RATE_LIMIT,
    ErrorKind.AUTH,
    ErrorKind.BALANCE,
    ErrorKind.NETWORK,
    ErrorKind.QUOTA,
)
COMMON_HTTP = [
    (rate_limited(None), R, 429),
    (Fail(401), A, 401),
    (Fail(403), A, 403),
    (server_error(500), U, 500),
    (Hang(3), N, None),
    (Truncated(Reply("x" * 5_000)), N, None),
]
_GEMINI_DAILY = {
    "error": {
        "code": 429,
        "status": "RESOURCE_EXHAUSTED",
        "message": "quota",
        "details": [
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [{"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}],
            }
        ],
    }
}
_GEMINI_BAD_KEY = {
    "error": {
        "code": 400,
        "status": "INVALID_ARGUMENT",
        "message": "API key not valid",
        "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}],
    }
}
ERRORS: dict[str, list[tuple[Any, ErrorKind, int | None]]] = {
    "gemini": [
        *COMMON_HTTP,
        (Fail(429, _GEMINI_DAILY), Q, 429),
        (Fail(400, _GEMINI_BAD_KEY), A, 400),
        (Raw("<html>proxy error</html>"), U, None),
    ],
    "anthropic": [
        *COMMON_HTTP,
        (overloaded(), U, 529),
        (Fail(400, {"type": "error", "error": {"type": "billing_error", "message": "no credit"}}), B, 400),
        (Raw("<html>proxy error</html>"), U, None),
    ],
    "deepseek": [*COMMON_HTTP, (Fail(402), B, 402), (Raw("<html>proxy error</html>"), U, 200)],
    "minimax": [
        *COMMON_HTTP,
        (Json({"base_resp": {"status_code": 1008, "status_msg": "insufficient balance"}}), B, None),
        (Json({"base_resp": {"status_code": 1002, "status_msg": "rpm limit"}}), R, None),
        (Json({"base_resp": {"status_code": 2049, "status_msg": "invalid api key"}}), A, None),
    ],
    "openai_compatible": [
        *COMMON_HTTP,
        (
            Fail(
                429,
                {"error": {"message": "quota", "type": "insufficient_quota", "code": "insufficient_quota"}},
            ),
            Q,
            429,
        ),
        (Raw("<html>proxy error</html>"), U, 200),
    ],
    "gemini_cli": [(Fail(429), R, 429), (Fail(401), A, 401), (Fail(500), U, 500)],
    "local": [(Fail(500), U, None)],
}


# ======================================================================================
# tool pairs in each wire format
# ======================================================================================
def check_pairs(provider: str, sent: str) -> None:
    """Every tool output in ``sent`` follows the message that made its call."""
    data = json.loads(sent)
    if provider == "anthropic":
        messages = data["messages"]
        assert messages[0]["role"] == "user" and all(
            b["type"] != "tool_result" for b in messages[0]["content"]
        )
        for i, message in enumerate(messages):
            for block in message["content"]:
                if block["type"] == "tool_result":
                    called = {b["id"] for b in messages[i - 1]["content"] if b["type"] == "tool_use"}
                    assert block["tool_use_id"] in called
    elif provider == "gemini":
        contents = data["contents"]
        assert contents[0]["role"] == "user" and "functionResponse" not in contents[0]["parts"][0]
        for i, content in enumerate(contents):
            for part in content["parts"]:
                if "functionResponse" in part:
                    called = {
                        p["functionCall"]["name"] for p in contents[i - 1]["parts"] if "functionCall" in p
                    }
                    assert part["functionResponse"]["name"] in called
    elif provider in ("deepseek", "minimax", "openai_compatible"):
        messages = [m for m in data["messages"] if m["role"] != "system"]
        assert messages[0]["role"] == "user"
        for i, message in enumerate(messages):
            if message["role"] == "tool":
                j = i - 1
                while messages[j]["role"] == "tool":
                    j -= 1
                assert message["tool_call_id"] in {c["id"] for c in messages[j]["tool_calls"]}
    else:  # the XML protocol: <results> answers the <execute> right before it
        if provider == "gemini_cli":  # the history follows the protocol's own description
            argv = data["argv"]
            text = data["stdin"].partition("## Conversation so far")[2] + argv[argv.index("-p") + 1]
        else:
            text = json.dumps([m for m in data["messages"] if m["role"] != "system"])
        assert text.count("<results>") == text.count("<execute>") > 0


# ======================================================================================
# provider specifics
# ======================================================================================
def test_openai_compatible_lists_models_from_v1_models(tmp_path) -> None:
    harness = make_harness("openai_compatible", tmp_path)
    try:
        harness.fake.models = ["llama3.2", "qwen2.5-coder"]
        assert harness.client().list_models() == ["llama3.2", "qwen2.5-coder"]
        assert harness.fake.requests[-1].path == "/v1/models"
    finally:
        harness.close()


@pytest.mark.parametrize("name", ["gemini", "anthropic", "deepseek"])
def test_list_models_of_sdk_and_http_providers(name: str, tmp_path) -> None:
    harness = make_harness(name, tmp_path)
    try:
        models = harness.client().list_models()
        assert models == sorted(harness.fake.models)
    finally:
        harness.close()


def test_the_gemini_cli_resumes_its_session_and_logs_every_call(tmp_path) -> None:
    harness = make_harness("gemini_cli", tmp_path)
    harness.push(Reply("first answer"), Reply("", [Call("nap", {"label": "x"})]), Reply("second answer"))
    client = harness.client()
    assert client.send("## Context\nfiles here", "first question") == "first answer"
    assert (
        client.send("## Context\nfiles here", "second question", pre_tool_callback=approve_all)
        == "second answer"
    )
    calls = harness.cli.calls()
    assert len(calls) == 3
    first, second, third = (c["argv"] for c in calls)
    assert "--resume" not in first and "files here" in calls[0]["stdin"] and "first question" in first
    session = harness.cli.flag(second, "--resume")
    assert session and session.startswith("mock-") and harness.cli.flag(third, "--resume") == session
    assert calls[1]["stdin"] == "" and harness.cli.flag(second, "-p") == "second question"
    assert "<results>" in harness.cli.flag(third, "-p") and "napped x" in harness.cli.flag(third, "-p")
    assert [c["exit_code"] for c in harness.cli_calls] == [0, 0, 0]
    assert {"command", "stdin", "stdout", "stderr", "latency_ms"} <= set(harness.cli_calls[0])
    assert '"type": "init"' in harness.cli_calls[0]["stdout"]


def test_tools_the_gemini_cli_runs_itself_are_logged(tmp_path) -> None:
    from tests.fakes import cli_turn

    harness = make_harness("gemini_cli", tmp_path)
    harness.cli.push(
        cli_turn("listed", tool_uses=[{"name": "list_directory", "args": {"path": "."}, "output": "a b"}])
    )
    assert harness.client().send("", "list") == "listed"
    used = [e["payload"] for e in harness.entries if e["kind"] in ("tool_call", "tool_result")]
    assert [p["executed_by"] for p in used] == ["gemini_cli", "gemini_cli"]
    assert used[0]["name"] == "list_directory" and used[1]["output"] == "a b"


def test_a_missing_gemini_cli_says_where_it_looked(tmp_path) -> None:
    harness = make_harness("gemini_cli", tmp_path)
    client = harness.client(binary=str(tmp_path / "no-such-gemini"))
    with pytest.raises(ProviderError) as caught:
        client.send("", "hi")
    assert "no-such-gemini" in caught.value.ui_message() and not caught.value.retryable


def test_the_local_provider_reports_a_missing_model_file(tmp_path) -> None:
    harness = make_harness("local", tmp_path)
    client = harness.client(model_path=str(tmp_path / "missing.gguf"))
    with pytest.raises(ConfigurationError, match=r"missing\.gguf"):
        client.send("", "hi")


def test_the_local_provider_stops_generating_when_an_execute_block_closes(tmp_path) -> None:
    harness = make_harness("local", tmp_path)
    assert hasattr(harness, "llama")
    harness.llama.push(
        'Let me look. <execute>[{"name": "echo", "args": {"text": "</execute> inside a string"}}]</execute>'
        " and then I invent <results>[]</results>",
        "It said so.",
    )
    chunks: list[str] = []
    answer = harness.client().send("", "go", pre_tool_callback=approve_all, stream_callback=chunks.append)
    assert answer == "It said so."
    assert harness.llama.stopped_early == 1  # the rest of the first turn was never generated
    assert "<execute>" not in "".join(chunks) and "Let me look." in "".join(chunks)
    assert "</execute> inside a string" in json.dumps(harness.llama.requests[1])  # the echo output


def test_a_malformed_execute_block_is_sent_back_as_an_error(tmp_path) -> None:
    harness = make_harness("local", tmp_path)
    harness.llama.push('<execute>[{"name": "echo", "args": {"text": oops}]</execute>', "Fixed it.")
    assert harness.client().send("", "go", pre_tool_callback=approve_all) == "Fixed it."
    second = json.dumps(harness.llama.requests[1])
    assert "not valid JSON" in second and "write the block again" in second


def test_every_provider_falls_back_when_it_fails(harness: Harness, tmp_path) -> None:
    backup_name = "deepseek" if harness.name == "local" else "local"
    backup = make_harness(backup_name, tmp_path / "backup")
    try:
        harness.push(Fail(401))
        backup.push(Reply("from the backup"))
        client = harness.client(fallback=[backup_name])
        client.configure(provider=backup_name, **backup.configure_options())
        if backup_name == "local":
            client._local_engine_factory = backup.client_options()["local_engine_factory"]
        assert client.send("", "hi") == "from the backup"
        moves = [e["payload"] for e in harness.entries if e["kind"] == "fallback"]
        assert moves[0]["from"] == harness.name and moves[0]["to"] == backup_name
    finally:
        backup.close()


@pytest.mark.parametrize("name", ["gemini_cli", "gemini", "anthropic", "deepseek"])
def test_a_transient_failure_is_retried(name: str, tmp_path) -> None:
    harness = make_harness(name, tmp_path)
    try:
        harness.push(Fail(503), Reply("recovered"))
        assert harness.client().send("", "hi") == "recovered"
        assert [e["payload"]["status"] for e in harness.entries if e["kind"] == "retry"] == [503]
    finally:
        harness.close()


def test_gemini_works_on_the_v1_api_too(tmp_path) -> None:
    harness = make_harness("gemini", tmp_path)
    try:
        harness.push(Reply("v1 answer"))
        assert harness.client(api_version="v1").send("", "hi") == "v1 answer"
        assert harness.fake.model_calls()[0].path.startswith("/v1/models/")
    finally:
        harness.close()
