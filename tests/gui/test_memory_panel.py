"""The Memory and File View panels in the real window: the index built and cancelled with
its buttons, a search whose file result opens the File View at its lines and whose recalled
turn switches to its discussion, notes and profile lines added, edited and deleted, the
profile switched off, and a note recorded elsewhere showing up by itself."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from imgui_bundle import imgui
from imgui_bundle.immapp import testing

from tests.gui.conftest import frames_until

INDEX_FRAMES = 20_000  # the index job runs the real embedder: give it time, not frames


def _project(app_dir: Path) -> None:
    src = app_dir / "src"
    src.mkdir()
    (src / "calc.py").write_text(
        '"""Arithmetic."""\n\n\ndef add_numbers(a: int, b: int) -> int:\n'
        '    """Add two numbers together and return the sum."""\n    return a + b\n'
    )
    # enough other files that an index run lasts long enough to be cancelled
    for n in range(60):
        body = "\n\n".join(
            f'def handler_{n}_{k}(request):\n    """Route {k} of module {n}: parse the request '
            f'headers, look up session {k} and render template {n}."""\n    return request.path + \'{k}\'\n'
            for k in range(6)
        )
        (src / f"module_{n:02d}.py").write_text(f'"""Web handlers, part {n}."""\n\n{body}')


def _built(status: dict) -> bool:
    return status.get("state") == "idle" and not status.get("cancelled")


@pytest.mark.heavy(30)  # seconds here, alone on two cores
def test_memory_panel_searches_opens_sources_and_edits_notes_and_profile(
    make_controller, run_gui, app_dir: Path, artifacts: Path
) -> None:
    _project(app_dir)
    ctrl = make_controller()
    ctrl.bind_main_thread()
    ctrl.fields.set("project_files", ["src/**/*.py"])
    ctrl.actions.invoke("btn_new_discussion", "design")
    store = ctrl.memory.service.store
    store.ensure_conversation("discussion:design", "discussion")
    store.append("discussion:design", "user", "we chose SQLite in WAL mode for the event store")
    ctrl.actions.invoke("btn_new_discussion", "later")
    seen: dict[str, object] = {}
    writers: list[threading.Thread] = []

    def searched() -> bool:
        return ctrl.state.memory_search_status.endswith(("result", "results"))

    def notes() -> list[str]:
        return [n["content"] for n in ctrl.state.memory_notes]

    def profile() -> list[str]:
        return [line["content"] for line in ctrl.state.memory_profile_lines]

    def test(ctx, app) -> None:
        ctx.yield_(5)
        app.focus("Memory")
        frames_until(ctx, lambda: bool(ctrl.state.rag_status) and not ctrl.state.rag_status.get("reading"))
        seen["before"] = dict(ctrl.state.rag_status)
        # index: start, see it running, cancel; then build it to the end
        ctx.item_click("**/Re-index")
        frames_until(ctx, lambda: ctrl.state.rag_status.get("state") == "indexing", INDEX_FRAMES)
        ctx.item_click("**/Cancel##rag")
        frames_until(ctx, lambda: ctrl.state.rag_status.get("state") == "idle", INDEX_FRAMES)
        seen["cancelled"] = dict(ctrl.state.rag_status)
        ctx.item_click("**/Re-index")
        frames_until(
            ctx,
            lambda: (
                ctrl.state.rag_status.get("state") == "idle" and not ctrl.state.rag_status.get("cancelled")
            ),
            INDEX_FRAMES,
        )
        seen["built"] = dict(ctrl.state.rag_status)
        # search: the file result opens the File View at its lines
        ctx.item_click("**/##memory_query")
        ctx.key_chars("how do I add two numbers")
        ctx.item_click("**/Search##memory")
        frames_until(ctx, searched, INDEX_FRAMES)
        seen["first"] = dict(ctrl.state.memory_results[0])
        ctx.item_click("**/result0/###link")
        frames_until(ctx, lambda: ctrl.state.file_view.get("status") == "done", INDEX_FRAMES)
        ctx.yield_(5)
        testing.capture(ctx, str(artifacts / "panel_file_view.png"))
        # a recalled turn of another discussion: its link makes that discussion active
        app.focus("Memory")
        ctx.yield_(3)
        ctx.item_click("**/##memory_query")
        ctx.key_press(imgui.Key.mod_ctrl | imgui.Key.a)
        ctx.key_chars("which database did we choose for the event store")
        ctx.item_click("**/Search##memory")
        frames_until(
            ctx,
            lambda: searched() and any(r["kind"] == "conversation" for r in ctrl.state.memory_results),
            INDEX_FRAMES,
        )
        recalled = next(i for i, r in enumerate(ctrl.state.memory_results) if r["kind"] == "conversation")
        ctx.item_click(f"**/result{recalled}/###said")
        frames_until(ctx, lambda: ctrl.state.active_discussion == "design")
        # notes: add, edit, delete
        ctx.item_click("**/##note_category")
        ctx.key_chars("build")
        ctx.item_click("**/##note_new")
        ctx.key_chars("run make test before pushing")
        ctx.item_click("**/Add##note")
        frames_until(ctx, lambda: notes() == ["run make test before pushing"])
        note_id = ctrl.state.memory_notes[0]["id"]
        ctx.item_click(f"**/note{note_id}/Edit")
        ctx.item_click(f"**/note{note_id}/##content")
        ctx.key_press(imgui.Key.mod_ctrl | imgui.Key.a)
        ctx.key_chars("run make test and ruff before pushing")
        ctx.item_click(f"**/note{note_id}/Save")
        frames_until(ctx, lambda: notes() == ["run make test and ruff before pushing"])
        seen["category"] = ctrl.state.memory_notes[0]["category"]

        def record() -> None:  # the model's record_note, on another thread
            thread = threading.Thread(target=lambda: ctrl.memory.service.notes.add("from a tool", "general"))
            thread.start()
            writers.append(thread)

        ctrl.post_gui_task({"action": "custom_callback", "callback": record})
        frames_until(ctx, lambda: "from a tool" in notes())
        ctx.item_click(f"**/note{note_id}/Delete")
        frames_until(ctx, lambda: notes() == ["from a tool"])
        # profile: add, edit, delete, switch off
        for line in ("prefers type hints", "answers in British English"):
            ctx.item_click("**/##profile_new")
            ctx.key_chars(line)
            ctx.item_click("**/Add##profile")
            frames_until(ctx, lambda line=line: line in profile())
        first = ctrl.state.memory_profile_lines[0]["id"]
        ctx.item_click(f"**/line{first}/Edit")
        ctx.item_click(f"**/line{first}/##line")
        ctx.key_press(imgui.Key.mod_ctrl | imgui.Key.a)
        ctx.key_chars("prefers strict type hints")
        ctx.item_click(f"**/line{first}/Save")
        frames_until(ctx, lambda: profile()[0] == "prefers strict type hints")
        second = ctrl.state.memory_profile_lines[1]["id"]
        ctx.item_click(f"**/line{second}/Delete")
        frames_until(ctx, lambda: profile() == ["prefers strict type hints"])
        ctx.item_click("**/use the profile in every prompt")
        frames_until(ctx, lambda: ctrl.fields.get("memory_profile") is False)
        ctx.yield_(3)
        testing.capture(ctx, str(artifacts / "panel_memory.png"))

    run_gui(ctrl, test)
    for thread in writers:
        thread.join(10)
    assert seen["before"]["chunks"] == 0 and seen["before"]["state"] == "idle"  # read when first shown
    cancelled, built = seen["cancelled"], seen["built"]
    assert cancelled["cancelled"] is True and cancelled["done"] < cancelled["total"]
    assert built["files"] == 61 and built["chunks"] > 61 and built["error"] is None
    first = seen["first"]
    assert first["kind"] == "file" and first["source"] == "src/calc.py", first
    view = ctrl.state.file_view
    assert view["path"] == "src/calc.py" and (view["line"], view["end_line"]) == (
        first["start_line"],
        first["end_line"],
    )
    assert "def add_numbers" in view["text"]
    assert seen["category"] == "build"
    assert [n.content for n in ctrl.memory.service.notes.all()] == ["from a tool"]
    assert [line.content for line in ctrl.memory.service.profile.lines()] == ["prefers strict type hints"]
    assert ctrl.state.memory_settings["memory.profile"] is False
