"""ctrl.sessions in a real controller: start-up prune, star, label, delete, replay refuses sends."""

from __future__ import annotations

import time

import pytest

from manual_slop.automation import InvalidValue
from manual_slop.sessions import LogRegistry
from tests.helpers import pump_until
from tests.unit.sessions.fabricate import chat, make_session


def test_sessions_actions_and_the_replay_send_guard(make_controller, app_dir) -> None:
    now = time.time()
    logs = app_dir / "logs"
    small = make_session(logs, 40, now=now)
    kept = make_session(logs, 41, now=now, comms=chat(6))
    ctrl = make_controller()
    binding = ctrl.sessions
    pump_until(ctrl, lambda: binding.ready)
    assert binding.pruned == [small]
    ids = [row["session_id"] for row in ctrl.fields.get("sessions")]
    assert ids == [ctrl.session_log.session_id, kept]

    ctrl.actions.invoke("btn_session_star", {"session_id": kept, "starred": True})
    ctrl.actions.invoke("btn_session_label", {"session_id": kept, "label": "keep me"})
    row = next(r for r in ctrl.fields.get("sessions") if r["session_id"] == kept)
    assert (row["starred"], row["label"], row["whitelisted"]) == (True, "keep me", True)
    with pytest.raises(InvalidValue, match="running session"):
        ctrl.actions.invoke("btn_session_delete", ctrl.session_log.session_id)
    with pytest.raises(InvalidValue, match="'starred' must be a bool"):
        ctrl.actions.invoke("btn_session_star", {"session_id": kept})

    ctrl.actions.invoke("btn_session_replay", kept)
    pump_until(ctrl, lambda: ctrl.fields.get("session_replay") == kept)
    with pytest.raises(InvalidValue, match=f"replay of session {kept}"):
        ctrl.submit_user_message("hello")
    with pytest.raises(InvalidValue, match="being replayed"):
        ctrl.actions.invoke("btn_session_delete", kept)
    ctrl.actions.invoke("btn_replay_exit")
    assert binding.send_refusal() == ""

    ctrl.actions.invoke("btn_session_delete", kept)
    pump_until(ctrl, lambda: not (logs / "sessions" / kept).exists() and not binding.deleting)
    assert [r["session_id"] for r in ctrl.fields.get("sessions")] == [ctrl.session_log.session_id]

    ctrl.actions.invoke("btn_new_project", str(app_dir / "other.toml"))  # marks this session as a keeper
    ctrl.shutdown()
    registry = LogRegistry(logs)
    registry.load()
    record = registry.get(ctrl.session_log.session_id)
    assert record.end > record.start > 0  # written at the end of the session
    assert record.whitelist_reason == "created a project"
