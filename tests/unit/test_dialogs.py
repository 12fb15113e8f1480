from __future__ import annotations

import threading
import time

import pytest

from manual_slop.dialogs import (
    AskDialog,
    ConfirmDialog,
    Decider,
    DialogPayloadError,
    MMAApprovalDialog,
    MMASpawnApprovalDialog,
    ToolApprovalDialog,
    dialog_from_kind,
)


def resolve_later(action, delay: float = 0.05) -> threading.Thread:
    thread = threading.Thread(target=lambda: (time.sleep(delay), action()))
    thread.start()
    return thread


def test_resolution_from_another_thread_unblocks_wait() -> None:
    dialog = ConfirmDialog("echo hi", "/tmp")
    thread = resolve_later(lambda: dialog.resolve(True, decider=Decider.HOOK))
    approved, payload = dialog.wait(timeout=10)
    thread.join(2)
    assert approved is True
    assert payload == {"script": "echo hi", "base_dir": "/tmp"}
    assert dialog.decision.decider == "hook"


def test_unresolved_dialog_is_rejected_after_its_timeout() -> None:
    dialog = MMAApprovalDialog("T1", "do it")
    started = time.monotonic()
    approved, payload = dialog.wait(timeout=0.2)
    assert time.monotonic() - started >= 0.19
    assert approved is False and payload == {"ticket_id": "T1", "payload": "do it"}
    assert dialog.decision.decider == "timeout"
    assert dialog.resolve(True) is False  # too late


def test_resolving_twice_returns_false_the_second_time() -> None:
    dialog = ConfirmDialog("ls", ".")
    assert dialog.resolve(False, decider=Decider.GUI) is True
    assert dialog.resolve(True, decider=Decider.HOOK) is False
    assert dialog.wait(timeout=1)[0] is False
    assert dialog.decision.decider == "gui"


def test_concurrent_resolvers_exactly_one_wins() -> None:
    dialog = ConfirmDialog("ls", ".")
    results: list[bool] = []
    lock = threading.Lock()
    barrier = threading.Barrier(8)

    def racer(i: int) -> None:
        barrier.wait()
        outcome = dialog.resolve(i % 2 == 0)
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=racer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert results.count(True) == 1


def test_edits_made_at_approval_are_what_wait_returns() -> None:
    dialog = ConfirmDialog("rm -rf /", "/proj")
    resolve_later(lambda: dialog.resolve(True, {"script": "echo safe", "base_dir": "/proj"})).join(2)
    approved, payload = dialog.wait(timeout=1)
    assert approved and payload["script"] == "echo safe"
    assert dialog.decision.edited is True
    assert dialog.payload["script"] == "rm -rf /"  # the original is kept for the audit


def test_tool_args_and_spawn_prompt_are_editable() -> None:
    tool = ToolApprovalDialog("write_file", {"path": "a.py", "content": "x"}, "--- diff")
    tool.resolve(True, {"args": {"path": "a.py", "content": "y"}})
    assert tool.wait(1)[1]["args"]["content"] == "y"

    spawn = MMASpawnApprovalDialog("T2", "tier3-worker", "prompt", "ctx")
    spawn.resolve(True, {"prompt": "better prompt", "context_md": "more ctx"})
    approved, payload = spawn.wait(1)
    assert approved and payload["prompt"] == "better prompt" and payload["context_md"] == "more ctx"


def test_abort_is_never_an_approval() -> None:
    spawn = MMASpawnApprovalDialog("T3", "tier3-worker", "p", "c")
    spawn.resolve(True, abort=True)
    decision = spawn.wait_decision(1)
    assert decision.abort is True and decision.approved is False


@pytest.mark.parametrize(
    ("edits", "message"),
    [
        ({"base_dir": "/elsewhere"}, "cannot be edited"),
        ({"sneaky": 1}, "unknown payload key 'sneaky'"),
        ({"script": 42}, "script: expected str"),
        ({"reason": 5}, "reason: expected string"),
    ],
)
def test_bad_edits_are_refused_and_leave_the_dialog_pending(edits: dict, message: str) -> None:
    dialog = ConfirmDialog("ls", "/proj")
    with pytest.raises(DialogPayloadError, match=message):
        dialog.resolve(True, edits)
    assert not dialog.done


def test_unchanged_fixed_keys_may_be_echoed_back() -> None:
    dialog = ConfirmDialog("ls", "/proj")
    assert dialog.resolve(True, {"script": "ls", "base_dir": "/proj", "reason": "fine"})
    assert dialog.decision.edited is False and dialog.decision.reason == "fine"


def test_ask_dialog_answer_and_kind_lookup() -> None:
    ask = AskDialog("May I run this?", "run_shell_command", {"command": "ls"})
    ask.resolve(True, {"answer": "yes", "args": {"command": "ls -la"}})
    payload = ask.wait(1)[1]
    assert payload["answer"] == "yes" and payload["args"] == {"command": "ls -la"}
    assert dialog_from_kind("ask") is AskDialog
    assert ask.to_dict()["kind"] == "ask"
    with pytest.raises(ValueError):
        dialog_from_kind("nope")


def test_the_waiting_thread_acts_only_after_the_decision_is_recorded() -> None:
    """The audit and the journal run as listeners: a kill between a decision and its record
    must never leave work done that no record says was approved."""
    dialog = ConfirmDialog("make", "/p")
    recording = threading.Event()
    release = threading.Event()
    order: list[str] = []

    def slow_audit(resolved, decision) -> None:
        recording.set()
        assert release.wait(5)
        order.append("recorded")

    dialog.on_resolved(slow_audit)
    waiter = threading.Thread(target=lambda: (dialog.wait_decision(10), order.append("acted")))
    waiter.start()
    resolver = threading.Thread(target=lambda: dialog.resolve(True, decider="hook"))
    resolver.start()
    assert recording.wait(5)
    waiter.join(0.3)
    assert waiter.is_alive() and order == []  # decided, not yet recorded: the waiter still waits
    release.set()
    waiter.join(5)
    resolver.join(5)
    assert order == ["recorded", "acted"]
