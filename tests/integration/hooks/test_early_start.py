"""The Hook API started before its app, as a headless start does: ``GET /status`` answers at
once; every other request waits for the app and then gets the built app's reply (408 when it
takes too long, 409 when the server stops first); the early requests reach ``apihooks.log``."""

from __future__ import annotations

import http.client
import json
import threading
import time
from typing import Any

import pytest

from manual_slop.hooks import HookServer

TOKEN = "early-token"


def get(server: HookServer, path: str, token: str = TOKEN) -> tuple[int, dict[str, Any]]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def in_background(call: Any) -> tuple[threading.Thread, list[Any]]:
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(call()), name="test-early-client", daemon=True)
    thread.start()
    return thread, result


def early_server(started_at: float) -> HookServer:
    return HookServer(
        None, "127.0.0.1", 0, TOKEN, mode="headless", started_at=started_at, runtime_token_file=False
    ).start()


def test_status_at_once_the_rest_after_attach_and_the_early_requests_logged(make_controller) -> None:
    server = early_server(time.time() - 2.0)
    try:
        status, body = get(server, "/status", token="")
        assert status == 200, body
        assert body["status"] == "ok" and body["mode"] == "headless" and body["uptime_s"] >= 2.0
        assert body["ready"] is False
        waiting, result = in_background(lambda: get(server, "/openapi.json"))
        time.sleep(0.2)
        assert waiting.is_alive() and not result, "a request was answered before the app existed"
        controller = make_controller()
        server.attach(controller)
        waiting.join(10)
        assert result and result[0][0] == 200 and "/status" in result[0][1]["paths"], result
        assert controller.hook_api == (server.url, TOKEN)
        assert get(server, "/status", token="")[1]["ready"] is True
    finally:
        assert server.stop() == []
    log = controller.session_log.root / "apihooks.log"
    paths = [json.loads(line)["path"] for line in log.read_text().splitlines()]
    assert paths == ["/status", "/openapi.json", "/status"], paths  # the early one first, in order


@pytest.mark.parametrize("ending", ["timeout", "stop"])
def test_a_request_waiting_for_an_app_that_does_not_come_gets_a_clear_error(ending: str) -> None:
    server = early_server(time.time())
    server.start_wait = 0.3 if ending == "timeout" else 10.0
    try:
        waiting, result = in_background(lambda: get(server, "/api/gui/value/ai_status"))
        if ending == "stop":
            time.sleep(0.2)
            assert not result  # still waiting when the server stops
        else:
            waiting.join(10)
    finally:
        assert server.stop() == []
    waiting.join(10)
    assert result, "the waiting request got no reply"
    status, body = result[0]
    expected = (408, "timeout", "still starting") if ending == "timeout" else (409, "conflict", "stopped")
    assert (status, body["error"]["code"]) == expected[:2], body
    assert expected[2] in body["error"]["message"]
