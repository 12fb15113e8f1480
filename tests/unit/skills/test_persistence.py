"""The enable switches: saved in the project's ``[skills] disabled`` list, read back on open,
and refused for a name that is no skill."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from manual_slop.agents import AgentProfile
from manual_slop.automation import InvalidValue
from manual_slop.gui.panels.skills import skills_view


def write(root: Path, name: str, front: str) -> None:
    folder = root / "skills" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\n{front}\n---\nThe body of {name}.\n", encoding="utf-8")


def test_a_switch_is_saved_with_the_project_and_read_back(make_controller, app_dir: Path) -> None:
    write(app_dir, "alpha", "name: alpha\ndescription: First.")
    write(app_dir, "beta", "name: beta\ndescription: Second.")
    write(app_dir, "gamma", "description: no name")
    ctrl = make_controller()
    ctrl.bind_main_thread()
    assert [(s["name"], s["enabled"]) for s in ctrl.fields.get("skills")] == [("alpha", True), ("beta", True)]
    ctrl.actions.invoke("btn_skill_enable", {"name": "beta", "enabled": False})
    with pytest.raises(InvalidValue, match=r"no skill 'gamma' \(skills: alpha, beta\)"):
        ctrl.actions.invoke("btn_skill_enable", {"name": "gamma", "enabled": False})
    with pytest.raises(InvalidValue, match="'enabled' must be true or false"):
        ctrl.actions.invoke("btn_skill_enable", {"name": "alpha", "enabled": "off"})
    assert ctrl.skills.offered().names() == ["alpha"]
    ctrl.flush()
    saved = tomllib.loads(ctrl.paths.project_file.read_text(encoding="utf-8"))
    assert saved["skills"] == {"disabled": ["beta"]}

    reopened = make_controller()
    assert reopened.state.skills_disabled == ["beta"]
    view = skills_view(reopened.state)  # the Skills panel's data
    assert view.heading == "Skills (1 of 2 on)"
    assert [(row.name, row.enabled) for row in view.skills] == [("alpha", True), ("beta", False)]
    [(where, reason)] = view.refused
    assert where == "project: skills/gamma"
    assert reason.startswith("missing_name: the front matter has no 'name'")

    settings = {"system_prompt": "Project rule."}
    assert reopened.skills.apply_to_settings(settings) is True
    assert settings["system_prompt"].startswith("Project rule.\n\n## Available skills")
    assert "- alpha: First." in settings["system_prompt"] and "beta" not in settings["system_prompt"]
    reopened.actions.invoke("btn_skill_enable", {"name": "beta", "enabled": True})
    reopened.actions.invoke("btn_skill_enable", {"name": "alpha", "enabled": False})
    reopened.actions.invoke("btn_skill_enable", {"name": "beta", "enabled": False})
    untouched = {"system_prompt": "Project rule."}
    assert reopened.skills.apply_to_settings(untouched) is False  # nothing on: nothing added
    assert untouched == {"system_prompt": "Project rule."}


def test_an_agent_that_cannot_call_get_skill_gets_no_skills_block(make_controller, app_dir: Path) -> None:
    write(app_dir, "alpha", "name: alpha\ndescription: First.")
    ctrl = make_controller()
    reader = AgentProfile("reader", "You read.", tools=("read_file",))
    settings = {"system_prompt": "You read."}
    assert ctrl.skills.apply_to_settings(settings, reader) is False
    assert settings == {"system_prompt": "You read."}
    allowed = AgentProfile("skilled", "You use skills.", tools=("read_file", "get_skill"))
    assert ctrl.skills.apply_to_settings(settings, allowed) is True
    assert "- alpha: First." in settings["system_prompt"]
