"""Sessions over the Hook API, headless: list, star, replay (POST /api/send refused), exit."""

from __future__ import annotations

import time

from tests.integration.hooks.conftest import wait_until
from tests.unit.sessions.fabricate import chat, make_session


def test_sessions_are_scriptable_and_a_replay_refuses_api_sends(hook_app_factory, app_dir) -> None:
    prior = make_session(app_dir / "logs", 30, now=time.time(), comms=chat(6))
    app = hook_app_factory()
    client = app.client()
    wait_until(lambda: len(client.get_value("sessions")) == 2)
    client.wait_for_task(client.click("btn_session_star", {"session_id": prior, "starred": True}))
    assert next(s for s in client.get_value("sessions") if s["session_id"] == prior)["starred"] is True

    client.wait_for_task(client.click("btn_session_replay", prior))
    wait_until(lambda: client.get_value("session_replay") == prior)
    refused = app.call("POST", "/api/send", {"message": "hello"})
    assert refused.status == 400
    assert f"replay of session {prior}" in refused.body["error"]["message"]

    client.wait_for_task(client.click("btn_replay_exit"))
    assert client.get_value("session_replay") == ""
