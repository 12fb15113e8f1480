"""Our tools over MCP, served from the running app (streamable HTTP), driven by the official SDK's
client: every tool listed with its schema, a mutating call waits in the app's clutch until it is
decided over /api/pending, a path outside the project is refused, and the HTTP guard refuses
clients without the token or from another site."""

from __future__ import annotations

import threading
from typing import Any

import httpx2
import pytest

from manual_slop.tools.registry import default_registry
from tests.integration.mcp_server.conftest import Served, run_async


def test_every_tool_is_listed_with_its_schema_and_annotations(served: Served) -> None:
    async def listing() -> Any:
        async with served.session() as client:
            return (await client.list_tools()).tools

    tools = {tool.name: tool for tool in run_async(listing)}
    registry = default_registry()
    assert set(tools) == set(registry.names())
    for name, tool in tools.items():
        ours = registry.get(name)
        assert tool.input_schema == ours.parameters, name
        assert tool.description == ours.description
        assert tool.annotations.read_only_hint is (not ours.mutating), name
    assert tools["write_file"].annotations.destructive_hint is True


def _decide_next(hook: Any, approve: bool, seen: list[dict[str, Any]]) -> threading.Thread:
    """Decide the next pending dialog over the Hook API, as a headless user would."""

    def decide() -> None:
        event = hook.wait_for_event("pending_added", timeout=20)
        seen.append(event["payload"])
        if approve:
            hook.approve(event["payload"]["id"])
        else:
            hook.reject(event["payload"]["id"], reason="not that file")

    thread = threading.Thread(target=decide, name="test-decider")
    thread.start()
    return thread


def test_a_mutating_call_waits_for_approval_and_a_rejection_is_an_error_result(served: Served) -> None:
    target = served.base / "notes.txt"
    seen: list[dict[str, Any]] = []
    hook = served.app.client()  # one event cursor for both decisions

    async def write(content: str) -> Any:
        async with served.session() as client:
            return await client.call_tool("write_file", {"path": "notes.txt", "content": content})

    decider = _decide_next(hook, True, seen)
    approved = run_async(lambda: write("approved text"))
    decider.join(10)
    assert not approved.is_error, approved.content
    assert target.read_text() == "approved text"
    assert seen[0]["kind"] == "tool_approval" and seen[0]["payload"]["tool"] == "write_file"

    decider = _decide_next(hook, False, seen)
    rejected = run_async(lambda: write("rejected text"))
    decider.join(10)
    assert rejected.is_error
    assert "REJECTED" in rejected.content[0].text and "not that file" in rejected.content[0].text
    assert rejected.meta["status"] == "rejected"
    assert target.read_text() == "approved text"  # untouched


def test_paths_outside_the_project_are_refused_and_reads_inside_work(served: Served) -> None:
    (served.base / "inside.txt").write_text("inside the project\n")

    async def calls() -> Any:
        async with served.session() as client:
            outside = await client.call_tool("read_file", {"path": "/etc/passwd"})
            dotdot = await client.call_tool("read_file", {"path": "../../etc/hostname"})
            inside = await client.call_tool("read_file", {"path": "inside.txt"})
            bad = await client.call_tool("read_file", {"nope": 1})
            return outside, dotdot, inside, bad

    outside, dotdot, inside, bad = run_async(calls)
    for refused in (outside, dotdot):
        assert refused.is_error and "ACCESS DENIED" in refused.content[0].text
    assert not inside.is_error and "inside the project" in inside.content[0].text
    assert bad.is_error and "Parameter validation error" in bad.content[0].text


def test_context_files_and_the_discussion_are_resources(served: Served) -> None:
    (served.base / "ctx.py").write_text("def hello():\n    return 'secret-free'\n")
    ctrl = served.app.ctrl
    ctrl.call_on_main(lambda: ctrl.context.set_file_list("project_files", ["ctx.py"]), 5.0)
    served.app.client().post("/api/session/entries", {"role": "User", "content": "a remark to remember"})

    async def read() -> Any:
        async with served.session() as client:
            uris = [str(r.uri) for r in (await client.list_resources()).resources]
            ctx = await client.read_resource("slop://context/ctx.py")
            talk = await client.read_resource("slop://discussion/current")
            return uris, ctx.contents[0].text, talk.contents[0].text

    uris, ctx_text, talk_text = run_async(read)
    assert uris == ["slop://context/ctx.py", "slop://discussion/current"]
    assert "def hello" in ctx_text and "ctx.py" in ctx_text
    assert "a remark to remember" in talk_text


def test_without_the_token_or_from_another_site_nothing_is_served(served: Served) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with httpx2.Client(timeout=10) as http:
        missing = http.post(served.url, json=body, headers=accept)
        wrong = http.post(served.url, json=body, headers={**accept, "Authorization": "Bearer nope"})
        foreign_host = http.post(
            served.url, json=body, headers={**accept, **served.headers, "Host": "evil.test"}
        )
        foreign_origin = http.post(
            served.url, json=body, headers={**accept, **served.headers, "Origin": "http://evil.test"}
        )
    assert missing.status_code == 401 and wrong.status_code == 401
    assert foreign_host.status_code in (400, 421)
    assert foreign_origin.status_code == 403


def test_a_public_address_without_a_configured_token_is_refused(served: Served) -> None:
    reply = served.app.call("POST", "/api/mcp/serve", {"address": "0.0.0.0:0"}, check=False)
    assert reply.status == 400
    assert "configured" in reply.body["error"]["message"]
    bad = served.app.call("POST", "/api/mcp/serve", {"address": "nonsense"}, check=False)
    assert bad.status == 400 and "HOST:PORT" in bad.body["error"]["message"]


def test_stop_ends_serving(served: Served) -> None:
    status = served.app.call("DELETE", "/api/mcp/serve").body
    assert status["running"] is False
    with httpx2.Client(timeout=5) as http, pytest.raises(httpx2.ConnectError):
        http.post(served.url, json={}, headers=served.headers)


def test_agent_profiles_are_prompts(served: Served) -> None:
    body = {"system_prompt": "You review diffs for security holes.", "description": "security reviewer"}
    served.app.call("PUT", "/api/agents/reviewer", body)

    async def prompts() -> Any:
        async with served.session() as client:
            listed = (await client.list_prompts()).prompts
            got = await client.get_prompt("reviewer")
            try:
                await client.get_prompt("nobody")
            except Exception as exc:  # the SDK raises the server's error
                missing = str(exc)
            else:
                missing = ""
            return listed, got, missing

    listed, got, missing = run_async(prompts)
    assert {p.name: p.description for p in listed}["reviewer"] == "security reviewer"
    assert got.messages[0].content.text == "You review diffs for security holes."
    assert "no agent profile 'nobody'" in missing and "reviewer" in missing
