"""The served OpenAPI document and the server's routes describe the same API — the issue's."""

from __future__ import annotations

import manual_slop.hooks as hooks
from manual_slop.hooks.errors import ErrorCode
from tests.integration.hooks.conftest import HookApp

# The endpoint table of the issues: a contract that tests pin.
CONTRACT = {
    ("GET", "/status"),
    ("GET", "/api/gui_health"),
    ("GET", "/api/gui/state"),
    ("GET", "/api/gui/value/{field}"),
    ("POST", "/api/gui"),
    ("GET", "/api/gui/task/{task_id}"),
    ("GET", "/api/events"),
    ("GET", "/api/pending"),
    ("POST", "/api/pending/{id}"),
    ("POST", "/api/ask"),
    ("POST", "/api/send"),
    ("GET", "/api/requests/{id}"),
    ("POST", "/api/requests/{id}/cancel"),  # issue 15: Stop
    ("GET", "/api/comms"),
    ("GET", "/api/tool_calls"),
    ("GET", "/api/session"),
    ("POST", "/api/session/entries"),
    ("GET", "/api/mma/status"),
    ("GET", "/api/diagnostics"),
    ("GET", "/openapi.json"),
    ("POST", "/api/shutdown"),
    # issue 16: memory
    ("POST", "/api/rag/index"),
    ("GET", "/api/rag/status"),
    ("POST", "/api/rag/cancel"),
    ("POST", "/api/rag/query"),
    ("POST", "/api/memory/recall"),
    ("GET", "/api/memory/notes"),
    ("POST", "/api/memory/notes"),
    ("DELETE", "/api/memory/notes/{id}"),
    ("GET", "/api/memory/profile"),
    ("PUT", "/api/memory/profile"),
    # issue 17: agent profiles
    ("GET", "/api/agents"),
    ("GET", "/api/agents/{key}"),
    ("PUT", "/api/agents/{key}"),
    ("DELETE", "/api/agents/{key}"),
    ("GET", "/api/skills"),
    ("PUT", "/api/skills/{name}"),
    # issue 17: plans and DAG edits
    ("POST", "/api/plan"),
    ("GET", "/api/plans"),
    ("GET", "/api/plans/{id}"),
    ("POST", "/api/mma/tickets/{id}/depends_on"),
    # issue 18: governance
    ("GET", "/api/mma/graph"),
    # issue 18: run logs
    ("GET", "/api/usage"),  # issue 21: cost
    ("GET", "/api/runs"),
    ("GET", "/api/runs/{run_id}"),
    ("GET", "/api/runs/{run_id}/requests/{n}"),
    # issue 18: HITL rules
    ("GET", "/api/approval/rules"),
    ("PUT", "/api/approval/rules"),
    # issue 19: the app's own MCP server
    ("GET", "/api/mcp/serve"),
    ("POST", "/api/mcp/serve"),
    ("DELETE", "/api/mcp/serve"),
    # issue 19: external MCP servers
    ("GET", "/api/mcp/servers"),
    ("POST", "/api/mcp/servers/{name}/restart"),
    ("POST", "/api/mcp/servers/{name}/enable"),
    ("POST", "/api/mcp/servers/{name}/disable"),
}
METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH")


def test_the_document_matches_the_routes_and_the_issue(hook_app: HookApp) -> None:
    documented = hook_app.contract.operations()  # the document is a valid OpenAPI 3.1 document
    routed = {(route.method, route.path) for route in hook_app.server.router.routes}
    assert documented == routed
    assert documented == CONTRACT
    assert hook_app.contract.doc["openapi"] == "3.1.0"


def test_the_server_answers_exactly_what_the_document_describes(hook_app: HookApp) -> None:
    """Probe every path with every method: documented ones are routed, others are 405."""
    for template, item in hook_app.contract.doc["paths"].items():
        path = template.replace("{field}", "ai_status").replace("{task_id}", "x").replace("{id}", "x")
        for method in METHODS:
            if (method, template) == ("POST", "/api/shutdown"):
                continue  # routed for real in test_endpoints; here it would stop the app
            reply = hook_app.call(method, path, raw=b"{}" if method != "GET" else None)
            if method.lower() in item:
                assert reply.status != 405, f"{method} {template} is documented but not routed"
                if reply.status == 404:
                    assert "no endpoint" not in reply.body["error"]["message"], f"{method} {template}"
            else:
                assert reply.status == 405, f"{method} {template} is routed but not documented"
                allowed = {m.upper() for m in item}
                assert set(reply.headers["allow"].split(", ")) == allowed


def test_every_operation_documents_its_errors(hook_app: HookApp) -> None:
    for template, item in hook_app.contract.doc["paths"].items():
        for method, operation in item.items():
            statuses = set(operation["responses"])
            assert {"400", "403", "413", "431", "500"} <= statuses, f"{method} {template}"
            has_body = method in ("post", "put", "patch")
            assert ("415" in statuses) == has_body, f"{method} {template}"
            assert ("401" in statuses) == (operation.get("security") != []), f"{method} {template}"
            assert any(s.startswith("2") for s in statuses)
    codes = hook_app.contract.doc["components"]["schemas"]["Error"]["properties"]["error"]["properties"]
    assert codes["code"]["enum"] == [str(c) for c in ErrorCode]


def test_the_public_surface_is_pinned() -> None:
    assert hooks.__all__ == sorted(hooks.__all__)
    assert set(hooks.__all__) == {
        "ApiHookClient", "BadRequest", "Conflict", "ErrorCode", "Forbidden", "HeadersTooLarge",
        "HookApiError", "HookConnectionError", "HookError", "HookServer", "HookStartError", "HookTaskFailed",
        "HookWaitTimeout", "InternalError", "MethodNotAllowed", "NotFound", "PayloadTooLarge",
        "RequestTimedOut", "Unauthorized", "UnsupportedMediaType", "is_loopback",
    }  # fmt: skip
    for name in hooks.__all__:
        assert getattr(hooks, name) is not None
