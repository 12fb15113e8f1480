"""Every endpoint of the Hook API against a real server, each reply checked against /openapi.json."""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from manual_slop.ai.messages import Message, ModelRequest
from manual_slop.dialogs import (
    AskDialog,
    ConfirmDialog,
    CostDialog,
    MMAApprovalDialog,
    MMASpawnApprovalDialog,
    ToolApprovalDialog,
    ToolResultDialog,
)
from manual_slop.governance.rules import Action, Rule, Trigger
from manual_slop.governance.run_log import RunKind, RunLogs, RunOutcome
from manual_slop.hooks import Conflict, HookTaskFailed, NotFound, RequestTimedOut
from manual_slop.mma.models import Ticket, Track
from manual_slop.schema import Field
from tests.integration.hooks.conftest import HookApp, wait_until
from tests.integration.test_controller import FakeBackend


def approve_in_thread(ctrl, dialog, timeout: float = 10.0) -> tuple[threading.Thread, list]:
    """A worker blocked on the clutch, as a tool call or MMA step would be."""
    outcome: list = []
    worker = threading.Thread(target=lambda: outcome.append(ctrl.request_approval(dialog, timeout=timeout)))
    worker.start()
    wait_until(lambda: ctrl.clutch.get(dialog.uid) is not None)
    return worker, outcome


def test_every_endpoint_answers_per_contract(hook_app_factory, app_dir: Path) -> None:
    # one external MCP server, disabled, whose program does not exist: nothing runs unasked
    ghost = app_dir / "no-such-mcp-server"
    (app_dir / "config.toml").write_text(f'[mcp.servers.ghost]\ncommand = "{ghost}"\nenabled = false\n')
    backend = FakeBackend(reply="pong")
    app: HookApp = hook_app_factory(backend=backend)
    ctrl, client = app.ctrl, app.client()

    status = client.status()
    assert status["mode"] == "headless" and status["pid"] == os.getpid() and status["status"] == "ok"
    wait_until(lambda: client.health()["healthy"])
    assert client.health()["frames"] > 0

    fields = client.state()
    assert set(fields) == set(ctrl.fields.names())
    assert fields["temperature"] == 0.0 and fields["current_provider"] == "local"
    assert client.get_value("ai_status") == "idle"

    task = client.set_value("temperature", 1)
    assert client.wait_for_task(task) == {"state": "done", "error": None}
    assert client.get_value("temperature") == 1.0  # validated and converted before queueing
    client.wait_for_task(client.click("btn_new_discussion", "design"))
    assert client.get_value("active_discussion") == "design"
    client.wait_for_task(client.select_list_item("discussions", "main"))
    assert client.get_value("active_discussion") == "main"

    worker, outcome = approve_in_thread(ctrl, ConfirmDialog("rm -rf build", "/proj"))
    [pending] = client.pending()
    assert pending["kind"] == "confirm_script" and pending["payload"]["script"] == "rm -rf build"
    client.approve(pending["id"], {"script": "rm -rf build/tmp"})
    worker.join(5)
    assert outcome[0].approved and outcome[0].payload["script"] == "rm -rf build/tmp"
    assert outcome[0].decider == "hook"

    answers: list[dict[str, Any]] = []
    asker = threading.Thread(
        target=lambda: answers.append(app.client().ask("Deploy?", "deploy", {"env": "prod"}))
    )
    asker.start()
    wait_until(lambda: client.pending() != [])
    client.approve(client.pending()[0]["id"], {"answer": "yes, once", "args": {"env": "staging"}})
    asker.join(5)
    assert answers == [
        {
            "approved": True,
            "answer": "yes, once",
            "args": {"env": "staging"},
            "id": answers[0]["id"],
            "reason": None,
        }
    ]

    request_id = client.send("ping")
    final = client.wait_for_request(request_id, timeout=10)
    # a stub backend's plain text names no provider, and it fits no window: those stay null
    assert final == {
        "state": "done",
        "response": "pong",
        "error": None,
        "provider": None,
        "model": None,
        "fallback": None,
        "context": None,
    }
    assert backend.calls[0]["message"] == "ping"
    client.wait_for_value("ai_status", lambda v: v == "done")

    backend.gate = threading.Event()  # the next request hangs until it is stopped
    slow = client.send("think hard")
    wait_until(lambda: len(backend.calls) == 2)  # the provider is working on it
    assert client.cancel(slow) == {"request_id": slow, "state": "cancelling"}
    stopped = client.wait_for_request(slow, timeout=5)
    assert stopped["state"] == "cancelled" and stopped["response"].startswith("half an ans")
    assert "[cut: stopped by the user]" in stopped["response"]
    with pytest.raises(Conflict):
        client.cancel(slow)
    backend.gate = None

    for i in range(3):
        ctrl.add_comms_entry({"kind": "request", "n": i})
        ctrl.add_tool_call({"tool": "read_file", "n": i})
    wait_until(lambda: len(client.comms()["entries"]) == 3)
    page = client.comms(since=0, limit=2)
    assert [e["n"] for e in page["entries"]] == [0, 1] and page["next"] == 2
    assert [e["n"] for e in client.comms(since=page["next"])["entries"]] == [2]
    assert client.comms(since=3) == {"entries": [], "next": 3, "dropped": 0}
    wait_until(lambda: len(client.tool_calls()["entries"]) == 3)
    assert [e["n"] for e in client.tool_calls()["entries"]] == [0, 1, 2]
    ctrl.state.tool_calls_budget.max_bytes = 1  # the next entry alone is over it: the older go
    ctrl.add_tool_call({"tool": "read_file", "n": 3})
    wait_until(lambda: client.tool_calls(since=3)["entries"])
    page = client.tool_calls()
    assert [e["n"] for e in page["entries"]] == [3] and (page["next"], page["dropped"]) == (4, 3)

    session = client.session()
    assert session["discussion"] == "main"
    assert [(e["role"], e["content"]) for e in session["entries"]] == [
        ("User", "ping"),
        ("AI", "pong"),
        ("User", "think hard"),
        ("AI", "half an ans\n\n[cut: stopped by the user]"),  # the partial answer, marked as cut
    ]
    client.add_session_entry("System", "note to self")
    assert client.session()["entries"][-1]["content"] == "note to self"  # read-your-writes

    ctrl.event_queue.put_threadsafe(
        "mma_state_update",
        {
            "status": "running",
            "active_tier": "Tier 3",
            "tickets": [{"id": "T1", "description": "do it", "depends_on": ["T0"]}],
            "track": {"id": "track-1", "title": "First"},
        },
    )
    mma = client.mma_status()
    wait_until(lambda: client.mma_status()["status"] == "running")
    mma = client.mma_status()
    assert mma["active_tier"] == "Tier 3" and mma["active_track"]["id"] == "track-1"
    assert mma["tickets"] == [
        {
            "id": "T1",
            "description": "do it",
            "status": "todo",
            "depends_on": ["T0"],
            "assigned_to": None,
            "retry_count": 0,
            "blocked_reason": None,
            "model_override": None,
        }
    ]

    # memory: notes, profile, recall over the stored conversation, the index
    assert app.call("GET", "/api/memory/notes").body == {"notes": []}
    created = app.call("POST", "/api/memory/notes", {"content": "tabs, never spaces", "category": "style"})
    assert created.status == 201 and created.body["note"]["category"] == "style"
    note_id = created.body["note"]["id"]
    listed = app.call("GET", "/api/memory/notes").body["notes"]
    assert [n["content"] for n in listed] == ["tabs, never spaces"]
    assert app.call("POST", "/api/memory/notes", {"content": "x", "category": "a/b"}).status == 400
    assert app.call("DELETE", f"/api/memory/notes/{note_id}").body == {"deleted": note_id}
    assert app.call("DELETE", f"/api/memory/notes/{note_id}").status == 404
    assert app.call("DELETE", "/api/memory/notes/" + "9" * 40).status == 404
    twice = ["prefers short answers", "prefers short answers"]
    profile = app.call("PUT", "/api/memory/profile", {"lines": twice})
    assert [line["content"] for line in profile.body["lines"]] == ["prefers short answers"]
    assert app.call("GET", "/api/memory/profile").body["enabled"] is True
    recalled = app.call("POST", "/api/memory/recall", {"query": "pong", "limit": 3}).body["results"]
    assert recalled and recalled[0]["conversation"] == "discussion:main"
    assert app.call("POST", "/api/memory/recall", {"query": "x", "limit": 0}).status == 400
    job = app.call("POST", "/api/rag/index", {})
    assert job.status == 202 and job.body["job_id"]
    wait_until(lambda: app.call("GET", "/api/rag/status").body["state"] != "indexing", timeout=60)
    assert app.call("GET", "/api/rag/status").body["state"] == "idle"
    assert app.call("POST", "/api/rag/query", {"query": "anything", "top_k": 2}).status == 200
    assert app.call("POST", "/api/rag/index", {"paths": ["../outside.py"]}).status == 400
    assert app.call("POST", "/api/rag/cancel").body == {"cancelled": False}

    # agent profiles: create, read, list, refuse bad input, activate, delete (moved aside)
    assert app.call("GET", "/api/agents").body == {"agents": [], "problems": [], "active": ""}
    saved = app.call("PUT", "/api/agents/coder", {"system_prompt": "You write code.", "tools": ["read_file"]})
    assert saved.status == 200 and saved.body["agent"]["tools"] == ["read_file"]
    assert app.call("GET", "/api/agents/coder").body["agent"]["system_prompt"] == "You write code."
    assert [a["key"] for a in app.call("GET", "/api/agents").body["agents"]] == ["coder"]
    assert app.call("PUT", "/api/agents/coder", {"system_prompt": "x", "tools": ["nope"]}).status == 400
    assert app.call("PUT", "/api/agents/..", {"system_prompt": "x"}).status == 400
    assert app.call("PUT", "/api/agents/coder", {"system_prompt": ""}).status == 400  # the schema's minLength
    assert app.call("GET", "/api/agents/nobody").status == 404
    client.wait_for_task(client.set_value("active_agent", "coder"))
    assert app.call("GET", "/api/agents").body["active"] == "coder"
    deleted = app.call("DELETE", "/api/agents/coder").body
    assert deleted["deleted"] == "coder" and "deleted_agents" in deleted["moved_to"]
    assert app.call("GET", "/api/agents").body["active"] == ""  # its agent is gone
    assert app.call("DELETE", "/api/agents/coder").status == 404

    # skills: listed with their switch, switched off for the project, an unknown name 404
    tidy = ctrl.paths.project_file.parent / "skills" / "tidy" / "SKILL.md"
    tidy.parent.mkdir(parents=True)
    tidy.write_text("---\nname: tidy\ndescription: Tidy up.\n---\nBody\n", encoding="utf-8")
    skills = app.call("GET", "/api/skills").body["skills"]
    assert [(s["name"], s["enabled"]) for s in skills] == [("tidy", True)]
    assert app.call("PUT", "/api/skills/tidy", {"enabled": False}).body["skill"]["enabled"] is False
    assert app.call("PUT", "/api/skills/nope", {"enabled": True}).status == 404
    assert app.call("PUT", "/api/skills/tidy", {"enabled": "no"}).status == 400

    # the app's own MCP server: started on a free port, refused on a bad address, stopped
    assert app.call("GET", "/api/mcp/serve").body == {"running": False, "url": ""}
    served = app.call("POST", "/api/mcp/serve", {"address": "127.0.0.1:0"}).body
    assert served["running"] is True and served["url"].startswith("http://127.0.0.1:")
    assert app.call("GET", "/api/mcp/serve").body == {"running": True, "url": served["url"]}
    assert app.call("POST", "/api/mcp/serve", {"address": "no port"}).status == 400
    assert app.call("DELETE", "/api/mcp/serve").body["running"] is False

    # approval rules: read, replace (saved and applied), a bad list refused with every problem
    rules = app.call("GET", "/api/approval/rules").body
    assert rules["policy"] == "manual" and rules["rules"] == [] and len(rules["defaults"]) == 4
    put = app.call(
        "PUT", "/api/approval/rules", {"rules": [{"name": "no-x", "trigger": "on_step", "action": "deny"}]}
    )
    assert put.status == 200 and [r["name"] for r in put.body["rules"]] == ["no-x"]
    refused = app.call(
        "PUT", "/api/approval/rules", {"rules": [{"name": "no-x", "trigger": "x", "action": "ask"}]}
    )
    assert refused.status == 400 and "approval.rules[0] 'no-x': trigger:" in refused.body["error"]["message"]
    assert app.call("PUT", "/api/approval/rules", {"rules": []}).body["rules"] == []

    # plans: a planner whose answer is no plan leaves an invalid plan that never runs
    started = app.call("POST", "/api/plan", {"goal": "Build a tiny REST API"})
    assert started.status == 200
    plan_id = started.body["plan_id"]
    invalid = lambda: app.call("GET", f"/api/plans/{plan_id}").body["plan"]["status"] == "invalid"  # noqa: E731
    wait_until(invalid, timeout=20)
    plan = app.call("GET", f"/api/plans/{plan_id}").body["plan"]
    assert plan["subtasks"] == [] and any("[rule: shape]" in e for e in plan["metadata"]["errors"])
    assert [p["id"] for p in app.call("GET", "/api/plans").body["plans"]] == [plan_id]
    assert app.call("GET", "/api/plans/nope").status == 404
    assert app.call("POST", "/api/plan", {"goal": "   "}).status == 400
    # a DAG edit: a link added, a cycle refused
    track = Track("t-edit", "Edit me", tickets=[Ticket("a", "first"), Ticket("b", "second")])
    ctrl.mma.store().save(track)
    ctrl.mma.add_track(track)
    edited = app.call("POST", "/api/mma/tickets/b/depends_on", {"add": ["a"], "track_id": "t-edit"})
    assert edited.status == 200 and edited.body["ticket"]["depends_on"] == ["a"]
    cycle = app.call("POST", "/api/mma/tickets/a/depends_on", {"add": ["b"], "track_id": "t-edit"})
    assert cycle.status == 400 and "cycle" in cycle.body["error"]["message"]
    assert track.ticket("a").depends_on == []
    graph = app.call("GET", "/api/mma/graph?track=t-edit&format=mermaid")
    assert graph.status == 200 and graph.body["mermaid"].startswith("flowchart LR\n")

    diagnostics = client.diagnostics()
    assert diagnostics["fps"] >= 0 and diagnostics["metrics"]["window"] > 0

    # usage: a response entry priced by genai-prices, one at an unknown price (null, never 0)
    ctrl.add_comms_entry({"kind": "response", "provider": "gemini", "model": "gemini-2.5-flash",
                          "payload": {"usage": {"input_tokens": 1_000_000, "output_tokens": 0}}})  # fmt: skip
    ctrl.add_comms_entry({"kind": "response", "provider": "openai_compatible", "model": "no-such-model",
                          "payload": {"usage": {"input_tokens": 10, "output_tokens": 1}}})  # fmt: skip
    usage = app.call("GET", "/api/usage").body
    assert usage["by_model"]["gemini / gemini-2.5-flash"]["usd"] == 0.3  # $0.30 per million input
    assert usage["by_model"]["openai_compatible / no-such-model"]["usd"] is None
    assert usage["total"]["unknown_calls"] == 1 and client.usage()["total"] == usage["total"]

    # run logs (this backend keeps none: one is written as the AI client would)
    assert app.call("GET", "/api/runs").body == {"session": ctrl.session_log.session_id, "runs": []}
    run = RunLogs.for_session(ctrl.session_log).open(RunKind.CHAT, "discussion:main")
    run.request(ModelRequest(system="be brief", context="", messages=[Message.user("hi")]))
    run.end(RunOutcome.ANSWERED)
    assert [r["id"] for r in app.call("GET", "/api/runs").body["runs"]] == [run.run_id]
    assert app.call("GET", f"/api/runs/{run.run_id}").body["total"] == 3
    assert app.call("GET", f"/api/runs/{run.run_id}/requests/1").body["sections"][0]["text"] == "be brief"

    # external MCP servers (issue 19)
    assert [s["name"] for s in app.call("GET", "/api/mcp/servers").body["servers"]] == ["ghost"]
    assert app.call("POST", "/api/mcp/servers/ghost/restart").status == 409  # disabled
    assert app.call("POST", "/api/mcp/servers/ghost/enable").body["server"]["enabled"] is True
    assert app.call("POST", "/api/mcp/servers/ghost/restart").status == 200  # fails in the background
    assert app.call("POST", "/api/mcp/servers/ghost/disable").body["server"]["enabled"] is False
    assert app.call("POST", "/api/mcp/servers/nope/restart").status == 404

    assert client.openapi()["openapi"] == "3.1.0"

    types = [e["type"] for e in client.events()]
    for expected in (
        "pending_added",
        "pending_resolved",
        "ai_status",
        "response",
        "comms",
        "tool_call",
        "mma_state",
    ):
        assert expected in types

    task_reply = app.call("GET", f"/api/gui/task/{task}")
    assert task_reply.status == 200 and task_reply.body["state"] == "done"
    assert app.call("POST", "/api/shutdown").status == 202
    wait_until(lambda: ctrl.should_stop())

    missing = {op for op in app.contract.operations()} - {(m, t) for m, t, s in app.contract.seen if s < 300}
    assert not missing, f"endpoints never exercised: {sorted(missing)}"


def test_unknown_ids_are_404(hook_app: HookApp) -> None:
    client = hook_app.client()
    for call in (
        lambda: client.get_value("no_such_field"),
        lambda: client.task("nope-1"),
        lambda: client.request_status("nope"),
        lambda: client.approve("nope"),
    ):
        with pytest.raises(NotFound):
            call()


def test_an_unbuilt_action_is_queued_and_its_task_says_not_available_yet(hook_app: HookApp) -> None:
    # Every feature of the issues is built now; reserve a name the way a future feature would.
    hook_app.ctrl.actions.register_unavailable("btn_future_feature", "A feature still to come", "lands later")
    client = hook_app.client()
    task = client.click("btn_future_feature")
    with pytest.raises(HookTaskFailed, match="not available yet"):
        client.wait_for_task(task)
    assert client.task(task)["state"] == "error"


def test_send_without_an_ai_backend_is_a_conflict(hook_app: HookApp) -> None:
    with pytest.raises(Conflict, match="not available yet"):
        hook_app.client().send("hello")
    assert hook_app.client().get_value("ai_status") == "idle"
    events = hook_app.client().events()
    assert not [e for e in events if e["type"] == "error"]  # the caller's mistake is its reply only


def test_resolving_twice_is_a_conflict_and_bad_edits_are_refused(hook_app: HookApp) -> None:
    ctrl, client = hook_app.ctrl, hook_app.client()
    worker, outcome = approve_in_thread(ctrl, ToolApprovalDialog("write_file", {"path": "a.py"}, "+x"))
    uid = client.pending()[0]["id"]
    bad = hook_app.call("POST", f"/api/pending/{uid}", {"approved": True, "payload": {"tool": "rm"}})
    assert bad.status == 400 and "cannot be edited" in bad.body["error"]["message"]
    client.reject(uid, reason="not now")
    worker.join(5)
    assert not outcome[0].approved and outcome[0].reason == "not now"
    with pytest.raises(Conflict, match="already resolved"):
        client.approve(uid)


def test_pending_lists_every_dialog_kind_with_its_payload(hook_app: HookApp) -> None:
    ctrl, client = hook_app.ctrl, hook_app.client()
    dialogs = [
        ConfirmDialog("ls", "/p"),
        ToolApprovalDialog("edit_file", {"path": "x"}, "@@"),
        MMAApprovalDialog("T1", "step"),
        MMASpawnApprovalDialog("T2", "tier3-worker", "do", "ctx"),
        AskDialog("ok?", "shell", {"command": "ls"}),
        ToolResultDialog("read_file", {"path": "a.py"}, "success", "print(1)"),
        CostDialog("tr_1", 0.2, 0.0, 0.15, "over $0.15"),
    ]
    ctrl.clutch.set_rules(  # results and spend are only looked at: rules make them ask
        [
            Rule("results", Trigger.AFTER_TOOL, Action.ASK),
            Rule("spend", Trigger.COST_OVER, Action.ASK, threshold_usd=0.1),
        ]
    )
    workers = [approve_in_thread(ctrl, d) for d in dialogs]
    pending = client.pending()  # each entry validated against its kind's payload schema
    kinds = ["confirm_script", "tool_approval", "mma_step", "mma_spawn", "ask", "tool_result", "cost_check"]
    assert [p["kind"] for p in pending] == kinds
    assert [p["rule"] for p in pending] == ["policy=manual"] * 5 + ["results", "spend"]  # the rule that asked
    client.resolve(pending[3]["id"], False, abort=True)
    for entry in pending[:3] + pending[4:]:
        client.approve(entry["id"])
    for worker, _ in workers:
        worker.join(5)
    decisions = [outcome[0] for _, outcome in workers]
    assert [d.approved for d in decisions] == [True, True, True, False, True, True, True]
    assert decisions[3].abort is True
    assert client.pending() == []


def test_a_stalled_main_thread_gives_408_and_the_call_is_never_run_late(hook_app_factory) -> None:
    backend = FakeBackend()
    app = hook_app_factory(ticker=False, main_timeout=0.3, backend=backend)
    reply = app.call("POST", "/api/send", {"message": "hi"})
    assert reply.status == 408 and reply.body["error"]["code"] == "timeout"
    assert app.call("GET", "/api/gui/state").status == 408
    app.ctrl.run_frame()  # the main thread wakes up later: the abandoned send must not happen
    app.ctrl.run_frame()
    assert backend.calls == [] and app.ctrl.state.ai_status == "idle"


def test_events_are_never_lost_between_client_calls(hook_app: HookApp) -> None:
    ctrl, client = hook_app.ctrl, hook_app.client()
    client.discard_events()
    for i in range(5):
        ctrl.publish("ai_status", {"status": f"s{i}"})
        ctrl.publish("comms", {"n": i})
    assert client.wait_for_event("comms", lambda p: p["n"] == 3)["payload"]["n"] == 3
    assert client.wait_for_event("ai_status")["payload"]["status"] == "s0"  # skipped, not lost
    rest = client.events()
    assert [e["payload"].get("n", e["payload"].get("status")) for e in rest] == [
        0, "s1", 1, "s2", 2, "s3", "s4", 4,
    ]  # fmt: skip
    assert client.events() == []

    polls_before = len(event_polls(hook_app))
    late = threading.Timer(0.2, lambda: ctrl.publish("response", {"request_id": "r"}))
    late.start()
    assert client.wait_for_event("response", timeout=30)["payload"]["request_id"] == "r"
    late.join()
    assert len(event_polls(hook_app)) == polls_before + 1  # one long poll, woken by the event


def event_polls(app: HookApp) -> list[dict[str, Any]]:
    return [e for e in app.ctrl.session_log.read("apihooks") if e["path"] == "/api/events"]


def test_events_report_drops_and_payloads_are_always_json(hook_app: HookApp) -> None:
    ctrl = hook_app.ctrl
    seq = ctrl.publish("odd", {"path": Path("/tmp/x"), "set": {1}, "nan": float("nan"), "obj": object()})
    reply = hook_app.call("GET", f"/api/events?since={seq - 1}&limit=1")
    assert reply.status == 200
    payload = reply.body["events"][0]["payload"]
    assert payload["path"] == "/tmp/x" and payload["set"] == [1] and payload["nan"] is None
    assert payload["obj"].startswith("<object object")
    assert reply.body["next"] == seq and reply.body["dropped"] == 0


def test_long_poll_waits_then_returns_empty(hook_app: HookApp) -> None:
    last = hook_app.ctrl.journal.last_seq
    reply = hook_app.call("GET", f"/api/events?since={last + 100}&timeout=0.3")
    assert reply.body == {"events": [], "next": last + 100, "dropped": 0}


def test_stop_wakes_long_polls_and_blocked_asks(hook_app_factory) -> None:
    app = hook_app_factory()
    replies: list[Any] = []
    last = app.ctrl.journal.last_seq
    poller = threading.Thread(
        target=lambda: replies.append(
            app.call("GET", f"/api/events?since={last + 10}&timeout=30", timeout=20)
        )
    )
    asker = threading.Thread(
        target=lambda: replies.append(app.call("POST", "/api/ask", {"question": "q?"}, timeout=20))
    )
    poller.start()
    asker.start()
    wait_until(lambda: app.ctrl.clutch.pending() != [])
    assert app.server.stop() == []  # joined within its 2 s budget
    poller.join(5)
    asker.join(5)
    assert sorted(r.status for r in replies) == [200, 409]
    audit = app.ctrl.session_log.read("audit")
    assert audit[-1]["decider"] == "shutdown"


def test_every_request_is_logged_without_headers_or_token(hook_app_factory) -> None:
    app = hook_app_factory(token="s3cret-token")
    client = app.client()
    client.get_value("ai_status")
    app.call("GET", "/api/gui/state", auth=False)
    log_text = (app.ctrl.session_log.root / "apihooks.log").read_text()
    assert "s3cret-token" not in log_text and "Authorization" not in log_text
    entries = [json.loads(line) for line in log_text.splitlines()]
    assert {k for e in entries for k in e} <= {"method", "path", "status", "ms", "error", "local_ts"}
    assert entries[-1] == {**entries[-1], "method": "GET", "path": "/api/gui/state", "status": 401}
    assert any(e["path"] == "/api/gui/value/ai_status" and e["status"] == 200 for e in entries)


def test_token_is_required_everywhere_but_status(hook_app_factory) -> None:
    app = hook_app_factory(token="s3cret-token")
    assert app.call("GET", "/status", auth=False).status == 200
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic s3cret-token"}):
        reply = app.call("GET", "/api/gui/state", auth=False, headers=headers)
        assert reply.status == 401 and reply.body["error"]["code"] == "unauthorized"
    assert app.call("GET", "/openapi.json", auth=False).status == 401
    assert app.call("POST", "/status", auth=False).status == 401  # only GET /status is open
    assert app.call("GET", "/api/nowhere", auth=False).status == 401  # no probing without the token
    assert app.call("GET", "/api/gui/state").status == 200
    with pytest.raises(RequestTimedOut):
        app.client().ask("timeout?", timeout_s=0.2)


def test_a_server_bug_is_a_json_500_with_the_traceback_in_the_log(hook_app: HookApp, caplog) -> None:
    def broken() -> str:
        raise RuntimeError("getter bug")

    hook_app.ctrl.fields.register("broken", Field(str, "", "a field whose getter fails"), broken)
    with caplog.at_level(logging.ERROR):
        reply = hook_app.call("GET", "/api/gui/value/broken")
    assert reply.status == 500 and reply.body["error"]["code"] == "internal"
    assert "RuntimeError" in reply.body["error"]["message"]
    logged = [r for r in caplog.records if r.name == "manual_slop.hooks.server" and r.exc_info]
    assert logged and "GET /api/gui/value/broken failed" in logged[0].getMessage()
    assert str(logged[0].exc_info[1]) == "getter bug"
    assert hook_app.call("GET", "/api/gui/value/ai_status").status == 200  # still serving


def test_an_external_read_only_tool_inside_the_project_is_approved_by_policy(hook_app: HookApp) -> None:
    (hook_app.ctrl.base_dir() / "notes.md").write_text("# notes\n")
    client = hook_app.client()
    inside = client.post(
        "/api/ask", {"question": "read?", "tool": "read_file", "args": {"file_path": "notes.md"}}
    )
    assert inside["approved"] is True and client.pending() == []
    audit = hook_app.ctrl.session_log.read("audit")[-1]
    assert audit["decider"] == "policy" and audit["rule"] == "read-only tool read_file inside the project"

    outside: list = []
    thread = threading.Thread(
        target=lambda: outside.append(
            client.post(
                "/api/ask", {"question": "read?", "tool": "read_file", "args": {"file_path": "/etc/hosts"}}
            )
        )
    )
    thread.start()
    wait_until(lambda: len(client.pending()) == 1)  # outside the project: the user decides
    client.reject(client.pending()[0]["id"])
    thread.join(10)
    assert outside[0]["approved"] is False


def test_scalar_fields_are_read_without_the_main_thread_but_never_ahead_of_a_queued_write(
    hook_app_factory,
) -> None:
    app = hook_app_factory(ticker=False, main_timeout=0.3)
    client = app.client()
    assert client.get_value("ai_status") == "idle"  # answered with no frame loop running at all
    assert app.call("GET", "/api/gui/value/available_models").status == 408  # a list needs the main thread
    client.set_value("ai_input", "queued")  # a write waits for the main thread...
    stale = app.call("GET", "/api/gui/value/ai_input")
    assert stale.status == 408  # ...so a read after it waits too, rather than answer the old value
    app.ctrl.run_frame()
    assert client.get_value("ai_input") == "queued"  # settled: lock-free again, and fresh
    assert app.ctrl.tasks_settled()
