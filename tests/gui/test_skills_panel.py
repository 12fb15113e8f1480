"""The Skills panel in the real window, drawn with a skill and a refused folder: unticking the
skill's checkbox switches it off for the project (what the panel lists is pinned by
tests/unit/skills/test_persistence.py through its data function)."""

from __future__ import annotations

from pathlib import Path

from imgui_bundle.immapp import testing

from tests.gui.conftest import frames_until


def test_the_skills_panel_lists_refuses_and_switches(make_controller, run_gui, artifacts: Path) -> None:
    ctrl = make_controller()
    root = ctrl.paths.project_file.parent
    for name, front in (("tidy", "name: tidy\ndescription: Tidy the code."), ("broken", "name: broken")):
        (root / "skills" / name).mkdir(parents=True)
        (root / "skills" / name / "SKILL.md").write_text(f"---\n{front}\n---\nBody\n", encoding="utf-8")
    ctrl.skills.reload()

    def test(ctx, app) -> None:
        ctx.yield_(3)
        app.focus("Skills")
        ctx.yield_(3)
        testing.capture(ctx, str(artifacts / "skills_panel.png"))
        ctx.item_click("//Skills/##skills/skill:tidy/##on")
        frames_until(ctx, lambda: ctrl.state.skills_disabled == ["tidy"])

    run_gui(ctrl, test, size=(800, 500))
    assert ctrl.state.skills_disabled == ["tidy"]
    assert [p["name"] for p in ctrl.fields.get("skill_problems")] == ["broken"]
