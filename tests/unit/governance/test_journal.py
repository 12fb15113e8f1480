"""The approval journal: pending before shown, decided after audited, read back after a crash."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from manual_slop.clutch import ExecutionClutch, ResolveOutcome
from manual_slop.dialogs import MMASpawnApprovalDialog, ToolApprovalDialog, dialog_from_kind
from manual_slop.governance.journal import (
    EVENT_FIELDS,
    JOURNAL_NAME,
    ApprovalJournal,
    read_journal,
    scan_sessions,
)

OPEN: list[ExecutionClutch] = []


@pytest.fixture(autouse=True)
def close_clutches() -> Any:
    """A "killed" session's asking thread still waits: closing its clutch wakes it."""
    yield
    while OPEN:
        OPEN.pop().close()


class Session:
    """One app session's pieces: a folder with an audit log and a journal, and a clutch."""

    def __init__(self, root: Path, name: str) -> None:
        self.folder = root / name
        self.folder.mkdir(parents=True)
        self.audit_path = self.folder / "audit.log"
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.journal = ApprovalJournal(self.folder / JOURNAL_NAME, lambda d: {"type": "tool_call", "x": 1})
        self.clutch = ExecutionClutch(
            self.audit, lambda e, p: self.events.append((e, p)), journal=self.journal
        )
        OPEN.append(self.clutch)

    def audit(self, entry: dict[str, Any]) -> None:
        with self.audit_path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    def audited(self) -> list[str]:
        if not self.audit_path.exists():
            return []
        return [json.loads(line)["id"] for line in self.audit_path.read_text().splitlines()]

    def ask(self, dialog: Any, timeout: float = 5.0) -> threading.Thread:
        thread = threading.Thread(target=self.clutch.submit, args=(dialog, timeout), daemon=True)
        thread.start()
        for _ in range(500):
            if self.clutch.get(dialog.uid) is not None:
                return thread
            threading.Event().wait(0.01)
        raise AssertionError("the dialog never became pending")


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_pending_dialog_is_journaled_before_it_is_announced_and_marked_once_decided(tmp_path: Path) -> None:
    s = Session(tmp_path, "s1")
    seen_at_announce: list[list[str]] = []
    s.clutch._publish = lambda e, p: seen_at_announce.append([r["event"] for r in lines(s.journal.path)])
    dialog = ToolApprovalDialog("write_file", {"path": "a.txt", "content": "x"}, "diff")
    thread = s.ask(dialog)
    assert seen_at_announce == [["pending"]]  # on disk when pending_added went out
    assert s.clutch.resolve(dialog.uid, True) is ResolveOutcome.RESOLVED
    thread.join(5)
    pending, decided = lines(s.journal.path)
    assert [pending["event"], decided["event"]] == ["pending", "decided"]
    assert set(EVENT_FIELDS["pending"]) <= set(pending) and set(EVENT_FIELDS["decided"]) <= set(decided)
    assert pending["id"] == decided["id"] == dialog.uid
    assert pending["payload"] == dialog.payload and pending["resume"] == {"type": "tool_call", "x": 1}
    assert decided["approved"] is True and decided["decider"] == "gui"
    assert scan_sessions(tmp_path).undecided == []


def test_policy_decisions_are_not_journaled(tmp_path: Path) -> None:
    s = Session(tmp_path, "s1")
    s.clutch.set_policy("auto")
    s.clutch.submit(ToolApprovalDialog("write_file", {"path": "a"}, ""), 1.0)
    assert not s.journal.path.exists() and len(s.audited()) == 1


def test_an_undecided_dialog_is_restored_and_decided_exactly_once_across_restarts(tmp_path: Path) -> None:
    first = Session(tmp_path, "s1")
    dialog = MMASpawnApprovalDialog("T1", "Tier 3", "do it", "ctx")
    first.ask(dialog, timeout=30)  # the process "dies" here: nobody decides

    second = Session(tmp_path, "s2")
    scan = scan_sessions(tmp_path, exclude=second.folder)
    [item] = scan.undecided
    assert (item.uid, item.kind, item.session) == (dialog.uid, "mma_spawn", "s1")
    restored = dialog_from_kind(item.kind).restore(item.uid, item.record["created"], item.record["payload"])
    assert (restored.uid, restored.created, restored.payload) == (dialog.uid, dialog.created, dialog.payload)
    second.journal.carry(restored.uid, item.resume)
    assert second.clutch.adopt(restored)
    assert [d.uid for d in second.clutch.pending()] == [dialog.uid]
    assert second.events[0][0] == "pending_added" and second.events[0][1]["id"] == dialog.uid
    # a worker that reaches the same dialog only waits for it: no second audit line
    waiter: list[Any] = []
    thread = threading.Thread(target=lambda: waiter.append(second.clutch.submit(restored, 5)), daemon=True)
    thread.start()
    assert second.clutch.resolve(dialog.uid, True, {"prompt": "do it well"}) is ResolveOutcome.RESOLVED
    thread.join(5)
    assert waiter[0].payload["prompt"] == "do it well"
    assert second.clutch.resolve(dialog.uid, False) is ResolveOutcome.ALREADY_RESOLVED
    assert second.clutch.submit(restored, 1).approved  # a late ask reads the decision
    assert second.audited() == [dialog.uid]

    third = Session(tmp_path, "s3")  # a third start finds nothing left to restore
    assert scan_sessions(tmp_path, exclude=third.folder).undecided == []


def test_a_decision_audited_but_not_journaled_counts_as_made(tmp_path: Path) -> None:
    s = Session(tmp_path, "s1")
    dialog = ToolApprovalDialog("edit_file", {"path": "b"}, "")
    s.ask(dialog, timeout=30)
    s.journal._journaled.clear()  # the crash came between the audit line and the journal's mark
    s.clutch.resolve(dialog.uid, True)
    assert [r["event"] for r in lines(s.journal.path)] == ["pending"]
    scan = scan_sessions(tmp_path, exclude=tmp_path / "s2")
    assert scan.undecided == [] and scan.audited_late == [dialog.uid]


def test_a_torn_last_line_is_ignored_with_a_warning(tmp_path: Path) -> None:
    s = Session(tmp_path, "s1")
    dialog = ToolApprovalDialog("write_file", {"path": "a"}, "")
    s.ask(dialog, timeout=30)
    with s.journal.path.open("ab") as f:
        f.write(b'{"event": "decided", "id": "' + dialog.uid.encode() + b'", "appr')  # kill -9 mid-write
    read = read_journal(s.journal.path)
    assert list(read.pending) == [dialog.uid] and read.decided == {}
    assert read.moved_to is None and "incomplete last line" in read.warnings[0]
    assert [u.uid for u in scan_sessions(tmp_path).undecided] == [dialog.uid]


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (b"not json at all\n", "not JSON"),
        (b'{"event": "pending", "id": "x"}\n', "pending line lacks kind"),
        (b'{"event": "shown", "id": "x"}\n', "unknown event 'shown'"),
        (b"[1, 2]\n", "not a JSON object"),
    ],
)
def test_a_corrupt_journal_is_moved_aside_and_reported_never_overwritten(
    tmp_path: Path, bad: bytes, problem: str
) -> None:
    s = Session(tmp_path, "s1")
    s.ask(ToolApprovalDialog("write_file", {"path": "a"}, ""), timeout=30)
    original = s.journal.path.read_bytes()
    s.journal.path.write_bytes(bad + original)
    scan = scan_sessions(tmp_path)
    assert scan.undecided == []
    assert problem in scan.warnings[0] and "moved aside to approvals.jsonl.corrupt-" in scan.warnings[0]
    [moved] = s.folder.glob("approvals.jsonl.corrupt-*")
    assert moved.read_bytes() == bad + original and not s.journal.path.exists()


def test_a_dialog_that_cannot_be_journaled_is_rejected_not_shown(tmp_path: Path) -> None:
    s = Session(tmp_path, "s1")
    s.journal.path = tmp_path / "missing-folder" / JOURNAL_NAME
    decision = s.clutch.submit(ToolApprovalDialog("write_file", {"path": "a"}, ""), 5)
    assert (
        not decision.approved
        and "approval journal" in decision.reason
        and "cannot be written" in decision.reason
    )
    assert s.clutch.pending() == [] and s.events == [] and len(s.audited()) == 1


def test_the_newest_carry_of_an_id_wins_and_it_is_listed_once(tmp_path: Path) -> None:
    first = Session(tmp_path, "s1")
    dialog = ToolApprovalDialog("write_file", {"path": "a"}, "")
    first.ask(dialog, timeout=30)
    for name in ("s2", "s3"):  # two restarts that both died before a decision
        s = Session(tmp_path, name)
        [item] = scan_sessions(tmp_path, exclude=s.folder).undecided
        restored = dialog_from_kind(item.kind).restore(
            item.uid, item.record["created"], item.record["payload"]
        )
        s.journal.carry(item.uid, item.resume)
        assert s.clutch.adopt(restored)
    [item] = scan_sessions(tmp_path).undecided
    assert (item.uid, item.session) == (dialog.uid, "s3")
