"""Stop through the app: ``POST /api/requests/{id}/cancel`` (and ``btn_cancel_request``) end a
real AI-client send within a second, reject its pending approval, and keep the partial answer
in the discussion, marked as cut."""

from __future__ import annotations

import time
from pathlib import Path

from manual_slop.ai import AIClient
from tests.fakes import Call, OpenAIFake, Reply
from tests.integration.hooks.conftest import HookAppFactory, wait_until

LONG = " ".join(f"word{i}" for i in range(600))


def app_on(fake: OpenAIFake, factory: HookAppFactory, app_dir: Path):
    (app_dir / "config.toml").write_text(
        "[ai]\nprovider = 'openai_compatible'\nmodel = 'm'\n\n[providers.openai_compatible]\n"
        f"model = 'm'\nbase_url = '{fake.base_url}/v1'\n"
    )
    return factory(backend=AIClient(), environ={"OPENAI_API_KEY": "k-123456789"})


def test_a_streaming_answer_is_stopped_over_the_api(hook_app_factory: HookAppFactory, app_dir: Path) -> None:
    with OpenAIFake(api_key="k-123456789") as fake:
        fake.push(Reply(LONG, chunk_delay=0.05))
        app = app_on(fake, hook_app_factory, app_dir)
        client = app.client()
        request_id = client.send("tell me a long story")
        wait_until(lambda: len(client.get_value("ai_response")) > 30, timeout=10)
        asked = time.monotonic()
        assert client.cancel(request_id)["state"] in ("cancelling", "cancelled")
        final = client.wait_for_request(request_id, timeout=5)
        assert final["state"] == "cancelled" and time.monotonic() - asked < 1.0
        assert final["response"].startswith("word0 word1") and final["response"].endswith(
            "[cut: stopped by the user]"
        )
        entries = client.session()["entries"]
        assert entries[-1]["role"] == "AI" and entries[-1]["content"] == final["response"]
        assert client.get_value("ai_status") == "cancelled"
        assert len(fake.model_calls()) == 1  # not retried


def test_a_pending_approval_is_rejected_when_its_request_stops(
    hook_app_factory: HookAppFactory, app_dir: Path
) -> None:
    with OpenAIFake(api_key="k-123456789") as fake:
        fake.push(Reply("I will write it.", [Call("write_file", {"path": "out.txt", "content": "x"})]))
        app = app_on(fake, hook_app_factory, app_dir)
        client = app.client()
        request_id = client.send("write a file")
        wait_until(lambda: client.pending() != [], timeout=10)
        [dialog] = client.pending()
        client.wait_for_task(client.click("btn_cancel_request"))  # the Stop button's action
        final = client.wait_for_request(request_id, timeout=5)
        assert final["state"] == "cancelled"
        assert final["response"] == "I will write it.\n\n[cut: stopped by the user]"
        assert client.pending() == []
        audit = [e for e in app.ctrl.session_log.read("audit") if e.get("id") == dialog["id"]]
        assert audit and audit[-1]["decider"] == "cancel" and audit[-1]["approved"] is False
        assert not (app_dir / "out.txt").exists()
        assert len(fake.model_calls()) == 1  # the model was not asked again
