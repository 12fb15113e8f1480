"""The Memory panel's fields and actions without the window: bad input refused with a clear
message, the lists following changes from any thread, the search's three kinds, and the File
View reading only what the path policy allows, redacted."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from manual_slop.automation import InvalidValue
from tests.helpers import pump_until


@pytest.fixture
def ctrl(make_controller, app_dir: Path):
    controller = make_controller(environ={"API_TOKEN": "not-for-anyone-0001"})
    controller.bind_main_thread()
    return controller


@pytest.mark.parametrize(
    ("action", "data", "message"),
    [
        ("btn_memory_search", {"query": "   "}, "type something to search for"),
        ("btn_memory_search", {"query": "x", "top_k": 0}, "btn_memory_search.top_k"),
        ("btn_memory_search", {"query": 5}, "btn_memory_search.query"),
        ("btn_memory_search", {"query": "x", "limit": 3}, "unknown key(s) limit"),
        ("btn_memory_note_add", {"content": ""}, "a note needs some text"),
        ("btn_memory_note_add", {"category": "x"}, "needs 'content'"),
        ("btn_memory_note_add", {"content": "a", "category": "no/slashes"}, "category"),
        ("btn_memory_note_edit", {"id": 4242, "content": "a"}, "no note 4242"),
        ("btn_memory_note_delete", {"id": -1}, "btn_memory_note_delete.id"),
        ("btn_memory_profile_edit", {"id": 7, "content": "x"}, "no profile line 7"),
        ("btn_memory_profile_delete", {"id": 7}, "no profile line 7"),
        ("btn_memory_profile_add", {"content": "x" * 100_000}, "btn_memory_profile_add"),
        ("btn_open_file", {"path": "a.txt", "line": 0}, "btn_open_file.line"),
        ("btn_open_file", "a.txt", "expected table"),
    ],
)
def test_bad_input_is_refused_with_a_message_that_names_it(ctrl, action, data, message) -> None:
    with pytest.raises(InvalidValue) as refused:
        ctrl.actions.invoke(action, data)
    assert message in str(refused.value)
    assert ctrl.state.memory_notes == [] and ctrl.state.memory_profile_lines == []


def test_the_lists_follow_changes_from_any_thread(ctrl) -> None:
    ctrl.actions.invoke("btn_memory_profile_add", {"content": "prefers type hints"})
    with pytest.raises(InvalidValue, match="already says that"):
        ctrl.actions.invoke("btn_memory_profile_add", {"content": "Prefers type hints"})
    service = ctrl.memory.service
    writer = threading.Thread(target=lambda: service.notes.add("written by a tool call", "build"))
    writer.start()
    writer.join(10)
    pump_until(
        ctrl,
        lambda: (
            [n["content"] for n in ctrl.state.memory_notes] == ["written by a tool call"]
            and [p["content"] for p in ctrl.state.memory_profile_lines] == ["prefers type hints"]
        ),
        timeout=10,
    )
    assert ctrl.fields.get("memory_notes")[0]["category"] == "build"
    service.profile.replace([])
    pump_until(ctrl, lambda: ctrl.state.memory_profile_lines == [], timeout=10)


def test_a_search_finds_files_turns_and_notes_and_a_newer_search_wins(ctrl, app_dir: Path) -> None:
    (app_dir / "billing.py").write_text(
        '"""Billing."""\n\n\ndef invoice_total(lines):\n    """Sum the invoice lines, tax included."""\n'
        "    return sum(lines)\n"
    )
    ctrl.fields.set("project_files", ["*.py"])
    store = ctrl.memory.service.store
    store.ensure_conversation("discussion:old", "discussion")
    store.append("discussion:old", "user", "the invoice total must include tax")
    ctrl.actions.invoke(
        "btn_memory_note_add", {"content": "invoices are rounded to cents", "category": "billing"}
    )
    ctrl.memory.start_index()
    pump_until(ctrl, lambda: ctrl.state.rag_status.get("chunks"), timeout=120)
    ctrl.actions.invoke("btn_memory_search", {"query": "something else entirely"})
    ctrl.actions.invoke("btn_memory_search", {"query": "how is the invoice total computed", "top_k": 3})
    assert ctrl.state.memory_query == "how is the invoice total computed"
    pump_until(ctrl, lambda: ctrl.state.memory_search_status.endswith("results"), timeout=60)
    results = ctrl.fields.get("memory_results")
    kinds = [r["kind"] for r in results]
    assert kinds[0] == "file" and results[0]["source"] == "billing.py", results
    assert "conversation" in kinds and "note" in kinds, results
    recalled = next(r for r in results if r["kind"] == "conversation")
    assert recalled["source"] == "discussion:old" and recalled["role"] == "user"


def test_the_file_view_reads_only_what_the_path_policy_allows_and_redacts(ctrl, app_dir: Path) -> None:
    (app_dir / ".env").write_text("API_TOKEN=not-for-anyone-0001\n")
    (app_dir / "blob.bin").write_bytes(b"\x00\x01binary")
    (app_dir / "ok.txt").write_text("line one\ntoken API_TOKEN=not-for-anyone-0001 in text\n")
    for path, why in ((".env", "env file"), ("../outside.txt", "outside the project"), ("missing.py", "")):
        with pytest.raises(InvalidValue) as refused:
            ctrl.actions.invoke("btn_open_file", {"path": path})
        assert why in str(refused.value) and path in str(refused.value)
        assert ctrl.state.file_view == {}
    ctrl.actions.invoke("btn_open_file", {"path": "blob.bin"})
    pump_until(ctrl, lambda: ctrl.state.file_view.get("status") == "error", timeout=10)
    assert "binary" in ctrl.state.file_view["error"]
    ctrl.actions.invoke("btn_open_file", {"path": "ok.txt", "line": 2})
    pump_until(ctrl, lambda: ctrl.state.file_view.get("status") == "done", timeout=10)
    view = ctrl.fields.get("file_view")
    assert view["path"] == "ok.txt" and view["line"] == view["end_line"] == 2
    assert "line one" in view["text"] and "not-for-anyone-0001" not in view["text"]
    assert ctrl.state.tab_requests.get("panels") == "File View"
    assert ctrl.state.show_windows.get("File View") is True


def test_the_file_view_asks_the_policy_about_the_file_it_opened(ctrl, app_dir: Path, tmp_path: Path) -> None:
    """A folder swapped for a symlink after the check: the file opened is outside, and refused;
    a pipe is refused without waiting for a writer."""
    from manual_slop.file_view import read_for_view

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.txt").write_text("outside the project\n")
    (app_dir / "sub").symlink_to(outside, target_is_directory=True)  # the state after the swap
    policy = ctrl.path_policy(app_dir)
    with pytest.raises(ValueError, match="outside the project"):
        read_for_view(app_dir / "sub" / "x.txt", policy, str)
    os.mkfifo(app_dir / "pipe.txt")
    outcome: list[BaseException] = []

    def read_pipe() -> None:
        try:
            read_for_view(app_dir / "pipe.txt", policy, str)
        except BaseException as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read_pipe)
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "opening a pipe waited for a writer"
    assert "not a regular file" in str(outcome[0])


def test_an_index_run_is_refused_a_folder_or_nothing(ctrl, app_dir: Path) -> None:
    (app_dir / "src").mkdir()
    (app_dir / "src" / "a.py").write_text("def a():\n    return 1\n")
    for paths, message in ((["src"], "not a file"), (["."], "not a file"), ([], "paths is empty")):
        with pytest.raises(InvalidValue, match=message):
            ctrl.memory.start_index(paths)
    with pytest.raises(InvalidValue, match=r"btn_memory_note_delete\.id"):
        ctrl.actions.invoke("btn_memory_note_delete", {"id": 2**63})
