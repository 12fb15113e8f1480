"""logs/log_registry.toml: scanned counts, user labels and stars kept, a corrupt file moved aside."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from manual_slop.sessions import LogRegistry, SessionError
from tests.unit.sessions.fabricate import chat, make_session


def test_the_registry_records_counts_and_keeps_labels_and_stars(tmp_path: Path) -> None:
    now = time.time()
    sid = make_session(tmp_path, 30, now=now, comms=[*chat(3), {"kind": "error", "payload": {}}])
    registry = LogRegistry(tmp_path)
    registry.load()
    (record,) = registry.sync()
    assert (record.messages, record.errors, record.whitelisted) == (6, 1, True)
    assert record.start == pytest.approx(now - 30 * 3600) and record.end > record.start
    registry.update(sid, label="the refactor", starred=True)
    registry.save()
    registry.sync(rescan=(sid,))  # a rescan keeps what the user set

    again = LogRegistry(tmp_path)
    again.load()
    kept = again.get(sid)
    assert (kept.label, kept.starred, kept.messages) == ("the refactor", True, 6)
    assert again.problem == ""
    with pytest.raises(SessionError, match="one line"):
        again.update(sid, label="two\nlines")
    with pytest.raises(SessionError, match="not a session id"):
        again.get("../etc")
    with pytest.raises(SessionError, match="no session"):
        again.get("20000101_000000")


@pytest.mark.parametrize(
    "text", ["sessions = [1, 2", 'sessions = "no table"', '[sessions."20260101_000000"]\nmessages = "six"']
)
def test_a_corrupt_registry_is_moved_aside_and_rebuilt_from_the_folders(tmp_path: Path, text: str) -> None:
    sid = make_session(tmp_path, 30, now=time.time(), comms=chat(1))
    path = tmp_path / "log_registry.toml"
    path.write_text(text, encoding="utf-8")
    registry = LogRegistry(tmp_path)
    registry.load()
    assert "moved to" in registry.problem
    (aside,) = tmp_path.glob("log_registry.toml.corrupt-*")
    assert aside.read_text(encoding="utf-8") == text  # never overwritten
    assert [r.session_id for r in registry.sync()] == [sid]
    again = LogRegistry(tmp_path)
    again.load()
    assert again.problem == "" and again.get(sid).messages == 2
