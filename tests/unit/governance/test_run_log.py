"""The run log writer and reader on their own: whole redacted lines from many threads, the size
cap with its marker, how a run's end is classified, the correlation ids it lends to the comms
log and the clutch, and ids that can never name a path outside ``runs/``."""

from __future__ import annotations

import contextlib
import json
import stat
import threading
from pathlib import Path

import pytest

from manual_slop.ai.comms import CommsLog
from manual_slop.ai.errors import ErrorKind, ProviderError
from manual_slop.cancel import RequestCancelled
from manual_slop.clutch import ApprovalPolicy, ExecutionClutch
from manual_slop.dialogs import ToolApprovalDialog
from manual_slop.governance.correlation import current_run, run_scope, within_run
from manual_slop.governance.replay import replay
from manual_slop.governance.run_files import (
    RunLogError,
    list_runs,
    read_page,
    read_run,
    run_path,
    run_summary,
)
from manual_slop.governance.run_log import (
    NO_RUN,
    RECORD_FIELDS,
    RecordType,
    RunKind,
    RunLog,
    RunLogs,
    record_run,
    run_kind,
)
from manual_slop.redaction import Redactor
from manual_slop.tools.tool import ApprovalRequest, ApprovalResult, ToolCall

SECRET = "sk-run-log-secret-0123456789"


def runs(tmp_path: Path, max_bytes: int = 16 * 1024 * 1024) -> RunLogs:
    return RunLogs(tmp_path / "runs", Redactor([SECRET]), "20261126_120000", max_bytes)


def records(run: RunLog) -> list[dict]:
    return [json.loads(line) for line in run.path.read_text(encoding="utf-8").splitlines()]


def test_every_record_type_has_its_fields_listed() -> None:
    assert set(RECORD_FIELDS) == set(RecordType)
    kinds = [("discussion", ""), ("mma", "T1"), ("mma", ""), ("plan", "S1"), ("plan", "")]
    assert [run_kind(*kind) for kind in kinds] == ["chat", "ticket", "tier", "subtask", "plan"]


def test_lines_stay_whole_and_redacted_when_many_threads_write(tmp_path: Path) -> None:
    run = runs(tmp_path).open(RunKind.CHAT, "discussion:main", provider="deepseek", model="m")
    blob = f"{SECRET} " + "x" * 6000

    def writer(n: int) -> None:
        for i in range(150):
            run.write(RecordType.NOTE, kind="test", payload={"writer": n, "i": i, "blob": blob})

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    run.end(run.answered())
    found = records(run)  # every line parses: no torn or interleaved line
    assert [r["seq"] for r in found] == list(range(1, 902 + 1))
    assert found[0]["type"] == "run_start" and found[0]["session"] == "20261126_120000"
    assert found[-1]["type"] == "run_end" and found[-1]["outcome"] == "answered"
    assert {r["run_id"] for r in found} == {run.run_id}
    text = run.path.read_text(encoding="utf-8")
    assert SECRET not in text and text.count("[REDACTED:") == 900
    assert stat.S_IMODE(run.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(run.path.parent.stat().st_mode) == 0o700


def test_a_runaway_run_stops_at_the_cap_with_a_marker_and_still_ends(tmp_path: Path) -> None:
    cap = 200_000
    run = runs(tmp_path, max_bytes=cap).open(RunKind.TICKET, "mma:Tier 3:T1", ticket="T1")
    for i in range(200):
        run.write(RecordType.NOTE, kind="flood", payload={"i": i, "text": "y" * 5000})
    run.end(run.answered())
    found = records(run)
    assert run.path.stat().st_size <= cap
    assert [r["type"] for r in found].count("truncated") == 1
    marker = next(r for r in found if r["type"] == "truncated")
    assert marker["limit_bytes"] == cap
    end = found[-1]
    assert end["type"] == "run_end" and end["dropped"] == 200 - (len(found) - 3)
    assert run_summary(run.path)["truncated"] is True
    with pytest.raises(RunLogError, match="truncated run cannot be replayed"):
        replay(run.path)


def test_the_end_of_a_run_says_how_the_send_ended(tmp_path: Path) -> None:
    logs = runs(tmp_path)
    failures = (RequestCancelled("stopped by the user"), ProviderError(ErrorKind.AUTH, "x"), KeyError("k"))
    outcomes = []
    for failure in (None, *failures):
        expected = pytest.raises(type(failure)) if failure else contextlib.nullcontext()
        with expected, record_run(logs, "c", "discussion") as run:
            assert current_run() is run
            if failure is not None:
                raise failure
        assert current_run() is None
        outcomes.append({k: records(run)[-1][k] for k in ("outcome", "error_kind")})
    assert outcomes == [
        {"outcome": "answered", "error_kind": ""},
        {"outcome": "cancelled", "error_kind": "cancelled"},
        {"outcome": "error", "error_kind": "auth"},
        {"outcome": "error", "error_kind": "KeyError"},
    ]
    with record_run(None, "c", "discussion") as unrecorded:
        assert unrecorded is NO_RUN and current_run() is None


def test_comms_entries_and_clutch_decisions_name_the_run(tmp_path: Path) -> None:
    run = runs(tmp_path).open(RunKind.TICKET, "mma:Tier 3:T7:abc", ticket="T7")
    comms = CommsLog()
    outside = comms.append("OUT", "request", "p", "m", {})
    audit: list[dict] = []
    clutch = ExecutionClutch(audit.append, lambda *_: None, ApprovalPolicy.MANUAL)
    dialogs: list[ToolApprovalDialog] = []

    def approve(request: ApprovalRequest) -> ApprovalResult:  # what tools/approval.py does
        dialog = ToolApprovalDialog(request.call.name, dict(request.call.args))
        dialogs.append(dialog)
        decision = clutch.submit(dialog, timeout=10)
        return ApprovalResult(decision.approved, decision.payload["args"])

    with run_scope(run):
        inside = comms.append("OUT", "request", "p", "m", {})
        wrapped = within_run(approve)
    call = ToolCall("call_9", "write_file", {"path": "a.txt", "content": "x"})
    results: list[ApprovalResult] = []
    tool_thread = threading.Thread(target=lambda: results.append(wrapped(ApprovalRequest(call, ""))))  # type: ignore[misc]
    tool_thread.start()  # a tool thread: the run is not current there until the wrapper makes it so
    while not clutch.pending():
        tool_thread.join(0.01)
    clutch.resolve(clutch.pending()[0].uid, True)  # decided on this (another) thread
    tool_thread.join(10)
    assert results[0].approved
    assert "run_id" not in outside
    assert {k: inside[k] for k in ("run_id", "conversation", "ticket")} == {
        "run_id": run.run_id, "conversation": "mma:Tier 3:T7:abc", "ticket": "T7",
    }  # fmt: skip
    assert {k: audit[0][k] for k in ("id", "run_id", "ticket", "call_id")} == {
        "id": dialogs[0].uid, "run_id": run.run_id, "ticket": "T7", "call_id": "call_9",
    }  # fmt: skip
    decision = next(r for r in records(run) if r["type"] == "decision")
    assert (decision["dialog"], decision["call_id"], decision["approved"]) == (dialogs[0].uid, "call_9", True)
    assert (decision["decider"], decision["kind"]) == ("gui", "tool_approval")
    assert within_run(approve) is approve  # outside a run: unchanged


def test_a_failed_write_never_breaks_the_send(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with record_run(runs(tmp_path), "c", "discussion") as run:
        assert isinstance(run, RunLog)
        run.path.unlink()
        run.path.mkdir()  # the file is gone and a folder has its name: every write fails
        run.write(RecordType.NOTE, kind="lost", payload={})
    assert "the rest of the run is not recorded" in caplog.text  # and the block ended normally


def test_run_ids_never_name_a_path_outside_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    assert run_path(folder, "142501-chat-1a2b3c4d") == folder / "142501-chat-1a2b3c4d.jsonl"
    for bad in (
        "..",
        "../x",
        "142501-chat-1a2b3c4d/../../x",
        "%2e%2e",
        "142501-chat-1A2B3C4D",
        "",
        "a" * 300,
    ):
        with pytest.raises(ValueError, match="is not a run id"):
            run_path(folder, bad)


def test_reading_names_the_bad_line_and_pages_by_count_and_size(tmp_path: Path) -> None:
    run = runs(tmp_path).open(RunKind.CHAT, "c")
    for i in range(30):
        run.write(RecordType.NOTE, kind="n", payload={"i": i, "text": "z" * 1000})
    assert run_summary(run.path)["outcome"] is None  # still running
    page, following, total = read_page(run.path, 5, 10)
    assert [r["seq"] for r in page] == list(range(6, 16)) and (following, total) == (15, 31)
    small, following, _ = read_page(run.path, 0, 500, max_bytes=3000)
    assert len(small) == 3 and following == 3  # the byte budget ends the page first
    run.end(run.answered())
    summary = list_runs(run.path.parent)[0]
    assert (summary["id"], summary["outcome"], summary["kind"]) == (run.run_id, "answered", "chat")
    torn = run.path.read_bytes() + b'{"type": "note", "se'
    run.path.write_bytes(torn)
    assert len(read_run(run.path, strict=False)) == 32  # a record still being written is left out
    with pytest.raises(RunLogError, match=r"line 33: not a JSON record"):
        read_run(run.path)
    run.path.write_text('{"type": "request", "seq": 1}\n')
    with pytest.raises(RunLogError, match="line 1: expected a run_start record first"):
        read_run(run.path)
    run.path.write_text('{"type": "run_start"}\n{"type": "mystery"}\n')
    with pytest.raises(RunLogError, match="line 2: unknown record type 'mystery'"):
        read_run(run.path)
