"""The headless controller with its real threads: task pipeline, trampoline, clutch, flush."""

from __future__ import annotations

import json
import threading
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest

from manual_slop import events as events_module
from manual_slop import log_budget as log_budget_module
from manual_slop.automation import FeatureUnavailable, InvalidValue, ReadOnlyField, UnknownName
from manual_slop.cancel import RequestCancelled
from manual_slop.dialogs import ConfirmDialog
from manual_slop.headless import HeadlessTicker
from manual_slop.tasks import TaskState
from tests.helpers import pump_until


def test_ten_thousand_tasks_from_a_thread_arrive_complete_and_in_order(make_controller) -> None:
    ctrl = make_controller()
    applied: list[int] = []
    count = 10_000

    def producer() -> None:
        for i in range(count):
            ctrl.post_gui_task({"action": "custom_callback", "callback": applied.append, "args": (i,)})
            if i % 1000 == 0:
                time.sleep(0.001)  # interleave with the drains

    thread = threading.Thread(target=producer)
    thread.start()
    frames = 0
    while thread.is_alive():
        ctrl.run_frame()
        frames += 1
    thread.join(5)
    ctrl.run_frame()
    assert frames > 1  # the drains really interleaved with the producer
    assert applied == list(range(count))


def test_set_value_tasks_apply_in_order_and_bad_ones_fail_alone(make_controller) -> None:
    ctrl = make_controller()
    ids = [
        ctrl.post_gui_task({"action": "set_value", "item": "ai_input", "value": f"v{i}"}) for i in range(50)
    ]
    bad = ctrl.post_gui_task({"action": "set_value", "item": "temperature", "value": "hot"})
    unknown = ctrl.post_gui_task({"action": "bogus"})
    ctrl.run_frame()
    assert ctrl.state.ai_input == "v49"
    assert all(ctrl.tasks.get(i).state is TaskState.DONE for i in ids)
    assert ctrl.tasks.get(bad).state is TaskState.ERROR
    assert "temperature: expected number" in ctrl.tasks.get(bad).error
    assert "unknown task action 'bogus'" in ctrl.tasks.get(unknown).error
    events, _, _ = ctrl.journal.read(0)
    assert [e.payload["task_id"] for e in events if e.type == "error"] == [bad, unknown]


def test_registries_validate_before_anything_is_queued(make_controller) -> None:
    ctrl = make_controller()
    assert ctrl.fields.validate_set("temperature", 1) == 1.0
    with pytest.raises(ReadOnlyField):
        ctrl.fields.validate_set("ai_response", "x")
    with pytest.raises(UnknownName, match="known: "):
        ctrl.fields.validate_set("nope", 1)
    with pytest.raises(InvalidValue):
        ctrl.fields.validate_set("provider_base_url", "not a url")
    with pytest.raises(InvalidValue):
        ctrl.actions.validate("btn_save", "unexpected user data")
    assert ctrl.actions.validate("btn_mma_accept_tracks", [0, 1]) == [0, 1]
    ctrl.actions.register_unavailable("btn_future_feature", "A feature still to come", "lands later")
    with pytest.raises(FeatureUnavailable, match="not available yet"):
        ctrl.actions.invoke("btn_future_feature")


def test_required_automation_surface_is_registered(make_controller) -> None:
    ctrl = make_controller()
    gettable = {
        "current_provider", "current_model", "provider_base_url", "temperature", "top_p", "max_tokens",
        "ai_input", "ai_response", "ai_status", "approval_policy", "files_base_dir", "project_files",
        "active_discussion", "mma_epic_input", "mma_status", "proposed_tracks",
    }  # fmt: skip
    read_only = {"ai_response", "ai_status", "mma_status", "proposed_tracks"}
    assert gettable <= set(ctrl.fields.names())
    assert gettable - read_only <= set(ctrl.fields.settable_names())
    assert not read_only & set(ctrl.fields.settable_names())
    clickable = {
        "btn_gen_send", "btn_md_only", "btn_reset_session", "btn_save", "btn_compress_discussion",
        "btn_new_discussion", "btn_fetch_models", "btn_approve", "btn_reject", "btn_mma_plan_epic",
        "btn_mma_accept_tracks", "btn_mma_start_track", "btn_mma_pause", "btn_mma_resume", "btn_mma_abort",
    }  # fmt: skip
    assert clickable <= set(ctrl.actions.names())


def test_provider_switch_remembers_each_providers_model_and_url(make_controller) -> None:
    ctrl = make_controller()
    ctrl.fields.set("current_provider", "anthropic")
    ctrl.fields.set("current_model", "claude-x")
    ctrl.fields.set("provider_base_url", "http://127.0.0.1:9/")
    ctrl.fields.set("current_provider", "gemini")
    assert ctrl.fields.get("current_model") == "gemini-2.5-flash-lite"
    assert ctrl.fields.get("provider_base_url") == ""
    ctrl.fields.set("current_provider", "anthropic")
    assert ctrl.fields.get("current_model") == "claude-x"
    assert ctrl.fields.get("provider_base_url") == "http://127.0.0.1:9/"


def test_call_on_main_runs_on_the_ticker_thread_and_times_out_without_one(make_controller) -> None:
    ctrl = make_controller()
    with pytest.raises(TimeoutError):
        ctrl_result_from_thread(ctrl, lambda: 1, timeout=0.1)
    ctrl.run_frame()  # drain the abandoned callback

    stop = threading.Timer(0.5, ctrl.request_stop)
    results: list[Any] = []
    reader = threading.Thread(
        target=lambda: results.append(ctrl.call_on_main(lambda: threading.current_thread().name, timeout=5))
    )
    reader.start()
    stop.start()
    HeadlessTicker(ctrl).run()  # this test thread is the main thread
    reader.join(5)
    stop.join()
    assert results == [threading.current_thread().name]


def ctrl_result_from_thread(ctrl, fn, timeout: float) -> Any:
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(_capture(lambda: ctrl.call_on_main(fn, timeout))))
    thread.start()
    thread.join(timeout + 5)
    if isinstance(box[0], BaseException):
        raise box[0]
    return box[0]


def _capture(fn) -> Any:
    try:
        return fn()
    except BaseException as exc:
        return exc


def test_headless_ticker_runs_frames_and_stops_on_request(make_controller) -> None:
    ctrl = make_controller()
    threading.Timer(0.3, ctrl.request_stop).start()
    HeadlessTicker(ctrl, hz=60).run()
    assert ctrl.perf.frames > 3
    assert ctrl.health()["healthy"] is True


def test_health_reports_a_stalled_loop(make_controller) -> None:
    ctrl = make_controller()
    assert ctrl.health()["healthy"] is False  # no frame yet
    ctrl.run_frame()
    assert ctrl.health()["healthy"] is True

    def broken() -> None:
        raise RuntimeError("imgui assert")

    ctrl.run_frame(render=broken)
    health = ctrl.health()
    assert health["healthy"] is False and "imgui assert" in health["degraded_reason"]


def test_shutdown_joins_every_thread_it_started(app_dir: Path) -> None:
    from manual_slop.controller import AppController

    before = set(threading.enumerate())
    ctrl = AppController(app_dir / "config.toml", environ={})
    assert any(t.name == "slop-asyncio" for t in threading.enumerate())
    assert ctrl.shutdown() == []
    assert [t for t in threading.enumerate() if t not in before] == []
    assert ctrl.post_gui_task({"action": "notify"}) is None  # posting after shutdown is refused


def test_shutdown_flushes_config_project_and_history(make_controller, app_dir: Path) -> None:
    ctrl = make_controller()
    ctrl.fields.set("temperature", 0.7)
    ctrl.fields.set("current_provider", "deepseek")
    ctrl.fields.set("project_files", ["src/**/*.py"])
    ctrl.fields.set("system_prompt", "be terse")
    ctrl.add_history_entry("User", "remember me")
    ctrl.shutdown()
    config = tomllib.loads((app_dir / "config.toml").read_text())
    project = tomllib.loads((app_dir / "manual_slop.toml").read_text())
    history = tomllib.loads((app_dir / "manual_slop_history.toml").read_text())
    assert config["ai"]["temperature"] == 0.7 and config["ai"]["provider"] == "deepseek"
    assert config["projects"]["active"] == "manual_slop.toml"
    assert project["files"]["paths"] == ["src/**/*.py"]
    assert project["project"]["system_prompt"] == "be terse"
    assert history["discussions"]["main"]["history"][0]["content"] == "remember me"


def test_state_survives_a_restart(make_controller, app_dir: Path) -> None:
    first = make_controller()
    first.fields.set("top_p", 0.5)
    first.actions.invoke("btn_new_discussion", "design")
    first.shutdown()
    second = make_controller()
    assert second.state.top_p == 0.5
    assert second.state.active_discussion == "design"
    assert sorted(second.state.discussions) == ["design", "main"]


def test_corrupt_config_is_moved_aside_and_the_user_is_told(make_controller, app_dir: Path) -> None:
    (app_dir / "config.toml").write_text("[ai\nthis is not toml")
    ctrl = make_controller()
    moved = list(app_dir.glob("config.toml.corrupt-*"))
    assert len(moved) == 1 and moved[0].read_text() == "[ai\nthis is not toml"
    assert ctrl.state.current_provider == "local"
    notes = ctrl.fields.get("notifications")
    assert notes[0]["level"] == "error" and moved[0].name in notes[0]["message"]
    events, _, _ = ctrl.journal.read(0)
    assert any(e.type == "error" and moved[0].name in e.payload["message"] for e in events)


def test_bad_allow_rules_are_reported_and_skipped(make_controller, app_dir: Path) -> None:
    (app_dir / "manual_slop.toml").write_text(
        '[[approval.rules]]\ntool = "run_shell"\npattern = "^ls$"\n[[approval.rules]]\npattern = "("\n'
    )
    ctrl = make_controller()
    assert [r.pattern for r in ctrl.clutch.rules] == ["^ls$"]
    assert any("approval.rules[1]" in n.message for n in ctrl.state.notifications)


class FakeBackend:
    """A provider stand-in for the controller's request flow (the AI client has its own tests)."""

    def __init__(self, reply: str = "hello back", gate: threading.Event | None = None, fail: bool = False):
        self.reply, self.gate, self.fail = reply, gate, fail
        self.calls: list[dict[str, Any]] = []
        self.settings: list[dict[str, Any]] = []
        self.resets = 0

    def apply_settings(self, settings):
        self.settings.append(dict(settings))

    def send(self, md_content, user_message, **kwargs):
        self.calls.append({"md": md_content, "message": user_message, **kwargs})
        cancel = kwargs.get("cancel")
        if self.gate is not None:
            deadline = time.monotonic() + 10
            while not self.gate.wait(0.01):  # like a provider: a cancel ends the wait
                if cancel is not None and cancel.cancelled:
                    raise RequestCancelled(cancel.reason, partial="half an ans")
                if time.monotonic() > deadline:
                    raise TimeoutError("gate never opened")
        if self.fail:
            raise ConnectionError("fake provider is down")
        return self.reply

    def reset_session(self):
        self.resets += 1


def test_gen_send_round_trip_updates_response_status_discussion_and_request(make_controller) -> None:
    backend = FakeBackend()
    ctrl = make_controller(backend=backend)
    ctrl.fields.set("ai_input", "hi there")
    ctrl.fields.set("system_prompt", "sys")
    ctrl.actions.invoke("btn_gen_send")
    request_id = ctrl.state.active_request_id
    assert ctrl.state.ai_input == "" and ctrl.state.ai_status == "sending..."
    pump_until(ctrl, lambda: ctrl.state.ai_status == "done")
    assert ctrl.state.ai_response == "hello back"
    status = ctrl.request_status(request_id)
    assert {k: status[k] for k in ("state", "response", "error")} == {
        "state": "done",
        "response": "hello back",
        "error": None,
    }
    assert [(e["role"], e["content"]) for e in ctrl.state.discussion_entries()] == [
        ("User", "hi there"),
        ("AI", "hello back"),
    ]
    assert backend.calls[0]["message"] == "hi there" and "sys" in backend.calls[0]["md"]
    assert backend.settings[0]["provider"] == "local"
    statuses = [e.payload["status"] for e in ctrl.journal.read(0)[0] if e.type == "ai_status"]
    assert statuses == ["sending...", "done"]


def test_a_failing_provider_never_leaves_the_app_sending(make_controller) -> None:
    ctrl = make_controller(backend=FakeBackend(fail=True))
    ctrl.fields.set("ai_input", "hi")
    ctrl.actions.invoke("btn_gen_send")
    pump_until(ctrl, lambda: ctrl.state.ai_status == "error")
    assert "fake provider is down" in ctrl.state.ai_response
    request = ctrl.request_status(ctrl.journal.read(0)[0][-1].payload["request_id"])
    assert request["state"] == "error" and "fake provider is down" in request["error"]
    assert len(ctrl.state.discussion_entries()) == 1  # the user's message, no AI reply


def test_the_loop_keeps_routing_while_a_request_is_in_flight(make_controller) -> None:
    gate = threading.Event()
    ctrl = make_controller(backend=FakeBackend(gate=gate))
    ctrl.fields.set("ai_input", "slow one")
    ctrl.actions.invoke("btn_gen_send")
    ctrl.event_queue.put_threadsafe("track_proposal", {"tracks": [{"title": "T"}]})
    pump_until(ctrl, lambda: ctrl.state.proposed_tracks == [{"title": "T"}])
    assert ctrl.state.ai_status == "sending..."
    gate.set()
    pump_until(ctrl, lambda: ctrl.state.ai_status == "done")


def test_gen_send_without_a_backend_says_so(make_controller) -> None:
    ctrl = make_controller()
    ctrl.fields.set("ai_input", "hi")
    with pytest.raises(FeatureUnavailable):
        ctrl.actions.invoke("btn_gen_send")
    ctrl.fields.set("ai_input", "  ")
    with pytest.raises(InvalidValue, match="empty"):
        ctrl.actions.invoke("btn_gen_send")


def test_approval_from_a_worker_thread_is_resolved_by_a_click(make_controller) -> None:
    ctrl = make_controller()
    dialog = ConfirmDialog("echo hi", "/proj")
    outcome: list = []
    worker = threading.Thread(target=lambda: outcome.append(ctrl.request_approval(dialog, timeout=10)))
    worker.start()
    pump_until(ctrl, lambda: len(ctrl.state.pending_dialogs) == 1)
    assert ctrl.fields.get("pending_dialogs")[0]["payload"]["script"] == "echo hi"
    ctrl.post_gui_task({"action": "click", "item": "btn_approve", "source": "hook"})
    pump_until(ctrl, lambda: not ctrl.state.pending_dialogs)
    worker.join(5)
    assert outcome[0].approved and outcome[0].decider == "hook"
    audit = [json.loads(line) for line in (ctrl.session_log.root / "audit.log").read_text().splitlines()]
    assert audit[-1]["id"] == dialog.uid and audit[-1]["decider"] == "hook"
    with pytest.raises(InvalidValue, match="nothing is waiting"):
        ctrl.actions.invoke("btn_approve")


def test_request_approval_refuses_to_block_the_main_thread(make_controller) -> None:
    ctrl = make_controller()
    with pytest.raises(RuntimeError, match="main thread"):
        ctrl.request_approval(ConfirmDialog("x", "."), timeout=1)


def test_auto_policy_is_flagged_loudly(make_controller) -> None:
    ctrl = make_controller()
    ctrl.fields.set("approval_policy", "auto")
    assert ctrl.clutch.policy == "auto"
    assert "AUTO" in ctrl.state.notifications[-1].message


def test_comms_entries_reach_log_view_and_events(make_controller) -> None:
    ctrl = make_controller()
    sender = threading.Thread(
        target=lambda: [
            ctrl.add_comms_entry({"kind": "request", "n": i, "source_tier": "Tier 3"}) for i in range(5)
        ]
    )
    sender.start()
    sender.join(5)
    ctrl.run_frame()
    assert [e["n"] for e in ctrl.state.comms_log] == list(range(5))
    on_disk = ctrl.session_log.read("comms")
    assert [e["n"] for e in on_disk] == list(range(5))
    assert all("local_ts" in e and e["source_tier"] == "Tier 3" for e in on_disk)


def test_discussion_listbox_switches_and_rejects_unknown(make_controller) -> None:
    ctrl = make_controller()
    ctrl.actions.invoke("btn_new_discussion", "second")
    ctrl.post_gui_task({"action": "select_list_item", "listbox": "discussions", "item": "main"})
    bad = ctrl.post_gui_task({"action": "select_list_item", "listbox": "discussions", "item": "nope"})
    ctrl.run_frame()
    assert ctrl.state.active_discussion == "main"
    assert "no item 'nope'" in ctrl.tasks.get(bad).error


def test_concurrent_comms_entries_are_numbered_in_view_order(make_controller) -> None:
    ctrl = make_controller()

    def sender(n: int) -> None:
        for i in range(200):
            ctrl.add_comms_entry({"kind": "response", "sender": n, "i": i})

    threads = [threading.Thread(target=sender, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    ctrl.run_frame()
    assert [e["seq"] for e in ctrl.state.comms_log] == list(range(1, 801))


def test_open_and_new_project_switch_the_state_and_remember_it(make_controller, app_dir: Path) -> None:
    ctrl = make_controller()
    ctrl.fields.set("system_prompt", "first project")
    other = app_dir / "other.toml"
    ctrl.actions.invoke("btn_new_project", str(other))
    assert ctrl.paths.project_file == other.resolve()
    assert ctrl.state.project_name == "other" and ctrl.state.system_prompt == ""
    assert (
        tomllib.loads((app_dir / "manual_slop.toml").read_text())["project"]["system_prompt"]
        == "first project"
    )
    ctrl.actions.invoke("btn_open_project", str(app_dir / "manual_slop.toml"))
    assert ctrl.state.system_prompt == "first project"
    assert ctrl.fields.get("recent_projects")[:2] == ["manual_slop.toml", "other.toml"]
    with pytest.raises(InvalidValue, match="already exists"):
        ctrl.actions.invoke("btn_new_project", str(other))
    with pytest.raises(InvalidValue, match="does not exist"):
        ctrl.actions.invoke("btn_open_project", str(app_dir / "missing.toml"))
    events = [e.type for e in ctrl.journal.read(0, limit=10_000)[0]]
    assert events.count("project_opened") == 2


def test_each_discussion_sends_in_its_own_conversation(make_controller) -> None:
    backend = FakeBackend()
    ctrl = make_controller(backend=backend)

    def send(text: str) -> None:
        ctrl.fields.set("ai_input", text)
        ctrl.actions.invoke("btn_gen_send")
        pump_until(ctrl, lambda: ctrl.state.ai_status == "done")
        ctrl.set_ai_status("idle")

    send("first in main")
    send("second in main")
    ctrl.actions.invoke("btn_new_discussion", "other")
    send("first in other")
    ctrl.listboxes.select("discussions", "main")
    send("back in main")
    assert [c["conversation"] for c in backend.calls] == [
        "discussion:main",
        "discussion:main",
        "discussion:other",
        "discussion:main",
    ]
    assert backend.resets == 0  # nobody's session is reset: each discussion has its own


def test_mma_state_event_is_prepared_off_the_main_thread_redacted_and_in_order(
    make_controller, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-ant-" + "Q7x9" * 10
    ctrl = make_controller(environ={"ANTHROPIC_API_KEY": key})
    tickets = [{"id": f"T{i}", "status": "todo", "description": "x"} for i in range(50)]
    tickets[3]["description"] = f"uses {key}"
    def post() -> None:
        ctrl.post_mma_state({"status": "running", "tickets": tickets})
        ctrl.add_comms_entry({"direction": "OUT", "kind": "request", "payload": {"text": "x" * 5_000}})

    poster = threading.Thread(target=post)
    poster.start()
    poster.join(5)
    tickets[0]["status"] = "completed"  # the poster keeps mutating its list: the event must not change
    measured: list[Any] = []
    original = events_module.approx_size
    for module in (events_module, log_budget_module):
        monkeypatch.setattr(module, "approx_size", lambda value: measured.append(value) or original(value))
    ctrl.process_pending()
    assert measured == []  # the frame measures neither the snapshot nor the comms entry: the poster did
    assert len(ctrl.state.comms_log) == 1 and ctrl.state.comms_budget.total > 5_000
    assert ctrl.state.mma_status == "running" and len(ctrl.state.mma_tickets) == 50
    (event,) = [e for e in ctrl.journal.read(0, limit=10_000)[0] if e.type == "mma_state"]
    assert event.payload["status"] == "running" and "event" not in event.payload
    assert "event_size" not in event.payload  # measured by the poster for the journal's byte budget
    assert event.payload["tickets"][0]["status"] == "todo"
    assert key not in repr(event.payload) and "uses " in event.payload["tickets"][3]["description"]
