"""Gen + Send fits the context into the answering model's window: the real AI client, a fake
OpenAI-compatible server that reports its model's window, and the controller's views."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from manual_slop.ai import AIClient, RetryPolicy
from tests.fakes import OpenAIFake, Reply
from tests.helpers import pump_until


@pytest.fixture
def fake() -> Iterator[OpenAIFake]:
    with OpenAIFake(models=["small-model"]) as server:
        yield server


def small_model_controller(make_controller, app_dir: Path, fake: OpenAIFake, window: int):
    """The controller on an OpenAI-compatible server whose model holds ``window`` tokens."""
    fake.windows["small-model"] = window
    for n in range(8):
        body = "".join(f"def handler_{n}_{i}(event):\n    return event.get('k{i}')\n\n" for i in range(150))
        (app_dir / f"handlers_{n}.py").write_text(f'"""Handlers, part {n}."""\n\n{body}')
    (app_dir / "notes.md").write_text("# Notes\n\nShort notes.\n")
    client = AIClient(retry=RetryPolicy(base_delay_s=0.01))
    ctrl = make_controller(backend=client)
    for field, value in (
        ("current_provider", "openai_compatible"),
        ("provider_base_url", fake.base_url),
        ("current_model", "small-model"),
        ("project_files", ["*.py", "notes.md"]),
    ):
        ctrl.fields.set(field, value)
    return ctrl


def send(ctrl, text: str) -> str:
    ctrl.fields.set("ai_input", text)
    ctrl.actions.invoke("btn_gen_send")
    request_id = ctrl.state.active_request_id
    pump_until(ctrl, lambda: ctrl.request_status(request_id)["state"] in ("done", "error"), timeout=30)
    return request_id


def sent_text(fake: OpenAIFake) -> str:
    return json.dumps(fake.model_calls()[0].body["messages"])


def test_a_project_bigger_than_the_window_is_shortened_to_fit_and_says_what(
    make_controller, app_dir: Path, fake: OpenAIFake
) -> None:
    ctrl = small_model_controller(make_controller, app_dir, fake, window=8_000)
    fake.push(Reply("It handles events."))
    status = ctrl.request_status(send(ctrl, "what do the handlers do?"))

    assert status["state"] == "done", status
    fit = status["context"]
    assert (fit["provider"], fit["model"], fit["window"]) == ("openai_compatible", "small-model", 8_000)
    assert fit["tokens"] <= fit["available"] < 8_000 and not fit["exact"]
    shortened = [d for d in fit["degraded"] if d["why"] == "to fit the window"]
    assert shortened and {d["effective_mode"] for d in shortened} <= {"skeleton", "outline", "none"}
    # the request the server got is within the window by the client's own count
    assert len(sent_text(fake)) // 4 < 8_000
    assert ctrl.fields.get("context_fit") == fit  # the Context panel's data
    notes = [n.message for n in ctrl.state.notifications if n.message.startswith("context: ")]
    assert any("shortened to fit small-model (8,000 tokens" in n for n in notes), notes
    fitted = {f["path"]: f["effective_mode"] for f in ctrl.fields.get("context_files")}
    assert fitted["notes.md"] == "full"  # the small file kept its full view


def test_a_window_the_rest_of_the_request_fills_is_refused_before_any_call(
    make_controller, app_dir: Path, fake: OpenAIFake
) -> None:
    ctrl = small_model_controller(make_controller, app_dir, fake, window=1_024)  # the tools alone are more
    fake.push(Reply("never sent"))
    status = ctrl.request_status(send(ctrl, "hello"))
    assert status["state"] == "error"
    assert "does not fit openai_compatible / small-model (1,024 tokens)" in status["error"]
    assert "larger window" in status["error"]
    assert fake.model_calls() == []  # refused before any call
    assert ctrl.state.ai_status == "error" and "does not fit" in ctrl.state.ai_response


def test_the_full_strategy_is_not_shortened_but_refused_with_what_to_do(
    make_controller, app_dir: Path, fake: OpenAIFake
) -> None:
    ctrl = small_model_controller(make_controller, app_dir, fake, window=8_000)
    ctrl.fields.set("context_strategy", "full")
    status = ctrl.request_status(send(ctrl, "hello"))
    assert status["state"] == "error" and "Switch the context strategy to 'auto'" in status["error"]
    assert fake.model_calls() == []


def test_a_roomy_window_sends_every_file_as_set(make_controller, app_dir: Path, fake: OpenAIFake) -> None:
    ctrl = small_model_controller(make_controller, app_dir, fake, window=200_000)
    ctrl.fields.set("context_full_threshold", 100_000)
    fake.push(Reply("All of it."))
    status = ctrl.request_status(send(ctrl, "hello"))
    assert status["state"] == "done" and status["context"]["degraded"] == []
    assert status["context"]["dropped"] == []
    assert "handler_7_149" in sent_text(fake)  # the last function of the last file went out
    assert not any("to fit" in n.message for n in ctrl.state.notifications)


def test_the_servers_reported_window_is_asked_once_per_model(
    make_controller, app_dir: Path, fake: OpenAIFake
) -> None:
    ctrl = small_model_controller(make_controller, app_dir, fake, window=50_000)
    fake.push(Reply("one"), Reply("two"))
    send(ctrl, "first")
    send(ctrl, "second")
    listings = [r for r in fake.requests if r.path.rstrip("/").endswith("/models")]
    assert len(listings) == 1 and len(fake.model_calls()) == 2
    assert ctrl.request_status(ctrl.requests.ids()[-1])["context"]["window"] == 50_000
