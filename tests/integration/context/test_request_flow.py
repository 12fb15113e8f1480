"""Gen + Send end to end with aggregation; preview and MD Only; aggregation off the main thread."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from manual_slop.automation import InvalidValue
from manual_slop.context.file_cache import FileCache
from manual_slop.context.items import FileItem, FileKind
from manual_slop.tasks import TaskState
from tests.helpers import pump_until
from tests.integration.context.stub_client import StubClient
from tests.unit.context.fixture_project import build_project


@pytest.fixture
def project_dir(app_dir: Path) -> Path:
    return build_project(app_dir / "proj")


def make(make_controller, project_dir: Path, **client_options):
    box: list = []
    client = StubClient(box, **client_options)
    ctrl = make_controller(backend=client)
    box.append(ctrl)
    ctrl.fields.set("files_base_dir", "proj")
    ctrl.fields.set("project_files", ["src/*.py", "docs/guide.md"])
    ctrl.fields.set("screenshots", ["shot.png"])
    ctrl.fields.set("system_prompt", "Be brief.")
    return ctrl, client


def test_a_message_goes_out_with_the_files_and_comes_back_into_discussion_and_comms(
    make_controller, project_dir: Path
) -> None:
    ctrl, client = make(make_controller, project_dir)
    ctrl.post_gui_task({"action": "set_value", "item": "ai_input", "value": "what does app.py do?"})
    ctrl.post_gui_task({"action": "click", "item": "btn_gen_send", "source": "hook"})
    pump_until(ctrl, lambda: ctrl.state.ai_status == "done")
    call = client.calls[0]
    assert call["message"] == "what does app.py do?" and call["thread"].startswith("slop-request")
    assert call["md"].startswith("## System Prompt\n\nBe brief.\n\n## Files\n\n")
    assert "### `src/app.py` (full)" in call["md"] and "## Screenshots" in call["md"]
    items = call["file_items"]
    assert all(isinstance(i, FileItem) for i in items)
    assert [i.name for i in items if i.kind is FileKind.IMAGE] == ["shot.png"]
    assert call["discussion_history"] == ""  # the discussion before this message
    assert [(e["role"], e["content"]) for e in ctrl.state.discussion_entries()] == [
        ("User", "what does app.py do?"),
        ("AI", "stub reply"),
    ]
    pump_until(ctrl, lambda: len(ctrl.state.comms_log) == 2)
    assert [e["kind"] for e in ctrl.state.comms_log] == ["request", "response"]
    assert [e["kind"] for e in ctrl.session_log.read("comms")] == ["request", "response"]
    files = {f["path"]: f for f in ctrl.fields.get("context_files")}
    assert files["src/app.py"]["effective_mode"] == "full" and files["shot.png"]["kind"] == "image"
    assert ctrl.fields.get("context_tokens") > 0
    events = [e.type for e in ctrl.journal.read(0)[0]]
    assert "context_compiled" in events and events.index("context_compiled") < events.index("response")


def test_the_reply_goes_to_the_discussion_the_message_was_sent_from(
    make_controller, project_dir: Path
) -> None:
    gate = threading.Event()
    ctrl, _ = make(make_controller, project_dir, gate=gate)
    ctrl.fields.set("ai_input", "question")
    ctrl.actions.invoke("btn_gen_send")
    ctrl.actions.invoke("btn_new_discussion", "elsewhere")
    gate.set()
    pump_until(ctrl, lambda: ctrl.state.ai_status == "done")
    assert [e["content"] for e in ctrl.state.discussion_entries("main")] == ["question", "stub reply"]
    assert ctrl.state.discussion_entries("elsewhere") == []


def test_aggregation_runs_off_the_main_thread(make_controller, project_dir: Path) -> None:
    """While a compile is stuck in the request thread, the frame loop still applies tasks."""
    entered, release = threading.Event(), threading.Event()

    class StuckCache(FileCache):
        def view(self, path, stamp, view, build):
            entered.set()
            release.wait(10)
            return super().view(path, stamp, view, build)

    ctrl, client = make(make_controller, project_dir)
    ctrl.context.cache = StuckCache()
    ctrl.fields.set("context_full_threshold", 100)  # big.py and app.py become skeletons: the cache is asked
    ctrl.fields.set("ai_input", "go")
    ctrl.actions.invoke("btn_gen_send")
    assert entered.wait(10)
    task = ctrl.post_gui_task({"action": "set_value", "item": "ai_input", "value": "typed meanwhile"})
    pump_until(ctrl, lambda: ctrl.tasks.get(task).state is TaskState.DONE)
    assert ctrl.state.ai_input == "typed meanwhile" and ctrl.state.ai_status == "sending..."
    assert not client.calls
    release.set()
    pump_until(ctrl, lambda: ctrl.state.ai_status == "done")
    assert "### `src/big.py` (skeleton, auto)" in client.calls[0]["md"]


def test_an_unusable_base_dir_fails_the_request_with_a_readable_message(make_controller, project_dir) -> None:
    ctrl, client = make(make_controller, project_dir)
    ctrl.fields.set("files_base_dir", "does/not/exist")
    ctrl.fields.set("ai_input", "hi")
    ctrl.actions.invoke("btn_gen_send")
    pump_until(ctrl, lambda: ctrl.state.ai_status == "error")
    assert (
        ctrl.state.ai_response.startswith("context: base dir ") and "does not exist" in ctrl.state.ai_response
    )
    assert not client.calls
    assert ctrl.state.context_status == "error"
    errors = [e.payload for e in ctrl.journal.read(0)[0] if e.type == "error"]
    assert any("does not exist" in p["message"] for p in errors)


def test_preview_and_md_only_compile_in_the_background(make_controller, project_dir: Path) -> None:
    ctrl, _ = make(make_controller, project_dir)
    ctrl.add_history_entry("User", "an earlier question")
    ctrl.run_frame()
    ctrl.actions.invoke("btn_refresh_context")
    assert ctrl.state.context_status == "compiling..."
    pump_until(ctrl, lambda: ctrl.state.context_status == "done")
    assert ctrl.fields.get("context_preview").startswith("## System Prompt")
    ctrl.actions.invoke("btn_md_only")
    pump_until(ctrl, lambda: ctrl.state.last_md_path != "")
    first = Path(ctrl.fields.get("last_md_path"))
    assert first == project_dir / "md_gen" / "manual_slop_001.md"
    text = first.read_text()
    assert text.startswith("## System Prompt") and "## Discussion (main)\n\nUser: an earlier question" in text
    ctrl.actions.invoke("btn_md_only")
    pump_until(ctrl, lambda: ctrl.state.last_md_path.endswith("_002.md"))
    assert any("MD Only: wrote" in n.message for n in ctrl.state.notifications)


def test_view_modes_are_set_per_file_and_validated(make_controller, project_dir: Path) -> None:
    ctrl, client = make(make_controller, project_dir)
    ctrl.actions.invoke("btn_set_view_mode", {"path": "src/app.py", "mode": "outline"})
    ctrl.actions.invoke(
        "btn_set_view_mode",
        {"path": "src/secrets.py", "mode": "custom", "slices": [[1, 2]], "annotation": "top"},
    )
    assert ctrl.fields.get("file_views") == {
        "src/app.py": {"mode": "outline"},
        "src/secrets.py": {"mode": "custom", "slices": [[1, 2]], "annotation": "top"},
    }
    with pytest.raises(InvalidValue, match=r"btn_set_view_mode\.mode: expected one of 'full'"):
        ctrl.actions.invoke("btn_set_view_mode", {"path": "x.py", "mode": "bogus"})
    with pytest.raises(InvalidValue, match="needs at least one line slice"):
        ctrl.actions.invoke("btn_set_view_mode", {"path": "x.py", "mode": "custom"})
    with pytest.raises(InvalidValue, match="unknown key"):
        ctrl.actions.invoke("btn_set_view_mode", {"path": "x.py", "mode": "full", "colour": 1})
    with pytest.raises(InvalidValue, match="needs 'path'"):
        ctrl.actions.invoke("btn_set_view_mode", {"mode": "full"})
    ctrl.actions.invoke("btn_set_view_mode", {"path": "src/app.py", "mode": "full"})  # back to the default
    assert list(ctrl.fields.get("file_views")) == ["src/secrets.py"]
    ctrl.fields.set("ai_input", "go")
    ctrl.actions.invoke("btn_gen_send")
    pump_until(ctrl, lambda: ctrl.state.ai_status == "done")
    assert "### `src/secrets.py` (custom)\n\ntop\n\nlines 1-2:" in client.calls[0]["md"]


def test_context_settings_are_validated_and_saved(make_controller, project_dir: Path, app_dir: Path) -> None:
    ctrl, _ = make(make_controller, project_dir)
    with pytest.raises(InvalidValue, match="does not compile"):
        ctrl.fields.set("mask_patterns", ["("])
    with pytest.raises(InvalidValue):
        ctrl.fields.set("context_token_budget", 10)
    ctrl.fields.set("context_strategy", "summarize")
    ctrl.fields.set("context_token_budget", 5_000)
    ctrl.fields.set("mask_patterns", ["secret"])
    ctrl.flush()
    import tomllib

    saved = tomllib.loads((app_dir / "manual_slop.toml").read_text())["context"]
    assert saved["strategy"] == "summarize" and saved["token_budget"] == 5_000
    assert saved["mask_patterns"] == ["secret"]


def test_presets_save_and_load_file_sets(make_controller, project_dir: Path) -> None:
    ctrl, _ = make(make_controller, project_dir)
    ctrl.actions.invoke("btn_set_view_mode", {"path": "src/big.py", "mode": "skeleton"})
    ctrl.actions.invoke("btn_save_preset", "review")
    ctrl.fields.set("project_files", ["docs/*.md"])
    ctrl.actions.invoke("btn_set_view_mode", {"path": "src/big.py", "mode": "full"})
    ctrl.actions.invoke("btn_load_preset", "review")
    assert ctrl.fields.get("project_files") == ["src/*.py", "docs/guide.md"]
    assert ctrl.fields.get("file_views") == {"src/big.py": {"mode": "skeleton"}}
    assert ctrl.fields.get("context_presets") == ["review"]
    ctrl.actions.invoke("btn_undo")  # the load
    assert ctrl.fields.get("project_files") == ["docs/*.md"]
    with pytest.raises(InvalidValue, match="no context preset named 'nope'; presets: review"):
        ctrl.actions.invoke("btn_load_preset", "nope")
    ctrl.actions.invoke("btn_delete_preset", "review")
    assert ctrl.fields.get("context_presets") == []


def test_the_apps_own_secrets_in_context_are_shown_refused_and_never_sent(
    make_controller, project_dir: Path, app_dir: Path
) -> None:
    key = "sk-ant-context-test-0123456789"
    (app_dir / "credentials.toml").write_text(f'[anthropic]\napi_key = "{key}"\n')
    (project_dir / "Notes.TXT").symlink_to(app_dir / "credentials.toml")
    (project_dir / "keys.md").write_text(f"the key is {key}\n")  # an ordinary file quoting a key
    ctrl, client = make(make_controller, project_dir)
    ctrl.fields.set("project_files", ["src/app.py", "../credentials.toml", "Notes.TXT", "keys.md"])
    ctrl.post_gui_task({"action": "click", "item": "btn_refresh_context"})
    pump_until(ctrl, lambda: ctrl.state.context_status == "done")
    files = {f["path"]: f for f in ctrl.fields.get("context_files")}
    refused = {path: f["error"] for path, f in files.items() if f["kind"] == "refused"}
    assert set(refused) == {str(app_dir / "credentials.toml"), "Notes.TXT"}
    assert all("(rule: credentials)" in reason for reason in refused.values())
    assert any("is not sent" in n.message for n in ctrl.state.notifications)
    ctrl.post_gui_task({"action": "set_value", "item": "ai_input", "value": "hi"})
    ctrl.post_gui_task({"action": "click", "item": "btn_gen_send", "source": "hook"})
    pump_until(ctrl, lambda: ctrl.state.ai_status == "done")
    for text in (ctrl.state.context_preview, client.calls[0]["md"]):
        assert key not in text and key[:12] not in text
        assert "[REDACTED:credentials.anthropic.api_key]" in text  # keys.md: the redactor's catch
