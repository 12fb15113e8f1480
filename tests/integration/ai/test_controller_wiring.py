"""The AI client as the controller's backend: Gen + Send end to end, streaming into the
response view, comms and tool entries in the views, approvals through the Execution
Clutch, the model list, and the keyless local default."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from manual_slop.ai import AIClient, RetryPolicy
from tests.fakes import Call, Fail, FakeLlamaServer, OpenAIFake, Reply
from tests.helpers import pump_until


@pytest.fixture
def fake() -> Iterator[OpenAIFake]:
    with OpenAIFake() as server:
        yield server


def deepseek_controller(make_controller, app_dir: Path, fake: OpenAIFake, **kwargs):
    (app_dir / "hello.txt").write_text("hi from the file\n")
    client = AIClient(retry=RetryPolicy(base_delay_s=0.01))
    ctrl = make_controller(backend=client, environ={"DEEPSEEK_API_KEY": "sk-deepseek-secret"}, **kwargs)
    ctrl.fields.set("current_provider", "deepseek")
    ctrl.fields.set("provider_base_url", fake.base_url)
    ctrl.fields.set("project_files", ["hello.txt", "out.txt"])
    return ctrl, client


def send(ctrl, text: str) -> str:
    ctrl.fields.set("ai_input", text)
    ctrl.actions.invoke("btn_gen_send")
    return ctrl.state.active_request_id


def test_gen_send_streams_logs_and_runs_tools(make_controller, app_dir: Path, fake: OpenAIFake) -> None:
    ctrl, _client = deepseek_controller(make_controller, app_dir, fake)
    answer = "The file says hi, twice over."
    fake.push(
        Reply("", [Call("read_file", {"path": "hello.txt"})]),
        Reply(answer, chunks=["The file ", "says hi, ", "twice over."], chunk_delay=0.02),
    )
    request_id = send(ctrl, "what does hello.txt say?")
    pump_until(ctrl, lambda: ctrl.state.ai_status in ("done", "error"), timeout=20)
    assert ctrl.state.ai_status == "done", ctrl.state.ai_response
    assert ctrl.state.ai_response == answer
    assert ctrl.request_status(request_id)["response"] == answer
    assert "hi from the file" in str(fake.model_calls()[1].body)
    events = ctrl.journal.read(0, limit=10_000)[0]
    chunks = [e.payload for e in events if e.type == "ai_stream_chunk"]
    assert [c["seq"] for c in chunks] == list(range(len(chunks))) and "".join(
        c["text"] for c in chunks
    ) == answer
    comms = ctrl.state.comms_log
    assert [e["kind"] for e in comms][:4] == ["request", "response", "tool_call", "tool_result"]
    assert [e["seq"] for e in comms] == sorted(e["seq"] for e in comms)
    assert {e["provider"] for e in comms} == {"deepseek"}
    tool = ctrl.state.tool_calls[0]
    assert (tool["tool"], tool["status"], tool["provider"]) == ("read_file", "success", "deepseek")
    logged = (ctrl.session_log.root / "comms.log").read_text()
    assert "tool_result" in logged and "sk-deepseek-secret" not in logged
    assert fake.model_calls()[0].header("authorization") == "Bearer sk-deepseek-secret"


def test_a_mutating_call_waits_for_the_clutch(make_controller, app_dir: Path, fake: OpenAIFake) -> None:
    ctrl, _client = deepseek_controller(make_controller, app_dir, fake)
    fake.push(
        Reply("", [Call("write_file", {"path": "out.txt", "content": "written\n"})]), Reply("Wrote it.")
    )
    send(ctrl, "write out.txt")
    pump_until(ctrl, lambda: bool(ctrl.state.pending_dialogs), timeout=20)
    dialog = ctrl.state.pending_dialogs[0]
    assert dialog["kind"] == "tool_approval" and not (app_dir / "out.txt").exists()
    ctrl.actions.invoke("btn_approve")
    pump_until(ctrl, lambda: ctrl.state.ai_status == "done", timeout=20)
    assert (app_dir / "out.txt").read_text() == "written\n" and ctrl.state.ai_response == "Wrote it."
    audit = (ctrl.session_log.root / "audit.log").read_text()
    assert "write_file" in audit and '"approved": true' in audit


def test_a_rejected_call_is_reported_and_nothing_is_written(
    make_controller, app_dir: Path, fake: OpenAIFake
) -> None:
    ctrl, _client = deepseek_controller(make_controller, app_dir, fake)
    fake.push(Reply("", [Call("write_file", {"path": "out.txt", "content": "no\n"})]), Reply("Fine."))
    send(ctrl, "write out.txt")
    pump_until(ctrl, lambda: bool(ctrl.state.pending_dialogs), timeout=20)
    ctrl.actions.invoke("btn_reject")
    pump_until(ctrl, lambda: ctrl.state.ai_status == "done", timeout=20)
    assert not (app_dir / "out.txt").exists()
    assert "REJECTED by user" in str(fake.model_calls()[1].body)


def test_fetch_models_fills_the_read_only_field(make_controller, app_dir: Path, fake: OpenAIFake) -> None:
    ctrl, _client = deepseek_controller(make_controller, app_dir, fake)
    fake.models = ["deepseek-chat", "deepseek-coder"]
    assert ctrl.fields.get("available_models") == []
    ctrl.actions.invoke("btn_fetch_models")
    pump_until(
        ctrl, lambda: ctrl.fields.get("available_models") == ["deepseek-chat", "deepseek-coder"], timeout=20
    )
    assert ctrl.fields.spec("available_models").read_only
    assert any(e.type == "models" for e in ctrl.journal.read(0, limit=10_000)[0])


def test_a_failed_model_list_is_a_notification(make_controller, app_dir: Path, fake: OpenAIFake) -> None:
    ctrl, _client = deepseek_controller(make_controller, app_dir, fake)
    ctrl.fields.set("provider_base_url", "http://127.0.0.1:9")  # nothing listens there
    ctrl.actions.invoke("btn_fetch_models")
    pump_until(ctrl, lambda: any("model list" in n.message for n in ctrl.state.notifications), timeout=20)
    assert "NETWORK" in ctrl.state.notifications[-1].message


def test_without_keys_the_local_model_answers_and_the_user_is_told(make_controller) -> None:
    llama = FakeLlamaServer(["Offline, but here."])
    ctrl = make_controller(backend=AIClient(local_engine_factory=lambda **kw: llama))
    ctrl.fields.set("current_provider", "anthropic")
    send(ctrl, "hello?")
    pump_until(ctrl, lambda: ctrl.state.ai_status == "done", timeout=20)
    told = "[answered by local / SmolLM2-135M-Instruct: anthropic has no API key]"
    assert ctrl.state.ai_response == f"{told}\n\nOffline, but here."  # in the answer, not only a toast
    assert ctrl.state.ai_answered_by == "local / SmolLM2-135M-Instruct"
    assert ctrl.state.discussion_entries()[-1]["content"].startswith(told)
    status = ctrl.request_status(_last(ctrl))
    assert status["provider"] == "local" and status["model"] == "SmolLM2-135M-Instruct"
    assert status["fallback"] == "anthropic has no API key"
    assert any("local offline model" in n.message for n in ctrl.state.notifications)


def test_the_configured_fallback_chain_is_used(make_controller, app_dir: Path, fake: OpenAIFake) -> None:
    (app_dir / "config.toml").write_text('[ai]\nfallback = ["local"]\n')
    llama = FakeLlamaServer(["The local fallback."])
    client = AIClient(local_engine_factory=lambda **kw: llama)
    ctrl = make_controller(backend=client, environ={"DEEPSEEK_API_KEY": "k"})
    ctrl.fields.set("current_provider", "deepseek")
    ctrl.fields.set("provider_base_url", fake.base_url)
    fake.push(Fail(401))
    send(ctrl, "hello?")
    pump_until(ctrl, lambda: ctrl.state.ai_status == "done", timeout=20)
    assert ctrl.state.ai_response.endswith("\n\nThe local fallback.")
    told = "[answered by local / SmolLM2-135M-Instruct: deepseek failed (auth"
    assert ctrl.state.ai_response.startswith(told)
    assert ctrl.request_status(_last(ctrl))["provider"] == "local"
    assert any(e["kind"] == "fallback" for e in ctrl.state.comms_log)
    assert any("falling back to local" in n.message for n in ctrl.state.notifications)


def test_a_provider_error_reaches_the_response_view_readably(
    make_controller, app_dir: Path, fake: OpenAIFake
) -> None:
    ctrl, _client = deepseek_controller(make_controller, app_dir, fake)
    fake.push(Fail(402))
    send(ctrl, "hello?")
    pump_until(ctrl, lambda: ctrl.state.ai_status == "error", timeout=20)
    assert ctrl.state.ai_response.startswith("[DEEPSEEK BALANCE / BILLING ERROR (HTTP 402)]")


def test_compress_discussion_goes_through_the_clients_text_only_helper(
    make_controller, app_dir: Path, fake: OpenAIFake
) -> None:
    from manual_slop.ai.client import COMPRESSION_PROMPT

    ctrl, _client = deepseek_controller(make_controller, app_dir, fake)
    for text in ("Use TOML for settings?", "Yes: tomllib to read, tomli-w to write."):
        ctrl.actions.invoke("btn_add_entry", {"content": text})
    fake.push(Reply("Decided: TOML (tomllib / tomli-w)."))
    ctrl.actions.invoke("btn_compress_discussion")
    pump_until(ctrl, lambda: ctrl.state.discussion_status == "idle", timeout=20)
    entries = ctrl.fields.get("discussion_entries")
    assert len(entries) == 1 and "Decided: TOML" in entries[0]["content"]
    body = fake.model_calls()[0].body
    sent = str(body)
    assert COMPRESSION_PROMPT[:40] in sent and "tomli-w to write" in sent
    assert "tools" not in body  # text only


def test_an_html_page_instead_of_the_event_stream_is_an_api_error_not_retried(
    make_controller, app_dir: Path, fake: OpenAIFake
) -> None:
    from tests.fakes import Raw

    ctrl, _client = deepseek_controller(make_controller, app_dir, fake)
    fake.push(Raw("<html><body>proxy says hi</body></html>"), Reply("never reached"))
    send(ctrl, "hello")
    pump_until(ctrl, lambda: ctrl.state.ai_status in ("done", "error"), timeout=20)
    assert ctrl.state.ai_status == "error"
    assert (
        "API ERROR" in ctrl.state.ai_response
        and "expected an event stream, got text/html" in ctrl.state.ai_response
    )
    assert len(fake.model_calls()) == 1  # not retried: it is the server's answer, not a broken connection


def _last(ctrl) -> str:
    """The id of the last request (the board keeps them in order)."""
    return ctrl.requests.ids()[-1]


def test_the_local_provider_refuses_a_model_it_does_not_have(make_controller) -> None:
    from manual_slop.automation import InvalidValue

    llama = FakeLlamaServer(["never"])
    ctrl = make_controller(backend=AIClient(local_engine_factory=lambda **kw: llama))
    with pytest.raises(InvalidValue, match=r"no model 'qwen2.5-coder-7b'; installed: SmolLM2-135M-Instruct"):
        ctrl.fields.set("current_model", "qwen2.5-coder-7b")
    assert ctrl.fields.get("current_model") == "SmolLM2-135M-Instruct"
    ctrl.state.current_model = "qwen2.5-coder-7b"  # as a hand-edited config.toml would set it
    send(ctrl, "hello?")
    pump_until(ctrl, lambda: ctrl.state.ai_status == "error", timeout=20)
    assert "no model 'qwen2.5-coder-7b'" in ctrl.state.ai_response and llama.requests == []


def test_one_step_from_the_offline_model_to_a_model_server(make_controller, fake: OpenAIFake) -> None:
    from manual_slop.automation import InvalidValue

    fake.models = ["qwen2.5-coder:7b", "llama3.2"]
    ctrl = make_controller(backend=AIClient(retry=RetryPolicy(base_delay_s=0.01)))
    assert ctrl.state.current_provider == "local"
    with pytest.raises(InvalidValue, match="expected an http\\(s\\) base URL"):
        ctrl.actions.invoke("btn_use_server", "ftp://nowhere")
    assert ctrl.state.current_provider == "local"  # a bad URL changes nothing
    ctrl.actions.invoke("btn_use_server", fake.base_url)
    pump_until(ctrl, lambda: ctrl.fields.get("current_model") == "llama3.2", timeout=20)
    assert ctrl.fields.get("current_provider") == "openai_compatible"
    assert ctrl.fields.get("provider_base_url") == fake.base_url
    assert ctrl.fields.get("available_models") == ["llama3.2", "qwen2.5-coder:7b"]
    fake.push(Reply("From the server."))
    request_id = send(ctrl, "hello?")
    pump_until(ctrl, lambda: ctrl.request_status(request_id)["state"] == "done", timeout=20)
    assert ctrl.request_status(request_id)["model"] == "llama3.2"  # the first of the sorted list


@pytest.mark.parametrize(
    "bad",
    ["javascript:alert(1)", "http://", "http://" + "a" * 3_000, "http://host/" + "p" * 3_000, "http://a b"],
)
def test_a_bad_server_url_changes_nothing(make_controller, bad: str) -> None:
    from manual_slop.automation import InvalidValue

    ctrl = make_controller(backend=AIClient())
    with pytest.raises(InvalidValue, match="expected an http\\(s\\) base URL"):
        ctrl.actions.invoke("btn_use_server", bad)
    assert ctrl.state.current_provider == "local" and ctrl.fields.get("provider_base_url") == ""
    with pytest.raises(InvalidValue):
        ctrl.fields.set("provider_base_url", bad)  # the field refuses the same URLs


def test_gen_send_attaches_the_screenshots_downscaled_and_counts_them(
    make_controller, app_dir: Path, fake: OpenAIFake
) -> None:
    import base64
    import io

    from PIL import Image

    Image.new("RGB", (2000, 1000), "blue").save(app_dir / "ui.png")
    client = AIClient(retry=RetryPolicy(base_delay_s=0.01))
    ctrl = make_controller(backend=client)
    ctrl.fields.set("current_provider", "openai_compatible")
    ctrl.fields.set("provider_base_url", f"{fake.base_url}/v1")
    ctrl.fields.set("screenshots", ["ui.png"])
    ctrl.fields.set("image_max_edge", 1000)
    fake.push(Reply("A blue screen."))
    send(ctrl, "what colour is the screenshot?")
    pump_until(ctrl, lambda: ctrl.state.ai_status in ("done", "error"), timeout=20)
    assert ctrl.state.ai_response == "A blue screen."
    user = fake.model_calls()[0].body["messages"][-1]
    url = next(p["image_url"]["url"] for p in user["content"] if p["type"] == "image_url")
    assert url.startswith("data:image/png;base64,")
    sent = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert sent.size == (1000, 500)  # context.image_max_edge
    pump_until(ctrl, lambda: bool(ctrl.state.context_files), timeout=10)
    shot = next(f for f in ctrl.state.context_files if f["path"] == "ui.png")
    assert shot["kind"] == "image" and shot["tokens"] == 85 + 170 * 2 * 1  # 1000x500: 2 x 1 tiles of 512
    assert ctrl.state.context_tokens > shot["tokens"]
    entries = ctrl.state.discussions[ctrl.state.active_discussion]["history"]
    user = next(e for e in entries if e["content"] == "what colour is the screenshot?")
    assert user["images"] == ["ui.png"]  # the discussion shows the thumbnails of what it sent
    images = next(e for e in ctrl.state.comms_log if e["kind"] == "images")
    assert images["payload"]["sent"] == [
        f"ui.png (image/png, 1000x500, downscaled from 2000x1000, {sent_size(url):,} bytes)"
    ]


def sent_size(url: str) -> int:
    import base64

    return len(base64.b64decode(url.split(",", 1)[1]))
