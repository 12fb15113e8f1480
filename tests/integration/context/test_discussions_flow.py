"""Discussion operations, takes and undo through the automation surface and the history file."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import tomllib
from pathlib import Path
from typing import Any

import pytest

from manual_slop.automation import FeatureUnavailable, InvalidValue
from manual_slop.tasks import TaskState
from tests.helpers import pump_until
from tests.integration.context.stub_client import StubClient


def click(ctrl, item: str, user_data: Any = None) -> str:
    """Through the task pipeline, as the Hook API and the GUI do it."""
    task = {"action": "click", "item": item, "source": "hook"}
    if user_data is not None:
        task["user_data"] = user_data
    task_id = ctrl.post_gui_task(task)
    ctrl.run_frame()
    status = ctrl.tasks.get(task_id)
    if status.state is TaskState.ERROR:
        raise InvalidValue(status.error)
    return task_id


def contents(ctrl, name: str | None = None) -> list[str]:
    return [e["content"] for e in ctrl.state.discussion_entries(name)]


def history_file(app_dir: Path) -> dict:
    return tomllib.loads((app_dir / "manual_slop_history.toml").read_text())


def test_every_entry_operation_round_trips_through_the_history_file(make_controller, app_dir: Path) -> None:
    ctrl = make_controller()
    for text in ("q1", "a1", "q2"):
        click(ctrl, "btn_add_entry", {"content": text})
    click(ctrl, "btn_set_entry_role", {"index": 1, "role": "AI"})
    click(ctrl, "btn_insert_entry", {"index": 0, "content": "context", "role": "System"})
    click(ctrl, "btn_edit_entry", {"index": 3, "content": "q2, rephrased"})
    click(ctrl, "btn_move_entry", {"index": 0, "to": 3})
    click(ctrl, "btn_collapse_entry", {"index": 0})
    click(ctrl, "btn_add_entry", {"content": "scratch"})
    click(ctrl, "btn_delete_entry", {"index": 4})
    assert contents(ctrl) == ["q1", "a1", "q2, rephrased", "context"]
    ctrl.shutdown()
    saved = history_file(app_dir)["discussions"]["main"]["history"]
    assert [(e["role"], e["content"], e["collapsed"]) for e in saved] == [
        ("User", "q1", True),
        ("AI", "a1", False),
        ("User", "q2, rephrased", False),
        ("System", "context", False),
    ]
    again = make_controller()
    assert again.fields.get("discussion_entries") == saved


def test_bad_entry_requests_are_refused_with_the_reason(make_controller) -> None:
    ctrl = make_controller()
    click(ctrl, "btn_add_entry", {"content": "only"})
    with pytest.raises(InvalidValue, match=r"outside discussion 'main' \(0-0\)"):
        click(ctrl, "btn_edit_entry", {"index": 5, "content": "x"})
    with pytest.raises(InvalidValue, match="unknown role 'Robot'; roles: User, AI, Vendor API, System"):
        click(ctrl, "btn_set_entry_role", {"index": 0, "role": "Robot"})
    with pytest.raises(InvalidValue, match="needs 'content'"):
        click(ctrl, "btn_add_entry", {"role": "User"})
    with pytest.raises(InvalidValue, match=r"btn_move_entry\.to: expected integer >= 0"):
        click(ctrl, "btn_move_entry", {"index": 0, "to": -1})
    with pytest.raises(InvalidValue, match="no discussion named 'nope'"):
        click(ctrl, "btn_add_entry", {"content": "x", "discussion": "nope"})
    assert contents(ctrl) == ["only"]


def test_discussions_are_created_renamed_switched_and_deleted(make_controller, app_dir: Path) -> None:
    ctrl = make_controller()
    click(ctrl, "btn_new_discussion", "design")
    click(ctrl, "btn_add_entry", {"content": "d1"})
    click(ctrl, "btn_rename_discussion", {"new_name": "architecture"})
    assert ctrl.state.active_discussion == "architecture" and ctrl.fields.get("discussions") == [
        "architecture",
        "main",
    ]
    with pytest.raises(InvalidValue, match="already exists"):
        click(ctrl, "btn_new_discussion", "main")
    ctrl.post_gui_task({"action": "select_list_item", "listbox": "discussions", "item": "main"})
    ctrl.run_frame()
    click(ctrl, "btn_delete_discussion", "main")
    assert (
        ctrl.fields.get("discussions") == ["architecture"] and ctrl.state.active_discussion == "architecture"
    )
    click(ctrl, "btn_delete_discussion")  # the last one: an empty "main" takes its place
    assert ctrl.fields.get("discussions") == ["main"] and contents(ctrl) == []
    click(ctrl, "btn_undo")
    click(ctrl, "btn_undo")
    assert sorted(ctrl.state.discussions) == ["architecture", "main"]
    assert contents(ctrl, "architecture") == ["d1"]
    ctrl.shutdown()
    assert sorted(history_file(app_dir)["discussions"]) == ["architecture", "main"]


def test_takes_branch_switch_promote_and_persist(make_controller, app_dir: Path) -> None:
    ctrl = make_controller()
    for text in ("q1", "a1", "q2", "a2"):
        click(ctrl, "btn_add_entry", {"content": text})
    click(ctrl, "btn_branch_take", {"index": 1})
    assert ctrl.state.active_discussion == "main_take_1" and contents(ctrl) == ["q1", "a1"]
    click(ctrl, "btn_add_entry", {"content": "q2 done differently"})
    assert ctrl.fields.get("discussion_takes") == ["main_take_1"]
    assert ctrl.tab_bars.spec("discussion_takes").items() == ["main", "main_take_1"]
    ctrl.post_gui_task({"action": "select_tab", "tab_bar": "discussion_takes", "tab": "main"})
    ctrl.run_frame()
    assert ctrl.state.active_discussion == "main"
    click(ctrl, "btn_promote_take", "main_take_1")
    assert ctrl.state.active_discussion == "main"
    assert contents(ctrl, "main") == ["q1", "a1", "q2 done differently"]
    assert contents(ctrl, "main_take_1") == ["q1", "a1", "q2", "a2"]  # the former main line is kept
    ctrl.shutdown()
    saved = history_file(app_dir)["discussions"]
    assert saved["main_take_1"]["take_of"] == "main" and saved["main_take_1"]["take_at"] == 1
    again = make_controller()
    assert again.fields.get("discussion_takes") == ["main_take_1"]
    with pytest.raises(InvalidValue, match="is not a take"):
        click(again, "btn_promote_take", "main")


def test_a_hundred_and_fifty_edits_undo_and_redo_and_survive_a_restart(make_controller, app_dir) -> None:
    ctrl = make_controller()
    for i in range(150):
        click(ctrl, "btn_add_entry", {"content": f"e{i}"})
    click(ctrl, "btn_edit_entry", {"index": 0, "content": "first"})
    click(ctrl, "btn_branch_take", {"index": 10})
    assert len(ctrl.fields.get("undo_history")["undo"]) == 152
    for _ in range(120):
        click(ctrl, "btn_undo")
    assert (
        contents(ctrl, "main") == [f"e{i}" for i in range(32)] and "main_take_1" not in ctrl.state.discussions
    )
    assert ctrl.state.active_discussion == "main"
    for _ in range(20):
        click(ctrl, "btn_redo")
    assert contents(ctrl, "main") == [f"e{i}" for i in range(52)]
    ctrl.shutdown()
    assert [e["content"] for e in history_file(app_dir)["discussions"]["main"]["history"]] == [
        f"e{i}" for i in range(52)
    ]


def test_context_edits_share_the_undo_history(make_controller) -> None:
    ctrl = make_controller()
    ctrl.fields.set("project_files", ["src/*.py"])
    click(ctrl, "btn_add_entry", {"content": "hi"})
    click(ctrl, "btn_set_view_mode", {"path": "src/a.py", "mode": "skeleton"})
    assert ctrl.fields.get("undo_history")["undo"] == [
        "view src/a.py: skeleton",
        "add entry",
        "set project_files",
    ]
    for _ in range(3):
        click(ctrl, "btn_undo")
    assert (
        ctrl.fields.get("project_files") == []
        and ctrl.fields.get("file_views") == {}
        and contents(ctrl) == []
    )
    with pytest.raises(InvalidValue, match="nothing to undo"):
        click(ctrl, "btn_undo")
    assert [e.payload["op"] for e in ctrl.journal.read(0)[0] if e.type == "context_edit"][-3:] == ["undo"] * 3


def test_a_corrupt_history_file_is_moved_aside_not_lost(make_controller, app_dir: Path) -> None:
    garbage = '[discussions.main\nhistory = "unterminated'
    (app_dir / "manual_slop_history.toml").write_text(garbage)
    ctrl = make_controller()
    moved = list(app_dir.glob("manual_slop_history.toml.corrupt-*"))
    assert len(moved) == 1 and moved[0].read_text() == garbage
    assert any(moved[0].name in n.message for n in ctrl.state.notifications)
    assert ctrl.fields.get("discussions") == ["main"]
    click(ctrl, "btn_add_entry", {"content": "fresh start"})
    ctrl.shutdown()
    assert history_file(app_dir)["discussions"]["main"]["history"][0]["content"] == "fresh start"
    assert moved[0].read_text() == garbage


def test_an_older_history_file_still_loads(make_controller, app_dir: Path) -> None:
    (app_dir / "manual_slop_history.toml").write_text(
        'active = "old"\n[discussions.old]\nhistory = ["User: hello", "AI: hi there"]\n'
        '[discussions.plain]\nhistory = [{role = "User", content = "no ts or collapsed"}]\n'
    )
    ctrl = make_controller()
    assert ctrl.state.active_discussion == "old"
    assert [(e["role"], e["content"]) for e in ctrl.fields.get("discussion_entries")] == [
        ("User", "hello"),
        ("AI", "hi there"),
    ]
    assert ctrl.state.discussion_entries("plain")[0]["collapsed"] is False
    assert any("converted" in n.message for n in ctrl.state.notifications)
    ctrl.shutdown()
    saved = history_file(app_dir)["discussions"]
    assert saved["old"]["history"][1] == {"role": "AI", "content": "hi there", "ts": "", "collapsed": False}


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_SYSTEM": os.devnull,
    }
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_update_commit_stamps_the_discussion_with_git_head(make_controller, app_dir: Path) -> None:
    git(app_dir, "init", "-q")
    (app_dir / "f.txt").write_text("x")
    git(app_dir, "add", "f.txt")
    git(app_dir, "commit", "-q", "-m", "first")
    head = git(app_dir, "rev-parse", "HEAD")
    ctrl = make_controller()
    click(ctrl, "btn_update_commit")
    assert ctrl.state.discussion_status == "reading git HEAD..."
    pump_until(ctrl, lambda: ctrl.fields.get("discussion_commit") == head)
    assert ctrl.state.discussion_status == "idle"
    assert ctrl.session_log.read("clicalls")[-1]["stdout"] == head
    ctrl.shutdown()
    assert history_file(app_dir)["discussions"]["main"]["git_commit"] == head


def test_update_commit_outside_a_repository_says_so(make_controller, app_dir: Path) -> None:
    ctrl = make_controller()
    ctrl.fields.set("files_base_dir", "/")  # never a repository here
    click(ctrl, "btn_update_commit")
    pump_until(ctrl, lambda: ctrl.state.discussion_status == "idle")
    assert ctrl.fields.get("discussion_commit") == ""
    assert "not inside a git repository" in ctrl.state.notifications[-1].message


def test_compression_replaces_the_history_archives_it_and_can_be_undone(make_controller) -> None:
    box: list = []
    client = StubClient(box, reply="Decided: use TOML. Files: src/app.py. Open: caching?")
    ctrl = make_controller(backend=client)
    box.append(ctrl)
    for text in ("Should we use TOML?", "Yes, TOML.", "Which file?", "src/app.py"):
        click(ctrl, "btn_add_entry", {"content": text})
    click(ctrl, "btn_compress_discussion")
    assert ctrl.state.discussion_status == "compressing..."
    pump_until(ctrl, lambda: ctrl.state.discussion_status == "idle")
    entries = ctrl.fields.get("discussion_entries")
    assert len(entries) == 1 and entries[0]["role"] == "System"
    assert (
        entries[0]["content"].startswith("[Summary of 4 earlier entries]")
        and "Open: caching?" in entries[0]["content"]
    )
    call = client.calls[0]
    assert call["enable_tools"] is False and "Yes, TOML." in call["message"]
    assert call["thread"].startswith("slop-request")
    pump_until(ctrl, lambda: any(e.get("kind") == "discussion_archive" for e in ctrl.state.comms_log))
    archive = next(e for e in ctrl.session_log.read("comms") if e.get("kind") == "discussion_archive")
    assert [e["content"] for e in archive["entries"]] == [
        "Should we use TOML?",
        "Yes, TOML.",
        "Which file?",
        "src/app.py",
    ]
    click(ctrl, "btn_undo")
    assert contents(ctrl) == ["Should we use TOML?", "Yes, TOML.", "Which file?", "src/app.py"]


def test_compression_keeps_entries_added_meanwhile_and_refuses_when_they_changed(make_controller) -> None:
    gate = threading.Event()
    box: list = []
    client = StubClient(box, reply="summary", gate=gate)
    ctrl = make_controller(backend=client)
    box.append(ctrl)
    for text in ("a", "b", "c"):
        click(ctrl, "btn_add_entry", {"content": text})
    click(ctrl, "btn_compress_discussion")
    with pytest.raises(InvalidValue, match="already being compressed"):
        click(ctrl, "btn_compress_discussion")
    click(ctrl, "btn_add_entry", {"content": "d"})
    gate.set()
    pump_until(ctrl, lambda: ctrl.state.discussion_status == "idle")
    assert [e["content"].splitlines()[-1] for e in ctrl.fields.get("discussion_entries")] == ["summary", "d"]

    gate.clear()
    click(ctrl, "btn_compress_discussion")
    click(ctrl, "btn_edit_entry", {"index": 0, "content": "changed meanwhile"})
    gate.set()
    pump_until(ctrl, lambda: ctrl.state.discussion_status == "idle")
    assert contents(ctrl)[0] == "changed meanwhile" and len(contents(ctrl)) == 2
    assert "changed while it was being compressed" in ctrl.state.notifications[-1].message


def test_compression_failures_and_missing_provider_are_reported(make_controller) -> None:
    ctrl = make_controller()
    click(ctrl, "btn_add_entry", {"content": "a"})
    click(ctrl, "btn_add_entry", {"content": "b"})
    with pytest.raises(InvalidValue, match="no AI provider"):
        click(ctrl, "btn_compress_discussion")
    failing = make_controller(backend=StubClient(fail=True))
    click(failing, "btn_add_entry", {"content": "a"})
    click(failing, "btn_add_entry", {"content": "b"})
    click(failing, "btn_compress_discussion")
    pump_until(failing, lambda: failing.state.discussion_status == "idle")
    assert "stub provider is down" in failing.state.notifications[-1].message
    assert contents(failing) == ["a", "b"]


def test_auto_add_off_keeps_the_discussion_unchanged(make_controller) -> None:
    client = StubClient()
    ctrl = make_controller(backend=client)
    ctrl.fields.set("auto_add", False)
    ctrl.fields.set("ai_input", "hi")
    ctrl.actions.invoke("btn_gen_send")
    pump_until(ctrl, lambda: ctrl.state.ai_status == "done")
    assert contents(ctrl) == [] and ctrl.state.ai_response == "stub reply"
    ctrl.actions.invoke("btn_reset_session")
    assert client.resets == 1 and ctrl.state.ai_status == "idle"


def test_gen_send_and_compress_say_so_without_a_provider(make_controller) -> None:
    ctrl = make_controller()
    ctrl.fields.set("ai_input", "hi")
    with pytest.raises(FeatureUnavailable):
        ctrl.actions.invoke("btn_gen_send")
    assert json.dumps(ctrl.fields.get("undo_history")) == '{"undo": [], "redo": []}'
