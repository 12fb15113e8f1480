"""Strings that are not text: a JSON body with a lone surrogate escape is refused at the door
(400), and a value that holds one anyway is still answered as valid JSON, so no reply, task
or event stream can be broken by it."""

from __future__ import annotations

import json

import pytest

LONE = b'"caf\\udfff"'


@pytest.mark.parametrize(
    ("path", "raw"),
    [
        ("/api/gui", b'{"action":"set_value","item":"ai_input","value":' + LONE + b"}"),
        ("/api/gui", b'{"action":"click","item":"btn_memory_search","user_data":{"query":' + LONE + b"}}"),
        ("/api/gui", b'{"action":"click","item":"btn_open_file","user_data":{"path":' + LONE + b"}}"),
        ("/api/rag/query", b'{"query":' + LONE + b"}"),
        ("/api/memory/notes", b'{"content":' + LONE + b"}"),
    ],
)
def test_a_lone_surrogate_in_a_body_is_a_400(hook_app, path: str, raw: bytes) -> None:
    reply = hook_app.call("POST", path, raw=raw)
    assert reply.status == 400
    assert "lone surrogate" in reply.body["error"]["message"]
    assert hook_app.call("GET", "/api/gui/value/ai_input").status == 200
    assert hook_app.call("GET", "/api/events?since=0").status == 200


def test_a_value_holding_a_lone_surrogate_is_still_answered_as_json(hook_app) -> None:
    hook_app.ctrl.call_on_main(lambda: setattr(hook_app.ctrl.state, "ai_input", "caf\udfff"), 5.0)
    reply = hook_app.call("GET", "/api/gui/value/ai_input", check=False)
    assert reply.status == 200
    assert reply.body["value"] == "caf\udfff"  # escaped on the wire, the same string back
    assert json.loads(json.dumps(reply.body))["value"] == "caf\udfff"
