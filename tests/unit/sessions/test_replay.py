"""A prior session read back: the discussion, tool calls, approvals and MMA state its logs hold."""

from __future__ import annotations

import json
import time
from pathlib import Path

from manual_slop.sessions import load_replay
from tests.unit.sessions.fabricate import chat, make_session


def test_load_replay_rebuilds_discussion_and_mma_state(tmp_path: Path) -> None:
    comms = [
        *chat(1),
        {"kind": "request", "payload": {"message": ["read_file"]}},  # a tool round: no discussion turn
        {"kind": "request", "source_tier": "Tier 3", "ticket": "T1", "payload": {"message": "do T1"}},
        {"kind": "response", "source_tier": "Tier 3", "ticket": "T1", "payload": {"text": "T1 done"}},
        {
            "kind": "error",
            "source_tier": "Tier 3",
            "ticket": "T2",
            "payload": {"kind": "quota", "error": "429"},
        },
        "not an object",
    ]
    sid = make_session(tmp_path, 30, now=time.time(), comms=comms, toolcalls=[{"tool": "read_file"}])
    folder = tmp_path / "sessions" / sid
    (folder / "comms.log").write_text(
        (folder / "comms.log").read_text(encoding="utf-8") + '{"torn": ', encoding="utf-8"
    )
    (folder / "approvals.jsonl").write_text(
        json.dumps({"dialog": "d1", "approved": True}) + "\n", encoding="utf-8"
    )

    replay = load_replay(folder)

    assert replay.session_id == sid and replay.meta["session_id"] == sid
    assert [(t["role"], t["text"]) for t in replay.discussion] == [
        ("User", "q0"), ("AI", "a0"), ("User", "do T1"), ("AI", "T1 done"), ("Error", "error (quota): 429"),
    ]  # fmt: skip
    assert len(replay.comms) == 6 and len(replay.tool_calls) == 1 and replay.approvals[0]["dialog"] == "d1"
    assert replay.tiers == {"Tier 3": {"requests": 1, "responses": 1, "errors": 1}}
    assert [(t["ticket"], t["responses"], t["errors"], t["last"]) for t in replay.tickets] == [
        ("T1", 1, 0, "T1 done"), ("T2", 0, 1, ""),
    ]  # fmt: skip
