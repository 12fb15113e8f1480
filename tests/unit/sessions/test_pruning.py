"""Start-up pruning on fabricated session folders: only the old, small, unremarkable ones go."""

from __future__ import annotations

import time
from pathlib import Path

from manual_slop.sessions import LogRegistry, PrunePolicy, keep_reason, prune
from tests.unit.sessions.fabricate import chat, make_session

POLICY = PrunePolicy(max_kb=64, after_hours=24.0)


def test_pruning_removes_only_old_small_unremarkable_sessions(tmp_path: Path) -> None:
    now = time.time()
    old_small = make_session(tmp_path, 48, now=now, comms=chat(2))
    old_starred = make_session(tmp_path, 49, now=now)
    old_errors = make_session(tmp_path, 50, now=now, comms=[{"kind": "error", "payload": {"kind": "auth"}}])
    old_tool_error = make_session(tmp_path, 51, now=now, toolcalls=[{"tool": "read_file", "status": "error"}])
    old_chatty = make_session(tmp_path, 52, now=now, comms=chat(6))  # 12 messages
    old_project = make_session(tmp_path, 53, now=now, markers={"project_created": 1})
    old_track = make_session(tmp_path, 54, now=now, comms=[{"kind": "request", "source_tier": "Tier 2"}])
    old_large = make_session(tmp_path, 55, now=now, pad_kb=80)
    young = make_session(tmp_path, 2, now=now)
    current = make_session(tmp_path, 56, now=now, ended=False)
    registry = LogRegistry(tmp_path)
    registry.load()
    registry.sync()
    registry.update(old_starred, starred=True)

    removed = prune(registry, POLICY, current, now=now)

    assert removed == [old_small]
    assert not (tmp_path / "sessions" / old_small).exists()
    kept = {r.session_id: keep_reason(r, POLICY, now, current) for r in registry.records()}
    assert kept == {
        current: "the running session",
        old_large: "large",
        old_track: "whitelisted: MMA track planning",
        old_project: "whitelisted: created a project",
        old_chatty: "whitelisted: 12 messages",
        old_tool_error: "whitelisted: 1 error(s)",
        old_errors: "whitelisted: 1 error(s)",
        old_starred: "starred",
        young: "young",
    }
    for session_id in kept:
        assert (tmp_path / "sessions" / session_id).is_dir()
    # the registry file no longer lists the pruned session, and keeps the star
    again = LogRegistry(tmp_path)
    again.load()
    assert old_small not in {r.session_id for r in again.records()}
    assert again.get(old_starred).starred


def test_a_session_still_running_elsewhere_and_a_zero_threshold_are_kept(tmp_path: Path) -> None:
    import os

    now = time.time()
    running = make_session(tmp_path, 48, now=now, ended=False, pid=os.getppid())
    registry = LogRegistry(tmp_path)
    registry.load()
    registry.sync()
    record = registry.get(running)
    assert keep_reason(record, POLICY, now, "other") == "still running"
    assert keep_reason(record, PrunePolicy(max_kb=0), now, "other") == "pruning is off"
    assert prune(registry, POLICY, "other", now=now) == []
