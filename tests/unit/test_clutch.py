from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from manual_slop.clutch import AllowRule, ApprovalPolicy, ExecutionClutch, ResolveOutcome, RuleError
from manual_slop.dialogs import ConfirmDialog, Decider, ToolApprovalDialog


class Recorder:
    def __init__(self) -> None:
        self.audit: list[dict[str, Any]] = []
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.lock = threading.Lock()

    def audit_sink(self, entry: dict[str, Any]) -> None:
        with self.lock:
            self.audit.append(entry)

    def publish(self, name: str, payload: dict[str, Any]) -> None:
        with self.lock:
            self.events.append((name, payload))


def make(policy: str = "manual", rules=()) -> tuple[ExecutionClutch, Recorder]:
    rec = Recorder()
    return ExecutionClutch(rec.audit_sink, rec.publish, ApprovalPolicy(policy), rules), rec


def submit_in_thread(clutch: ExecutionClutch, dialog, timeout: float = 10.0):
    out: list = []
    thread = threading.Thread(target=lambda: out.append(clutch.submit(dialog, timeout)))
    thread.start()
    return thread, out


def wait_pending(clutch: ExecutionClutch, count: int = 1) -> None:
    deadline = time.monotonic() + 5
    while len(clutch.pending()) < count:
        assert time.monotonic() < deadline, "dialog never became pending"
        time.sleep(0.005)


def test_manual_blocks_until_resolved_and_audits_once() -> None:
    clutch, rec = make()
    dialog = ConfirmDialog("echo 1", "/p")
    thread, out = submit_in_thread(clutch, dialog)
    wait_pending(clutch)
    assert clutch.front() is dialog
    assert (
        clutch.resolve(dialog.uid, True, {"script": "echo 2"}, decider=Decider.HOOK)
        is ResolveOutcome.RESOLVED
    )
    thread.join(5)
    assert out[0].approved and out[0].payload["script"] == "echo 2"
    assert clutch.pending() == []
    assert len(rec.audit) == 1
    entry = rec.audit[0]
    assert entry["decider"] == "hook" and entry["edited"] is True
    assert entry["payload"]["script"] == "echo 2" and entry["original_payload"]["script"] == "echo 1"
    assert [name for name, _ in rec.events] == ["pending_added", "pending_resolved"]


def test_resolve_outcomes_distinguish_unknown_from_already_resolved() -> None:
    clutch, _ = make()
    dialog = ConfirmDialog("x", ".")
    thread, _ = submit_in_thread(clutch, dialog)
    wait_pending(clutch)
    assert clutch.resolve(dialog.uid, False) is ResolveOutcome.RESOLVED
    thread.join(5)
    assert clutch.resolve(dialog.uid, True) is ResolveOutcome.ALREADY_RESOLVED
    assert clutch.resolve("no-such-id", True) is ResolveOutcome.UNKNOWN


def test_timeout_rejects_and_removes_the_dialog() -> None:
    clutch, rec = make()
    decision = clutch.submit(ConfirmDialog("x", "."), timeout=0.1)
    assert not decision.approved and decision.decider == "timeout"
    assert clutch.pending() == []
    assert rec.audit[0]["decider"] == "timeout"


def test_auto_policy_approves_without_publishing_but_audits() -> None:
    clutch, rec = make("auto")
    decision = clutch.submit(ConfirmDialog("x", "."), timeout=0.1)
    assert decision.approved and decision.decider == "policy" and decision.rule == "policy=auto"
    assert rec.events == []
    assert rec.audit[0]["approved"] is True


def test_allow_list_approves_matching_rules_and_asks_for_the_rest() -> None:
    rules = [
        AllowRule.from_dict({"tool": "run_shell", "pattern": "^pytest( |$)"}),
        AllowRule.from_dict({"tool": "write_file", "path_glob": "docs/*.md"}),
    ]
    clutch, rec = make("allow_list", rules)
    ok = clutch.submit(ConfirmDialog("pytest -q", "."), timeout=0.1)
    assert ok.approved and "pattern=^pytest" in ok.rule
    doc = clutch.submit(ToolApprovalDialog("write_file", {"path": "docs/a.md", "content": ""}), timeout=0.1)
    assert doc.approved
    asked = clutch.submit(ConfirmDialog("rm -rf build", "."), timeout=0.1)
    assert not asked.approved and asked.decider == "timeout"
    other = clutch.submit(ToolApprovalDialog("write_file", {"path": "src/a.py", "content": ""}), timeout=0.1)
    assert not other.approved
    assert [e["decider"] for e in rec.audit] == ["policy", "policy", "timeout", "timeout"]


@pytest.mark.parametrize(
    "raw",
    [{}, {"tool": ""}, {"tool": "x", "pattern": "("}, {"tool": "x", "bogus": 1}, {"tool": "x", "pattern": 3}],
)
def test_malformed_rules_are_refused(raw: dict) -> None:
    with pytest.raises(RuleError):
        AllowRule.from_dict(raw)


def test_close_rejects_waiting_threads_and_later_submits() -> None:
    clutch, _ = make()
    thread, out = submit_in_thread(clutch, ConfirmDialog("x", "."), timeout=30)
    wait_pending(clutch)
    assert clutch.close() == 1
    thread.join(5)
    assert not thread.is_alive() and out[0].decider == "shutdown"
    late = clutch.submit(ConfirmDialog("y", "."), timeout=30)
    assert not late.approved and late.decider == "shutdown"


def test_policy_switch_applies_to_the_next_submit() -> None:
    clutch, _ = make("manual")
    clutch.set_policy("auto")
    assert clutch.policy is ApprovalPolicy.AUTO
    assert clutch.submit(ConfirmDialog("x", "."), timeout=0.1).approved
