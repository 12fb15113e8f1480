"""Bad input gets the documented 4xx with a message naming the problem, never a 500,
and the server stays healthy afterwards."""

from __future__ import annotations

import json
import random
import socket

import pytest

from tests.integration.hooks.conftest import HookApp

GUI = "/api/gui"
SET = {"action": "set_value", "item": "temperature", "value": 0.5}

# (method, path, JSON body or raw bytes, status, code, fragment of the message)
CASES: list[tuple[str, str, object, int, str, str]] = [
    # malformed bodies
    ("POST", GUI, b"{not json", 400, "bad_request", "not valid JSON"),
    ("POST", GUI, b"", 400, "bad_request", "body is empty"),
    ("POST", GUI, b"   ", 400, "bad_request", "body is empty"),
    ("POST", GUI, b"[1, 2]", 400, "bad_request", "must be a JSON object, got an array"),
    ("POST", GUI, b'"text"', 400, "bad_request", "must be a JSON object, got a string"),
    ("POST", GUI, b'{"action":"set_value","item":"temperature","value":NaN}', 400, "bad_request", "NaN"),
    ("POST", GUI, b"[" * 100_000 + b"]" * 100_000, 400, "bad_request", "nested deeper than 64 levels"),
    ("POST", "/api/ask", b'{"question":' + b"[" * 900 + b"]" * 900 + b"}", 400, "bad_request",
     "nested deeper than 64 levels"),
    ("POST", "/api/shutdown", b"{" * 70 + b"}" * 70, 400, "bad_request", "nested deeper than 64 levels"),
    ("POST", "/api/shutdown", b"not json", 400, "bad_request", "not valid JSON"),
    ("POST", "/api/send", b'{"message": "caf\xe9"}', 400, "bad_request", "not valid UTF-8"),
    ("POST", "/api/send", b"\xff\xfe{}", 400, "bad_request", "not valid UTF-8"),
    # unknown actions, fields, selectors
    ("POST", GUI, {"item": "x"}, 400, "bad_request", "body.action is missing"),
    ("POST", GUI, {"action": "explode"}, 400, "bad_request", "'explode' is not a GUI action"),
    ("POST", GUI, {"action": 5}, 400, "bad_request", "5 is not a GUI action"),
    ("POST", GUI, {**SET, "item": "no_such_field"}, 400, "bad_request", "unknown field 'no_such_field'"),
    ("POST", GUI, {**SET, "item": "ai_status"}, 400, "bad_request", "'ai_status' is read-only"),
    ("POST", GUI, {"action": "click", "item": "btn_nope"}, 400, "bad_request", "unknown action 'btn_nope'"),
    ("POST", GUI, {"action": "click", "item": "btn_save", "user_data": 1}, 400, "bad_request", "no user_"),
    ("POST", GUI, {"action": "select_list_item", "listbox": "nope", "item": "main"}, 400, "bad_request",
     "unknown listbox 'nope'"),
    ("POST", GUI, {"action": "select_list_item", "listbox": "discussions", "item": "ghost"}, 400,
     "bad_request", "has no item 'ghost'"),
    ("POST", GUI, {"action": "select_tab", "tab_bar": "main", "tab": "x"}, 400, "bad_request",
     "unknown tab bar 'main'"),
    # wrong types, missing and extra keys
    ("POST", GUI, {**SET, "value": "hot"}, 400, "bad_request", "temperature: expected number between"),
    ("POST", GUI, {**SET, "value": 7}, 400, "bad_request", "expected number between 0 and 2, got int 7"),
    ("POST", GUI, {**SET, "value": True}, 400, "bad_request", "expected number"),
    ("POST", GUI, {**SET, "item": 5}, 400, "bad_request", "body.item: 5 is not of type 'string'"),
    ("POST", GUI, {"action": "set_value", "item": "temperature"}, 400, "bad_request",
     "'value' is a required property"),
    ("POST", GUI, {**SET, "extra": 1}, 400, "bad_request", "('extra' was unexpected)"),
    ("POST", GUI, {"action": "set_value", "item": "project_files", "value": ["a", 3]}, 400, "bad_request",
     "expected list of strings"),
    ("POST", GUI, {"action": "click", "item": "btn_new_discussion", "user_data": 5}, 400, "bad_request",
     "expected string"),
    ("POST", "/api/pending/abc", {}, 400, "bad_request", "'approved' is a required property"),
    ("POST", "/api/pending/abc", {"approved": "yes"}, 400, "bad_request", "'yes' is not of type 'boolean'"),
    ("POST", "/api/pending/abc", {"approved": True, "payload": []}, 400, "bad_request", "not of type"),
    ("POST", "/api/ask", {"question": 5}, 400, "bad_request", "body.question: 5 is not of type 'string'"),
    ("POST", "/api/ask", {"question": "q", "timeout_s": 0}, 400, "bad_request", "timeout_s"),
    ("POST", "/api/ask", {"question": "q", "timeout_s": -1}, 400, "bad_request", "timeout_s"),
    ("POST", "/api/ask", {"question": "q", "timeout_s": "soon"}, 400, "bad_request", "not of type 'number'"),
    ("POST", "/api/ask", {"question": "q", "args": ["ls"]}, 400, "bad_request", "body.args"),
    ("POST", "/api/ask", {}, 400, "bad_request", "'question' is a required property"),
    ("POST", "/api/send", {}, 400, "bad_request", "'message' is a required property"),
    ("POST", "/api/send", {"message": ""}, 400, "bad_request", "body.message"),
    ("POST", "/api/send", {"message": "  \n"}, 400, "bad_request", "must not be blank"),
    ("POST", "/api/send", {"message": ["hi"]}, 400, "bad_request", "not of type 'string'"),
    ("POST", "/api/session/entries", {"role": " ", "content": "x"}, 400, "bad_request", "body.role"),
    ("POST", "/api/session/entries", {"role": "User"}, 400, "bad_request", "'content' is a required"),
    ("POST", "/api/session/entries", {"role": "User", "content": 5}, 400, "bad_request", "not of type"),
    # query parameters
    ("GET", "/api/events?since=abc", None, 400, "bad_request", "'since': expected an integer"),
    ("GET", "/api/events?since=-1", None, 400, "bad_request", "'since': expected 0.."),
    ("GET", "/api/events?timeout=31", None, 400, "bad_request", "'timeout': expected 0.0..30.0"),
    ("GET", "/api/events?timeout=nan", None, 400, "bad_request", "'timeout'"),
    ("GET", "/api/events?limit=0", None, 400, "bad_request", "'limit'"),
    ("GET", "/api/events?since=1&since=2", None, 400, "bad_request", "given 2 times"),
    ("GET", "/api/events?sinse=1", None, 400, "bad_request", "unknown query parameter 'sinse'"),
    ("GET", "/api/comms?limit=5000", None, 400, "bad_request", "'limit': expected 1..1000"),
    ("GET", "/api/gui/state?x=1", None, 400, "bad_request", "accepted: none"),
    ("GET", "/api/events?since=%FF", None, 400, "bad_request", "query string is not valid UTF-8"),
    # unknown paths and ids
    ("GET", "/api/nowhere", None, 404, "not_found", "no endpoint /api/nowhere"),
    ("GET", "/", None, 404, "not_found", "no endpoint /"),
    ("GET", "/status/", None, 404, "not_found", "no endpoint"),
    ("GET", "/api/gui/value/%FF", None, 400, "bad_request", "path is not valid UTF-8"),
    ("GET", "/api/gui/value/no_such_field", None, 404, "not_found", "unknown field 'no_such_field'"),
    ("GET", "/api/gui/task/abc-1", None, 404, "not_found", "no task 'abc-1'"),
    ("GET", "/api/requests/xyz", None, 404, "not_found", "no request 'xyz'"),
    ("POST", "/api/pending/xyz", {"approved": True}, 404, "not_found", "no pending dialog 'xyz'"),
    # wrong methods
    ("DELETE", GUI, None, 405, "method_not_allowed", "DELETE is not allowed on /api/gui; use POST"),
    ("GET", "/api/shutdown", None, 405, "method_not_allowed", "use POST"),
    ("POST", "/status", {}, 405, "method_not_allowed", "use GET"),
    ("PUT", "/api/pending", b"{}", 405, "method_not_allowed", "use GET"),
    ("PATCH", "/api/gui/value/ai_status", None, 405, "method_not_allowed", "use GET"),
    ("OPTIONS", "/api/events", None, 405, "method_not_allowed", "use GET"),
    ("BREW", "/api/events", None, 405, "method_not_allowed", "'BREW' is not supported"),
]  # fmt: skip


def send(app: HookApp, method: str, path: str, body: object):
    raw = body if isinstance(body, bytes) else None
    return app.call(method, path, None if raw is not None else body, raw=raw)


def test_every_bad_input_gets_its_documented_error(hook_app: HookApp) -> None:
    failures = []
    for method, path, body, status, code, fragment in CASES:
        reply = send(hook_app, method, path, body)  # also checked against the OpenAPI document
        error = reply.body["error"]
        if (reply.status, error["code"]) != (status, code) or fragment not in error["message"]:
            failures.append(f"{method} {path} {str(body)[:60]}: got {reply.status} {error}")
        if status == 405 and not reply.headers.get("allow"):
            failures.append(f"{method} {path}: 405 without an Allow header")
    assert not failures, "\n".join(failures)
    assert_server_healthy(hook_app)


def test_head_is_refused_without_a_body(hook_app: HookApp) -> None:
    reply = hook_app.call("HEAD", "/status")
    assert reply.status == 405 and reply.headers["allow"] == "GET"


def raw_exchange(app: HookApp, data: bytes, timeout: float = 5.0) -> tuple[int, dict]:
    """Send raw bytes (after the request line: this server's Host, the token and, for a POST, a
    JSON content type), read one reply; (status, JSON body)."""
    line, sep, rest = data.partition(b"\r\n")
    if sep and line.endswith(b"HTTP/1.1"):
        extra = f"Host: 127.0.0.1:{app.server.port}\r\nAuthorization: Bearer {app.token}\r\n".encode()
        if line.startswith(b"POST"):
            extra += b"Content-Type: application/json\r\n"
        data = line + sep + extra + rest
    with socket.create_connection(("127.0.0.1", app.server.port), timeout=timeout) as sock:
        sock.sendall(data)
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = sock.recv(65536)
            assert chunk, f"connection closed without a reply: {received!r}"
            received += chunk
        head, _, rest = received.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        length = int(headers["content-length"])
        while len(rest) < length:
            chunk = sock.recv(65536)
            assert chunk
            rest += chunk
    assert headers["content-type"].startswith("application/json")
    return int(lines[0].split()[1]), json.loads(rest[:length])


@pytest.mark.parametrize(
    ("data", "status", "fragment"),
    [
        (b"GARBAGE\r\n\r\n", 400, "malformed HTTP request"),
        (b"GET /status HTTP/9.9\r\n\r\n", 400, "malformed HTTP request"),
        (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", 400, "malformed HTTP request"),
        (b"GET /status HTTP/1.1\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n", 431, "over 64 KiB"),
        (
            b"GET /status HTTP/1.1\r\n"
            + b"X-Big: "
            + b"a" * 30_000
            + b"\r\n"
            + b"X-Big2: "
            + b"a" * 40_000
            + b"\r\n\r\n",
            431,
            "over 64 KiB",
        ),
        (b"GET /status\r\n\r\n", 400, "no HTTP version"),
        (b"POST /api/send HTTP/1.1\r\nContent-Length: abc\r\n\r\n", 400, "is not a non-negative integer"),
        (b"POST /api/send HTTP/1.1\r\nContent-Length: -5\r\n\r\n", 400, "is not a non-negative integer"),
        (b"POST /api/send HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, "Transfer-Encoding"),
        (b"POST /api/send HTTP/1.1\r\nContent-Length: 999999999\r\n\r\n", 413, "the limit is 1048576 bytes"),
    ],
)
def test_malformed_http_gets_a_json_error(hook_app: HookApp, data: bytes, status: int, fragment: str) -> None:
    got, body = raw_exchange(hook_app, data)
    assert got == status and fragment in body["error"]["message"], body
    assert_server_healthy(hook_app)


def test_a_body_over_one_mib_is_413_and_the_connection_stays_usable(hook_app: HookApp) -> None:
    big = json.dumps({"message": "x" * (1024 * 1024)}).encode()
    reply = hook_app.call("POST", "/api/send", raw=big)
    assert reply.status == 413 and reply.body["error"]["code"] == "payload_too_large"
    client = hook_app.client()
    client.set_value("ai_input", "y" * (1024 * 1024 - 100))  # just under the limit is fine
    client.wait_for_value("ai_input", lambda v: len(v) == 1024 * 1024 - 100)


def test_random_garbage_never_gets_a_500(hook_app: HookApp) -> None:
    rng = random.Random(20261122)
    paths = [route.path for route in hook_app.server.router.routes]
    alphabet = b'{}[]":,0123456789abcdefnulltruefalse \\\xff\x00%/'
    statuses = []
    for _ in range(300):
        method = rng.choice(["GET", "POST", "PUT", "DELETE"])
        path = rng.choice(paths).replace("{", "").replace("}", "")
        if rng.random() < 0.3:
            path += (
                "?"
                + rng.choice(["since", "limit", "timeout", "x"])
                + "="
                + rng.choice(["1", "-", "%", "9e99"])
            )
        body = bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        if method == "POST" and path == "/api/shutdown":
            continue  # a valid stop request, not garbage
        statuses.append(hook_app.call(method, path, raw=body, timeout=15).status)
    assert statuses and max(statuses) < 500
    assert_server_healthy(hook_app)


def assert_server_healthy(app: HookApp) -> None:
    assert app.call("GET", "/status").status == 200
    client = app.client()
    client.wait_for_value("ai_status", lambda v: v == "idle")
    assert client.health()["healthy"] is True
    assert client.wait_for_task(client.set_value("top_p", 0.5))["state"] == "done"
    logged = app.ctrl.session_log.read("apihooks")
    assert logged and all(entry["status"] < 500 for entry in logged)
