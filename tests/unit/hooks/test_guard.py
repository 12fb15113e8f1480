"""The request guard: Host, Origin, Sec-Fetch-Site, token, content type, JSON depth."""

from __future__ import annotations

import json
from email.message import Message

import pytest

from manual_slop.hooks.errors import BadRequest, Forbidden, Unauthorized, UnsupportedMediaType
from manual_slop.hooks.guard import MAX_JSON_DEPTH, RequestGuard, json_depth_exceeds, parse_host

PORT = 8999
TOKEN = "t0ken-value"


def headers(*pairs: tuple[str, str]) -> Message:
    message = Message()
    for name, value in pairs:
        message[name] = value
    return message


def good(*extra: tuple[str, str]) -> Message:
    return headers(("Host", f"127.0.0.1:{PORT}"), ("Authorization", f"Bearer {TOKEN}"), *extra)


GUARD = RequestGuard(TOKEN, PORT)


@pytest.mark.parametrize(
    "host",
    [f"127.0.0.1:{PORT}", f"localhost:{PORT}", f"LOCALHOST:{PORT}", f"[::1]:{PORT}", f"localhost.:{PORT}"],
)
def test_loopback_hosts_on_the_bound_port_pass(host: str) -> None:
    GUARD.check_request("GET", "/api/pending", headers(("Host", host), ("Authorization", f"Bearer {TOKEN}")))


@pytest.mark.parametrize(
    "host",
    [
        "evil.example", f"evil.example:{PORT}", "127.0.0.1", f"127.0.0.1:{PORT + 1}",
        f"localhost.evil:{PORT}",
        f"127.0.0.2:{PORT}", "[::1]", f"user@127.0.0.1:{PORT}", "127.0.0.1:99999", f"127.0.0.1 :{PORT}", "",
        f"[::1:{PORT}", f"127.0.0.1:{PORT}x",
    ],
)  # fmt: skip
def test_every_other_host_is_forbidden_before_the_token(host: str) -> None:
    with pytest.raises(Forbidden):
        GUARD.check_request("GET", "/status", headers(("Host", host)))


def test_a_missing_host_is_forbidden_and_two_are_a_bad_request() -> None:
    with pytest.raises(Forbidden, match="no Host header"):
        GUARD.check_request("GET", "/status", headers())
    with pytest.raises(BadRequest, match="2 times"):
        two = headers(("Host", f"127.0.0.1:{PORT}"), ("Host", "evil.example"))
        GUARD.check_request("GET", "/status", two)


def test_allowed_hosts_and_the_bound_loopback_address_are_accepted() -> None:
    guard = RequestGuard(TOKEN, PORT, ["Slop.Lan"], bound_host="127.0.0.5")
    for host in (f"slop.lan:{PORT}", f"127.0.0.5:{PORT}"):
        guard.check_request("GET", "/status", headers(("Host", host)))
    own = headers(("Host", f"slop.lan:{PORT}"), ("Origin", f"http://slop.lan:{PORT}"))
    guard.check_request("GET", "/status", own)


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        "null",
        f"https://127.0.0.1:{PORT}",
        f"http://127.0.0.1:{PORT + 1}",
        "http://127.0.0.1",
    ],
)
def test_foreign_origins_are_forbidden_even_with_the_token(origin: str) -> None:
    with pytest.raises(Forbidden, match="cross-origin"):
        GUARD.check_request("POST", "/api/gui", good(("Origin", origin)))


def test_own_origins_pass() -> None:
    for origin in (f"http://127.0.0.1:{PORT}", f"http://localhost:{PORT}", f"http://[::1]:{PORT}/"):
        GUARD.check_request("POST", "/api/gui", good(("Origin", origin)))


@pytest.mark.parametrize("site", ["cross-site", "same-site", "bogus"])
def test_requests_fetched_by_other_sites_are_forbidden(site: str) -> None:
    with pytest.raises(Forbidden, match="Sec-Fetch-Site"):
        GUARD.check_request("GET", "/api/pending", good(("Sec-Fetch-Site", site)))
    GUARD.check_request("GET", "/api/pending", good(("Sec-Fetch-Site", "same-origin")))
    GUARD.check_request("GET", "/api/pending", good(("Sec-Fetch-Site", "none")))


@pytest.mark.parametrize(
    "authorization",
    [
        None, "", "Bearer", "Bearer ", f"Basic {TOKEN}", f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}",
        "Bearer t0ken-valu\u00e9",
    ],
)  # fmt: skip
def test_a_missing_or_wrong_token_is_unauthorized(authorization: str | None) -> None:
    pairs = [("Host", f"127.0.0.1:{PORT}")]
    if authorization is not None:
        pairs.append(("Authorization", authorization))
    with pytest.raises(Unauthorized):
        GUARD.check_request("GET", "/api/pending", headers(*pairs))


def test_two_authorization_headers_are_unauthorized_and_status_needs_no_token() -> None:
    twice = good(("Authorization", f"Bearer {TOKEN}"))
    with pytest.raises(Unauthorized):
        GUARD.check_request("GET", "/api/pending", twice)
    GUARD.check_request("GET", "/status", headers(("Host", f"localhost:{PORT}")))
    with pytest.raises(Unauthorized):
        GUARD.check_request("POST", "/status", headers(("Host", f"localhost:{PORT}")))


def test_a_guard_without_token_checks_host_and_origin_only() -> None:
    open_guard = RequestGuard("", PORT)
    open_guard.check_request("POST", "/api/gui", headers(("Host", f"127.0.0.1:{PORT}")))
    with pytest.raises(Forbidden):
        open_guard.check_request("POST", "/api/gui", headers(("Host", "evil.example")))


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json", "Application/JSON", "application/json; charset=utf-8",
        'application/json;charset="UTF8"',
    ],
)  # fmt: skip
def test_json_posts_pass(content_type: str) -> None:
    RequestGuard.check_content_type("POST", headers(("Content-Type", content_type)))


@pytest.mark.parametrize(
    "content_type",
    [
        None, "", "text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x", "application/json; charset=latin-1", "application/jsonx",
        "application/json-patch+json",
    ],
)  # fmt: skip
def test_other_posts_are_unsupported(content_type: str | None) -> None:
    pairs = [] if content_type is None else [("Content-Type", content_type)]
    with pytest.raises(UnsupportedMediaType):
        RequestGuard.check_content_type("POST", headers(*pairs))
    RequestGuard.check_content_type("GET", headers(*pairs))  # bodiless methods are not checked


def test_two_content_types_are_unsupported() -> None:
    with pytest.raises(UnsupportedMediaType):
        RequestGuard.check_content_type(
            "POST", headers(("Content-Type", "application/json"), ("Content-Type", "text/plain"))
        )


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def test_json_depth_limit_is_exact() -> None:
    assert not json_depth_exceeds(nested(MAX_JSON_DEPTH))
    assert json_depth_exceeds(nested(MAX_JSON_DEPTH + 1))
    deep_object = b'{"a":' * (MAX_JSON_DEPTH + 1) + b"1" + b"}" * (MAX_JSON_DEPTH + 1)
    assert json_depth_exceeds(deep_object)


def test_brackets_inside_strings_do_not_count() -> None:
    body = json.dumps({"text": "[" * 10_000 + '\\" {{{ ' + "]" * 3, "more": ['"[[[['] * 500}).encode()
    assert not json_depth_exceeds(body)
    assert json.loads(body)  # the scanner and the parser agree on what a string is


def test_wide_but_shallow_bodies_pass() -> None:
    assert not json_depth_exceeds(json.dumps([[i] for i in range(100_000)]).encode())
    assert not json_depth_exceeds(json.dumps({"x": list(range(200_000))}).encode())


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("127.0.0.1:80", ("127.0.0.1", 80)),
        ("LocalHost", ("localhost", None)),
        ("[::1]:8999", ("[::1]", 8999)),
        ("example.com.:1", ("example.com", 1)),
        ("a:b", None),
        ("[::1", None),
        ("a:0", None),
        ("a b", None),
    ],
)
def test_parse_host(value: str, parsed: tuple[str, int | None] | None) -> None:
    assert parse_host(value) == parsed
