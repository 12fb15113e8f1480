"""The Execution Clutch deciding by rules: deny and allow at once, ask with the rule's own
timeout and what its timeout does (reject, approve, keep waiting, escalate), results that only
rules stop, and an audit entry naming the rule for every decision."""

from __future__ import annotations

import time

import pytest

from manual_slop.clutch import ExecutionClutch
from manual_slop.dialogs import ConfirmDialog, Decider, MMASpawnApprovalDialog, ToolResultDialog
from manual_slop.governance.rules import Action, OnTimeout, Rule, Trigger
from tests.unit.test_clutch import Recorder, submit_in_thread, wait_pending

SHORT = 0.2  # a rule's timeout in these tests


def clutch_with(*rules: Rule, policy: str = "allow_list") -> tuple[ExecutionClutch, Recorder]:
    rec = Recorder()
    return ExecutionClutch(rec.audit_sink, rec.publish, policy, rules), rec


def asking(on_timeout: OnTimeout, timeout_s: float | None = SHORT) -> Rule:
    return Rule("shell-asks", Trigger.BEFORE_TOOL, Action.ASK, tool="run_shell", timeout_s=timeout_s,
                on_timeout=on_timeout)  # fmt: skip


def decisions(rec: Recorder) -> list[dict]:
    return [e for e in rec.audit if e["event"] == "decision"]


def test_deny_rejects_at_once_and_tells_the_model_which_rule() -> None:
    clutch, rec = clutch_with(Rule("no-rm", Trigger.BEFORE_TOOL, Action.DENY, pattern=r"rm -rf"))
    decision = clutch.submit(ConfirmDialog("rm -rf /", "."), timeout=30)
    assert not decision.approved and decision.decider == Decider.POLICY and decision.rule == "no-rm"
    assert decision.reason == "approval rule 'no-rm' denies this"
    assert rec.events == [] and clutch.pending() == []
    assert [(e["decider"], e["rule"], e["approved"]) for e in rec.audit] == [("policy", "no-rm", False)]


def test_allow_approves_at_once_and_is_audited_with_the_rule() -> None:
    clutch, rec = clutch_with(Rule("spawns", Trigger.ON_SPAWN, Action.ALLOW))
    decision = clutch.submit(MMASpawnApprovalDialog("T1", "tier3-worker", "p", "c"), timeout=30)
    assert decision.approved and decision.rule == "spawns"
    assert [(e["kind"], e["rule"]) for e in rec.audit] == [("mma_spawn", "spawns")]


def test_reject_on_timeout_after_the_rules_own_timeout() -> None:
    clutch, rec = clutch_with(asking(OnTimeout.REJECT))
    started = time.monotonic()
    decision = clutch.submit(ConfirmDialog("make", "."), timeout=30)  # the app's timeout: not used
    assert time.monotonic() - started < 5
    assert not decision.approved and decision.decider == Decider.TIMEOUT and decision.rule == "shell-asks"
    assert decision.reason == f"no decision within {SHORT:g} s"
    assert [e["rule"] for e in decisions(rec)] == ["shell-asks"]
    assert [name for name, _ in rec.events] == ["pending_added", "pending_resolved"]
    assert rec.events[0][1]["rule"] == "shell-asks" and rec.events[0][1]["on_timeout"] == "reject"


def test_approve_on_timeout_approves_naming_the_rule() -> None:
    clutch, rec = clutch_with(asking(OnTimeout.APPROVE))
    decision = clutch.submit(ConfirmDialog("make", "."), timeout=30)
    assert decision.approved and decision.decider == Decider.TIMEOUT and decision.rule == "shell-asks"
    assert "rule 'shell-asks' approves then" in decision.reason
    assert [(e["approved"], e["decider"], e["rule"]) for e in decisions(rec)] == [
        (True, "timeout", "shell-asks")
    ]


def test_keep_waiting_outlives_its_timeout_until_a_human_decides() -> None:
    clutch, rec = clutch_with(asking(OnTimeout.KEEP_WAITING))
    dialog = ConfirmDialog("make", ".")
    thread, out = submit_in_thread(clutch, dialog, timeout=30)
    wait_pending(clutch)
    time.sleep(SHORT * 3)  # well past the rule's timeout
    assert clutch.pending() == [dialog] and out == [] and rec.audit == []
    assert not dialog.to_dict()["escalated"]
    clutch.resolve(dialog.uid, True, decider=Decider.HOOK)
    thread.join(5)
    assert out[0].approved and out[0].decider == "hook"
    # a human's decision names the rule that asked
    assert [(e["decider"], e["rule"], e["escalated"]) for e in decisions(rec)] == [
        ("hook", "shell-asks", False)
    ]


def test_escalate_marks_notifies_audits_then_keeps_waiting() -> None:
    clutch, rec = clutch_with(asking(OnTimeout.ESCALATE))
    dialog = ConfirmDialog("make", ".")
    thread, out = submit_in_thread(clutch, dialog, timeout=30)
    wait_pending(clutch)
    deadline = time.monotonic() + 5
    while not any(name == "pending_escalated" for name, _ in rec.events):
        assert time.monotonic() < deadline, "never escalated"
        time.sleep(0.01)
    assert out == [] and clutch.pending() == [dialog] and dialog.to_dict()["escalated"] is True
    [(_, escalated)] = [(n, p) for n, p in rec.events if n == "pending_escalated"]
    assert escalated["id"] == dialog.uid and escalated["escalated"] is True
    assert "rule 'shell-asks' escalates it" in escalated["message"]
    [entry] = rec.audit
    assert (entry["event"], entry["id"], entry["rule"], entry["waited_s"]) == (
        "escalated",
        dialog.uid,
        "shell-asks",
        SHORT,
    )
    clutch.resolve(dialog.uid, False, decider=Decider.GUI)
    thread.join(5)
    assert not out[0].approved and out[0].decider == "gui"
    assert [e["event"] for e in rec.audit] == ["escalated", "decision"]
    assert decisions(rec)[0]["escalated"] is True and decisions(rec)[0]["rule"] == "shell-asks"


def test_close_ends_a_wait_that_outlived_its_timeout() -> None:
    clutch, rec = clutch_with(asking(OnTimeout.KEEP_WAITING))
    thread, out = submit_in_thread(clutch, ConfirmDialog("make", "."), timeout=30)
    wait_pending(clutch)
    time.sleep(SHORT * 2)
    assert clutch.close() == 1
    thread.join(5)
    assert not thread.is_alive() and out[0].decider == "shutdown"
    assert [e["rule"] for e in decisions(rec)] == ["shell-asks"]


def test_the_apps_timeout_applies_when_the_rule_has_none() -> None:
    clutch, _ = clutch_with(asking(OnTimeout.APPROVE, timeout_s=None))
    decision = clutch.submit(ConfirmDialog("make", "."), timeout=0.1)
    assert decision.approved and decision.reason.startswith("no decision within 0.1 s")


def test_a_human_decision_under_the_default_names_the_policy_rule() -> None:
    clutch, rec = clutch_with(policy="manual")
    dialog = ConfirmDialog("ls", ".")
    thread, _ = submit_in_thread(clutch, dialog)
    wait_pending(clutch)
    assert dialog.to_dict()["rule"] == "policy=manual"
    clutch.resolve(dialog.uid, True)
    thread.join(5)
    assert [(e["decider"], e["rule"]) for e in rec.audit] == [("gui", "policy=manual")]


@pytest.mark.parametrize(
    ("status", "rules", "stopped"),
    [
        ("success", (), False),  # no rule: nothing to decide, nothing recorded
        ("success", (Rule("errors", Trigger.ON_ERROR, Action.DENY),), False),
        ("error", (Rule("errors", Trigger.ON_ERROR, Action.DENY),), True),
        ("success", (Rule("keys", Trigger.PATTERN, Action.DENY, pattern="PRIVATE KEY"),), True),
    ],
)
def test_intercept_records_only_what_a_rule_stops(
    status: str, rules: tuple[Rule, ...], stopped: bool
) -> None:
    clutch, rec = clutch_with(*rules)
    dialog = ToolResultDialog("read_file", {"path": "id_rsa"}, status, "-----BEGIN PRIVATE KEY-----")
    decision = clutch.intercept(dialog, timeout=30)
    if not stopped:
        assert decision is None and rec.audit == [] and rec.events == []
        return
    assert decision is not None and not decision.approved and decision.decider == "policy"
    assert [(e["kind"], e["rule"]) for e in rec.audit] == [("tool_result", rules[0].name)]
