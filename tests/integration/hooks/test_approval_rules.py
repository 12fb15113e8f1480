"""GET and PUT /api/approval/rules over real HTTP: the rules, their problems and the built-in
defaults; a PUT that lists every problem (rule and key) and changes nothing; a PUT saved to the
project file and applied at once; a rule's timeout policy seen from outside (an escalated
dialog in /api/pending, an approval on timeout that is no 408)."""

from __future__ import annotations

import threading
import time
import tomllib
from pathlib import Path
from typing import Any

from tests.fakes import Call, OpenAIFake, Reply
from tests.integration.hooks.conftest import HookApp, deepseek_app, wait_until

ROUTE = "/api/approval/rules"
BROKEN = '[project]\nname = "demo"\n\n[[approval.rules]]\ntool = "run_shell"\npattern = "("\n'


def ask_in_thread(app: HookApp, tool: str, args: dict[str, Any]) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(app.client().request_confirmation(tool, args)))
    thread.start()
    return thread, out


def project_rules(app: HookApp) -> list[dict[str, Any]]:
    path = app.ctrl.paths.project_file
    data = tomllib.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    return data.get("approval", {}).get("rules", [])


def test_get_lists_rules_problems_and_the_built_in_defaults(hook_app_factory, app_dir: Path) -> None:
    (app_dir / "demo.toml").write_text(BROKEN)
    app = hook_app_factory(project_file=app_dir / "demo.toml")
    body = app.call("GET", ROUTE).body  # checked against the served schema
    assert body["policy"] == "manual" and body["rules"] == [] and body["inactive"] == []
    [problem] = body["problems"]
    assert (problem["index"], problem["key"]) == (
        0,
        "pattern",
    ) and "not a valid regular expression" in problem["message"]
    assert [d["name"] for d in body["defaults"]] == [
        "policy=manual",
        "policy=allow_list",
        "policy=auto",
        "policy=pass",
    ]


def test_a_bad_put_lists_every_problem_and_changes_nothing(hook_app: HookApp) -> None:
    good = {"name": "ok", "trigger": "on_spawn", "action": "allow"}
    before = project_rules(hook_app)
    reply = hook_app.call(
        "PUT",
        ROUTE,
        {
            "rules": [
                good,
                {"name": "late", "trigger": "before_tool", "action": "deny", "on_timeout": "approve"},
                {"name": "cost", "trigger": "cost_over", "action": "ask"},
                {"name": "ok", "trigger": "on_step", "action": "ask"},
                {"trigger": "sometimes", "action": "ask", "colour": "red"},
            ]
        },
    )
    assert reply.status == 400 and reply.body["error"]["code"] == "bad_request"
    message = reply.body["error"]["message"]
    for expected in (
        "6 problem(s); nothing was changed",
        "approval.rules[1] 'late': on_timeout: only an ask rule waits for a decision",
        "approval.rules[2] 'cost': threshold_usd: a cost_over rule needs threshold_usd",
        "approval.rules[3] 'ok': name: is already the name of approval.rules[0]",
        "approval.rules[4]: colour: unknown key",
        "approval.rules[4]: name: is required",
        "approval.rules[4]: trigger: expected one of before_tool",
    ):
        assert expected in message, message
    assert hook_app.call("GET", ROUTE).body["rules"] == [] and project_rules(hook_app) == before
    assert [e for e in hook_app.client().events() if e["type"] == "error"] == []  # no app error: a reply
    assert hook_app.call("PUT", ROUTE, {"rules": "all"}).status == 400  # the schema: a list
    assert hook_app.call("PUT", ROUTE, {}).status == 400


def test_a_put_is_saved_to_the_project_file_and_applied_at_once(hook_app: HookApp) -> None:
    rules = [
        {"name": "no-deploy", "trigger": "before_tool", "tool": "deploy*", "action": "deny", "priority": 10},
        {"tool": "run_shell_command", "pattern": "^ls( |$)"},  # the first format, still accepted
    ]
    client = hook_app.client()
    client.wait_for_task(client.set_value("approval_policy", "allow_list"))
    body = hook_app.call("PUT", ROUTE, {"rules": rules}).body
    assert [r["name"] for r in body["rules"]] == ["no-deploy", "tool=run_shell_command pattern=^ls( |$)"]
    assert body["policy"] == "allow_list" and body["problems"] == []
    assert project_rules(hook_app) == body["rules"]  # written as rules of the current format
    denied = client.request_confirmation("deploy_prod", {"env": "prod"})
    assert denied["approved"] is False and denied["reason"] == "approval rule 'no-deploy' denies this"
    assert client.request_confirmation("run_shell_command", {"command": "ls -la"})["approved"] is True
    assert client.pending() == []
    audit = hook_app.ctrl.session_log.read("audit")
    assert [(e["decider"], e["rule"]) for e in audit] == [
        ("policy", "no-deploy"),
        ("policy", "tool=run_shell_command pattern=^ls( |$)"),
    ]
    assert client.get_value("approval_rules") == body["rules"]
    # the policy decides which rules take part: under manual, allow rules rest
    client.wait_for_task(client.set_value("approval_policy", "manual"))
    assert hook_app.call("GET", ROUTE).body["inactive"] == ["tool=run_shell_command pattern=^ls( |$)"]


def test_an_escalated_dialog_is_marked_in_pending_and_waits_on(hook_app: HookApp) -> None:
    rule = {"name": "slow-deploy", "trigger": "before_tool", "tool": "deploy", "action": "ask"}
    rule.update(timeout_s=0.2, on_timeout="escalate")
    assert hook_app.call("PUT", ROUTE, {"rules": [rule]}).status == 200
    client = hook_app.client()
    thread, out = ask_in_thread(hook_app, "deploy", {"env": "prod"})
    wait_until(lambda: any(p.get("escalated") for p in client.pending()))
    [pending] = client.pending()
    assert (pending["rule"], pending["on_timeout"], pending["escalated"]) == ("slow-deploy", "escalate", True)
    assert out == []  # still waiting, past its timeout
    events = [e for e in client.events() if e["type"] == "pending_escalated"]
    assert events and events[0]["payload"]["id"] == pending["id"]
    wait_until(lambda: any(n["level"] == "error" for n in client.get_value("notifications")))
    assert any("slow-deploy" in n["message"] for n in client.get_value("notifications"))
    assert any(d["escalated"] for d in client.get_value("pending_dialogs"))  # the GUI's mirror
    client.approve(pending["id"])
    thread.join(5)
    assert out[0]["approved"] is True
    audit = hook_app.ctrl.session_log.read("audit")
    assert [(e["event"], e["rule"]) for e in audit] == [
        ("escalated", "slow-deploy"),
        ("decision", "slow-deploy"),
    ]


def test_a_rule_that_approves_on_timeout_answers_the_ask(hook_app: HookApp) -> None:
    rule = {
        "name": "ls-later",
        "trigger": "before_tool",
        "action": "ask",
        "timeout_s": 0.2,
        "on_timeout": "approve",
    }
    assert hook_app.call("PUT", ROUTE, {"rules": [rule]}).status == 200
    started = time.monotonic()
    answer = hook_app.client().request_confirmation("run_shell_command", {"command": "ls"})
    assert answer["approved"] is True and "rule 'ls-later' approves then" in answer["reason"]
    assert time.monotonic() - started < 5
    [entry] = hook_app.ctrl.session_log.read("audit")
    assert (entry["decider"], entry["rule"]) == ("timeout", "ls-later")


def test_an_on_error_rule_ends_a_chat_request_through_the_real_client(
    hook_app_factory, app_dir: Path
) -> None:
    with OpenAIFake() as fake:
        app, api = deepseek_app(hook_app_factory, fake.base_url)
        rule = {"name": "stop-on-missing", "trigger": "on_error", "tool": "read_file", "action": "deny"}
        assert app.call("PUT", ROUTE, {"rules": [rule]}).status == 200
        fake.push(
            Reply("Let me look.", [Call("read_file", {"path": "missing.py"})]),
            Reply("It is not there; I will invent it."),  # never asked: the request ended
        )
        final = api.wait_for_request(api.send("What is in missing.py?"), timeout=20)
        assert final["state"] == "cancelled", final
        assert "approval rule 'stop-on-missing' ended the request after read_file failed" in str(final)
        assert len(fake.model_calls()) == 1
    audit = app.ctrl.session_log.read("audit")
    assert [(e["kind"], e["decider"], e["rule"]) for e in audit] == [
        ("tool_result", "policy", "stop-on-missing")
    ]
