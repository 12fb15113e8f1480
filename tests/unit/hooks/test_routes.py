"""Route matching and the checks of query strings and bodies."""

from __future__ import annotations

import pytest

from manual_slop.hooks.errors import BadRequest, MethodNotAllowed, NotFound
from manual_slop.hooks.routes import Call, QueryParam, Route, Router
from manual_slop.hooks.schema_kit import SPACE
from manual_slop.memory.notes import check_category

SINCE = QueryParam("since", int, 0, 0, 100, "after")
WAIT = QueryParam("timeout", float, 0.0, 0.0, 30.0, "wait")


def handler(call: Call) -> dict:
    return {}


def router() -> Router:
    return Router(
        [
            Route("GET", "/api/items/{item_id}", "getItem", "one", handler, "Status"),
            Route("GET", "/api/items", "listItems", "all", handler, "Status", query=(SINCE, WAIT)),
            Route("POST", "/api/send", "send", "send", handler, "RequestId", request="SendRequest"),
            Route("POST", "/api/gui", "gui", "gui", handler, "Queued", request="GuiAction"),
        ]
    )


def test_templates_match_whole_segments_only() -> None:
    r = router()
    route, params = r.match("GET", "/api/items/a%20b")
    assert route.operation_id == "getItem" and params == {"item_id": "a%20b"}
    for path in ("/api/items/a/b", "/api/items/", "/api/itemsx", "/api/items/x/"):
        with pytest.raises(NotFound, match="no endpoint"):
            r.match("GET", path)


def test_wrong_method_names_the_allowed_ones() -> None:
    with pytest.raises(MethodNotAllowed) as info:
        router().match("DELETE", "/api/items")
    assert info.value.allowed == ("GET",) and "use GET" in str(info.value)


def test_duplicate_routes_are_refused() -> None:
    with pytest.raises(ValueError, match="declared twice"):
        Router(
            [Route("GET", "/x", "a", "", handler, "Status"), Route("GET", "/x", "b", "", handler, "Status")]
        )


def test_query_defaults_limits_and_unknown_names() -> None:
    r = router()
    route, _ = r.match("GET", "/api/items")
    assert r.parse_query(route, "") == {"since": 0, "timeout": 0.0}
    assert r.parse_query(route, "since=7&timeout=2.5") == {"since": 7, "timeout": 2.5}
    for query, fragment in [
        ("since=1.5", "expected an integer"),
        ("since=101", "expected 0..100"),
        ("timeout=inf", "expected 0.0..30.0"),
        ("timeout=nan", "expected 0.0..30.0"),
        ("since=", "expected an integer"),
        ("since=1&since=1", "given 2 times"),
        ("limit=5", "unknown query parameter 'limit'; accepted: since, timeout"),
    ]:
        with pytest.raises(BadRequest, match=fragment.replace(".", r"\.").replace("(", r"\(")):
            r.parse_query(route, query)


def test_bodies_are_decoded_and_checked_with_clear_messages() -> None:
    r = router()
    send, _ = r.match("POST", "/api/send")
    assert r.parse_body(send, b'{"message": "hi"}') == {"message": "hi"}
    cases = [
        (b"", "the request body is empty"),
        (b"{", "not valid JSON: Expecting property name enclosed in double quotes at line 1 column 2"),
        (b'{"message": Infinity}', "Infinity is not valid JSON"),
        (b"\xc3\x28", "not valid UTF-8 (byte 0xc3 at 0)"),
        (b"null", "must be a JSON object, got null"),
        (b"true", "must be a JSON object, got a boolean"),
        (b"3", "must be a JSON object, got a number"),
        (b"{}", "body: 'message' is a required property"),
        (b'{"message": "x", "to": 1}', "Additional properties are not allowed ('to' was unexpected)"),
    ]
    for raw, fragment in cases:
        with pytest.raises(BadRequest) as info:
            r.parse_body(send, raw)
        assert fragment in str(info.value), (raw, str(info.value))


def test_gui_bodies_are_checked_by_their_action() -> None:
    r = router()
    gui, _ = r.match("POST", "/api/gui")
    assert r.parse_body(gui, b'{"action": "click", "item": "btn_save"}')["item"] == "btn_save"
    with pytest.raises(BadRequest, match=r"body\.action is missing"):
        r.parse_body(gui, b'{"item": "x"}')
    with pytest.raises(BadRequest, match=r"body.tab: \['x'\] is not of type 'string'"):
        r.parse_body(gui, b'{"action": "select_tab", "tab_bar": "t", "tab": ["x"]}')


def test_bodiless_routes_take_an_empty_body_or_any_json_object() -> None:
    r = router()
    route, _ = r.match("GET", "/api/items")
    assert r.parse_body(route, b"") is None
    assert r.parse_body(route, b'{"ignored": [1, 2]}') is None
    with pytest.raises(BadRequest, match="not valid JSON"):
        r.parse_body(route, b"anything")
    with pytest.raises(BadRequest, match="nested deeper than 64 levels"):
        r.parse_body(route, b"[" * 65 + b"]" * 65)


def test_long_messages_are_clipped() -> None:
    assert len(str(BadRequest("x" * 10_000))) == 500


def test_integral_floats_reach_handlers_as_ints() -> None:
    """JSON Schema counts 39.0 as an integer; handlers got the float and failed (a 500 that
    schemathesis found on POST /api/rag/query with top_k 39.0)."""
    r = Router([Route("POST", "/q", "q", "", handler, "RagResults", request="RagQueryRequest")])
    body = r.parse_body(r.routes[0], b'{"query": "x", "top_k": 39.0}')
    assert body == {"query": "x", "top_k": 39} and type(body["top_k"]) is int
    notes = Route("POST", "/n", "n", "", handler, "Notes", request="RecallRequest")
    assert type(Router([notes]).parse_body(notes, b'{"query": "x", "limit": 2.0}')["limit"]) is int
    with pytest.raises(BadRequest, match="top_k"):
        r.parse_body(r.routes[0], b'{"query": "x", "top_k": 39.5}')


def test_pattern_refusals_say_what_is_wrong_in_words() -> None:
    """Patterns added so the schema says what the handlers check (schemathesis' positive data
    acceptance) keep the handlers' messages, not "does not match '\\S'"."""
    routes = [
        Route("POST", "/e", "e", "", handler, "EntryQueued", request="SessionEntryRequest"),
        Route("POST", "/n", "n", "", handler, "NoteCreated", request="NoteRequest"),
        Route("POST", "/d", "d", "", handler, "TicketEdited", request="DependsOnRequest"),
    ]
    r = Router(routes)
    cases = [
        (routes[0], b'{"role": " ", "content": ""}', "body.role: must not be blank"),
        (routes[1], b'{"content": "\\n"}', "body.content: a note needs some text"),
        (routes[1], b'{"content": "x", "category": "../x"}', "body.category: a category is letters"),
        (routes[2], b'{"depends_on": [], "add": ["a"]}', "body: give either depends_on"),
        (routes[2], b"{}", "body: give either depends_on"),
    ]
    for route, raw, message in cases:
        with pytest.raises(BadRequest) as caught:
            r.parse_body(route, raw)
        assert str(caught.value).startswith(message), (raw, str(caught.value))
    blank = {"content": "x", "category": "   "}  # a blank category is "general" (check_category)
    assert r.parse_body(routes[1], b'{"content": "x", "category": "   "}') == blank
    assert check_category("   ") == check_category("") == "general"


def test_blank_means_what_str_strip_means_in_every_regex_dialect() -> None:
    """The document's regexes are ECMA-262, whose \\s differs from Python's: the schemas spell
    the set out (schemathesis sent "\\x1e", which Python strips and ECMA keeps)."""
    import re

    assert {chr(c) for c in range(0x110000) if chr(c).isspace()} == {
        chr(c) for c in range(0x3001) if re.fullmatch(SPACE, chr(c))
    }
    r = Router([Route("POST", "/e", "e", "", handler, "EntryQueued", request="SessionEntryRequest")])
    with pytest.raises(BadRequest, match="must not be blank"):
        r.parse_body(r.routes[0], b'{"role": "\\u001e", "content": ""}')
    assert r.parse_body(r.routes[0], b'{"role": "\\ufeff", "content": ""}')["role"] == "\ufeff"


def test_a_bodiless_route_refuses_a_body_of_whitespace() -> None:
    route = Route("POST", "/c", "c", "", handler, "RagCancelled")
    with pytest.raises(BadRequest, match="empty"):  # schemathesis: "\\x0c" was taken as no body
        Router([route]).parse_body(route, b"\x0c")
