"""Byte and count bounds of what the app keeps in memory: the log views, the client's comms copy, the
request board (pure, fast)."""

from __future__ import annotations

import sys

import pytest

from manual_slop.ai.comms import PAYLOAD_TEXT_LIMIT, CommsLog
from manual_slop.log_budget import LogBudget, approx_size
from manual_slop.requests import RequestBoard
from manual_slop.state import COMMS_VIEW_BYTES, AppState


def _entry(seq: int, chars: int) -> dict:
    return {"seq": seq, "kind": "response", "payload": {"text": "x" * chars, "usage": [1, 2.5, None]}}


def test_approx_size_counts_every_string_and_container() -> None:
    small, big = approx_size(_entry(1, 10)), approx_size(_entry(1, 100_000))
    assert big - small == 100_000 - 10  # the text is counted once, byte for byte (ASCII)
    assert small >= sys.getsizeof({}) + sys.getsizeof("x" * 10)
    deep: list = []
    for _ in range(500):  # deeper than any snapshot: counted, never a RecursionError
        deep = [deep]
    assert approx_size(deep) > 0


def test_a_budget_drops_the_oldest_by_bytes_and_counts_them() -> None:
    size = approx_size(_entry(0, 1_000))
    budget = LogBudget(max_bytes=10 * size, max_entries=1_000)
    entries: list[dict] = []
    for seq in range(1, 31):
        budget.extend(entries, [_entry(seq, 1_000)])
        assert budget.total <= 10 * size and budget.total == sum(map(approx_size, entries))
    assert 9 <= len(entries) <= 10 and entries[-1]["seq"] == 30  # the newest kept, in order
    assert budget.dropped == 30 - len(entries) and entries[0]["seq"] == budget.dropped + 1


def test_a_budget_also_bounds_the_count_and_survives_a_cleared_list() -> None:
    budget = LogBudget(max_bytes=10**9, max_entries=100)
    entries: list[dict] = []
    budget.extend(entries, [_entry(i, 1) for i in range(250)])
    assert len(entries) == 90 and budget.dropped == 160  # trimmed to 90 %: not shifted per append
    entries.clear()  # changed behind its back: counted again, not believed
    budget.extend(entries, [_entry(1, 5)])
    assert budget.total == approx_size(_entry(1, 5))
    with pytest.raises(ValueError, match="positive"):
        LogBudget(0, 10)


def test_the_comms_view_holds_its_bytes_not_fifty_thousand_large_entries() -> None:
    state = AppState()
    big = [_entry(i, PAYLOAD_TEXT_LIMIT) for i in range(1, 2_001)]  # 2,000 x 20,000 chars = 40 MB
    for start in range(0, len(big), 100):
        state.add_comms(big[start : start + 100])
    assert state.comms_budget.total <= COMMS_VIEW_BYTES
    assert len(state.comms_log) < 900 and state.comms_log[-1]["seq"] == 2_000
    assert state.comms_budget.dropped == 2_000 - len(state.comms_log)
    state.add_tool_calls([_entry(1, 10)])
    assert [e["seq"] for e in state.tool_calls] == [1] and state.tool_calls_budget.dropped == 0


def test_the_clients_comms_copy_is_bounded_by_bytes() -> None:
    log = CommsLog(capacity=2_000, max_bytes=200_000)
    for _ in range(50):
        log.append("IN", "response", "p", "m", {"text": "y" * 30_000})  # clipped to 20,000
    kept = log.entries()
    assert len(kept) < 10 and sum(map(approx_size, kept)) <= 200_000
    assert kept[-1]["payload"]["text"].endswith("[30,000 chars]")


def test_the_request_board_forgets_the_oldest_finished_requests_only() -> None:
    board = RequestBoard(finished_kept=10)
    board.add("stuck", "still running")  # unfinished: never forgotten
    for n in range(40):
        board.add(f"r{n}", "p")
        board.update(f"r{n}", state="done", response="x" * 100)
    ids = board.ids()
    assert "stuck" in ids and board.state("stuck") == "queued"
    assert len(ids) <= 12 and ids[-1] == "r39" and board.status("r0") is None
