"""Discussion, Files & Media, Context, Tier Streams and Usage panels in the real window."""

from __future__ import annotations

from pathlib import Path

from imgui_bundle import imgui
from imgui_bundle.immapp import testing

from tests.gui.conftest import frames_until


def test_discussion_panel_adds_edits_undoes_and_branches(make_controller, run_gui, artifacts: Path) -> None:
    ctrl = make_controller()

    def contents() -> list[str]:
        return [e["content"] for e in ctrl.state.discussion_entries()]

    def test(ctx, app) -> None:
        ctx.yield_(5)
        app.focus("Discussion")
        ctx.yield_(3)
        for text in ("first idea", "second idea"):
            ctx.item_click("**/##entry_text")
            ctx.key_chars(text)
            ctx.item_click("**/Add")
            frames_until(ctx, lambda t=text: t in contents())
        ctx.item_click("**/$$0/Edit")
        ctx.item_click("**/$$0/##edit")
        ctx.key_press(imgui.Key.mod_ctrl | imgui.Key.a)
        ctx.key_chars("first idea, refined")
        ctx.item_click("**/$$0/Save")
        frames_until(ctx, lambda: contents()[0] == "first idea, refined")
        ctx.key_press(imgui.Key.mod_ctrl | imgui.Key.z)
        frames_until(ctx, lambda: contents()[0] == "first idea")
        ctx.key_press(imgui.Key.mod_ctrl | imgui.Key.y)
        frames_until(ctx, lambda: contents()[0] == "first idea, refined")
        ctx.item_click("**/$$0/Branch")
        frames_until(ctx, lambda: ctrl.state.active_discussion == "main_take_1")
        ctx.yield_(3)
        testing.capture(ctx, str(artifacts / "panel_discussion.png"))

    run_gui(ctrl, test)
    assert ctrl.state.discussions["main_take_1"]["history"][0]["content"] == "first idea, refined"
    assert len(ctrl.state.discussions["main_take_1"]["history"]) == 1
    assert [e["content"] for e in ctrl.state.discussions["main"]["history"]] == [
        "first idea, refined",
        "second idea",
    ]


def test_files_and_context_panels_track_globs_and_show_the_compiled_context(
    make_controller, run_gui, app_dir: Path, artifacts: Path
) -> None:
    (app_dir / "src").mkdir()
    (app_dir / "src" / "app.py").write_text('"""The app."""\n\n\ndef main() -> int:\n    return 0\n')
    (app_dir / "README.md").write_text("# Demo\n\nA demo project.\n")
    (app_dir / ".env").write_text("API_TOKEN=not-for-the-model-0001\n")
    ctrl = make_controller()

    def test(ctx, app) -> None:
        ctx.yield_(5)
        app.focus("Files & Media")
        ctx.yield_(3)
        for glob in ("src/**/*.py", "README.md", ".env"):
            ctx.item_click("**/##add_path")
            ctx.key_chars(glob)
            ctx.item_click("**/Add##add_path")
            frames_until(ctx, lambda g=glob: g in ctrl.state.project_files)
        ctx.item_click("**/Refresh")
        frames_until(ctx, lambda: ctrl.fields.get("context_status") == "done")
        ctx.yield_(3)
        testing.capture(ctx, str(artifacts / "panel_files.png"))
        app.focus("Context")
        ctx.yield_(5)
        testing.capture(ctx, str(artifacts / "panel_context.png"))

    run_gui(ctrl, test)
    files = {f["path"]: f for f in ctrl.fields.get("context_files")}
    assert set(files) == {"src/app.py", "README.md", ".env"}
    assert files[".env"]["kind"] == "refused" and "(rule: env file)" in files[".env"]["error"]
    assert "def main() -> int" in ctrl.fields.get("context_preview")
    assert "not-for-the-model" not in ctrl.fields.get("context_preview")
    assert ctrl.fields.get("context_tokens") > 0
