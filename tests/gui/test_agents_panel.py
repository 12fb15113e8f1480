"""The Agents panel and the agent / token combos of AI Settings in the real window: a refused
folder listed with its reason after Reload, a profile created with the editor's widgets (on
disk under agents/<key>/), edited, refused with the reason shown (an unknown tool, a bad key),
chosen as the agent chat runs as, and deleted after a confirmation (its folder moved aside)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from imgui_bundle import imgui
from imgui_bundle.immapp import testing

from manual_slop.gui.panels.agents import CONFIRM_TITLE
from tests.gui.conftest import frames_until

ROW = "//Agents/##agents/agent:project:reviewer"
FORM = "//Agents/##agent_form"  # full paths: wildcards miss combos and multi-line inputs here


def _type(ctx, path: str, text: str) -> None:
    """Replace the text of the input at ``path``."""
    ctx.item_click(path)
    ctx.key_press(imgui.Key.mod_ctrl | imgui.Key.a)
    ctx.key_chars(text)


def _choose(ctx, combo: str, option: str) -> None:
    """Open the combo at ``combo`` (a full path: wildcards do not find combos) and click
    ``option`` in its popup."""
    ctx.item_click(combo)
    ctx.yield_(2)
    ctx.item_click(f"//$FOCUSED/{option}")


def _agent(ctrl, key: str) -> dict | None:
    return next((a for a in ctrl.state.agents if a["key"] == key), None)


def _description(ctrl) -> str:
    return str((_agent(ctrl, "reviewer") or {}).get("description"))


@pytest.mark.heavy(25)  # seconds here, alone on two cores
def test_agents_panel_creates_edits_refuses_activates_and_deletes_a_profile(
    make_controller, run_gui, artifacts: Path
) -> None:
    ctrl = make_controller()
    root = ctrl.paths.project_file.parent
    broken = root / "agents" / "broken"
    broken.mkdir(parents=True)
    (broken / "description.txt").write_text("a profile without its prompt\n")
    seen: dict[str, object] = {}

    def test(ctx, app) -> None:
        ctx.yield_(5)
        app.focus("Agents")
        ctx.yield_(3)
        ctx.item_click("//Agents/Reload##agents")
        frames_until(ctx, lambda: any(p["key"] == "broken" for p in ctrl.state.agent_problems))
        # create
        ctx.item_click("//Agents/New profile")
        ctx.yield_(2)
        _type(ctx, f"{FORM}/##agent_key", "reviewer")
        _type(ctx, f"{FORM}/##agent_description", "Reviews diffs")
        _choose(ctx, "//Agents/##agent_form/##agent_provider", "deepseek")
        _choose(ctx, "//Agents/##agent_form/##agent_token_profile", "extreme")
        ctx.item_uncheck(f"{FORM}/every tool##agent_every_tool")
        ctx.yield_(2)
        ctx.item_check("//Agents/##agent_tool_grid/read_file##tool")
        _type(ctx, "//Agents/##agent_memory", "python\nstyle")
        _type(ctx, "//Agents/##agent_prompt", "You review code carefully.")
        ctx.item_click("//Agents/Save##agent")
        frames_until(ctx, lambda: _agent(ctrl, "reviewer") is not None)
        seen["created"] = dict(_agent(ctrl, "reviewer") or {})
        seen["draft_closed"] = app.gui.agent_draft is None
        # edit: an unknown tool is refused (the reason shown, nothing saved), then fixed
        ctx.item_click(f"{ROW}/Edit")
        ctx.yield_(2)
        _type(ctx, f"{FORM}/##agent_description", "Reviews diffs and tests")
        _type(ctx, "//Agents/##agent_tools", "read_file, no_such_tool")
        ctx.item_click("//Agents/Save##agent")
        ctx.yield_(3)
        seen["refused"] = app.gui.agent_draft.error if app.gui.agent_draft else ""
        seen["refused_toasts"] = [t.message for t in app.gui.toasts]
        seen["after_refusal"] = dict(_agent(ctrl, "reviewer") or {})
        ctx.yield_(2)
        testing.capture(ctx, str(artifacts / "agents_refused_tool.png"), window="Agents")
        _type(ctx, "//Agents/##agent_tools", "read_file, list_directory")
        ctx.item_click("//Agents/Save##agent")
        frames_until(ctx, lambda: _description(ctrl) == "Reviews diffs and tests")
        # AI Settings: the agent chat runs as, and the token profile
        app.focus("AI Settings")
        ctx.yield_(3)
        _choose(ctx, "//AI Settings/##agent_form/##active_agent", "reviewer")
        frames_until(ctx, lambda: ctrl.state.active_agent == "reviewer")
        _choose(ctx, "//AI Settings/##agent_form/##token_profile", "extreme")
        frames_until(ctx, lambda: ctrl.state.token_profile == "extreme")
        ctx.yield_(3)
        testing.capture(ctx, str(artifacts / "ai_settings_agent.png"), window="AI Settings")
        # the panel with the active agent, the refused folder and the editor open
        app.focus("Agents")
        ctx.yield_(3)
        ctx.item_click(f"{ROW}/Edit")
        ctx.scroll_to_top("//Agents")
        ctx.yield_(3)
        testing.capture(ctx, str(artifacts / "panel_agents.png"), window="Agents")
        ctx.item_click("//Agents/Cancel##agent")
        # a bad key is refused with the reason under the editor
        ctx.item_click("//Agents/New profile")
        ctx.yield_(2)
        _type(ctx, f"{FORM}/##agent_key", "..")
        _type(ctx, "//Agents/##agent_prompt", "Anything.")
        ctx.item_click("//Agents/Save##agent")
        ctx.yield_(3)
        seen["bad_key"] = app.gui.agent_draft.error if app.gui.agent_draft else ""
        ctx.item_click("//Agents/Cancel##agent")
        # delete: Cancel keeps it, Delete moves the folder aside
        ctx.item_click(f"{ROW}/Delete")
        ctx.yield_(3)
        ctx.item_click(f"//{CONFIRM_TITLE}/Cancel##confirm")
        ctx.yield_(3)
        seen["kept"] = _agent(ctrl, "reviewer") is not None
        ctx.item_click(f"{ROW}/Delete")
        ctx.yield_(3)
        ctx.item_click(f"//{CONFIRM_TITLE}/Delete##confirm")
        frames_until(ctx, lambda: _agent(ctrl, "reviewer") is None)

    run_gui(ctrl, test)
    created = seen["created"]
    assert created["description"] == "Reviews diffs" and created["provider"] == "deepseek", created
    assert created["tools"] == ["read_file"] and created["token_profile"] == "extreme", created
    assert created["memory_categories"] == ["python", "style"], created
    assert seen["draft_closed"] is True
    assert "unknown tool(s): no_such_tool" in str(seen["refused"])
    assert any("no_such_tool" in t for t in seen["refused_toasts"]), seen  # type: ignore[union-attr]
    assert seen["after_refusal"]["description"] == "Reviews diffs"  # nothing was saved
    assert "agent key '..'" in str(seen["bad_key"])
    assert not (root / "agents" / "..").resolve().joinpath("system_prompt.md").exists()
    assert seen["kept"] is True
    assert not (root / "agents" / "reviewer").exists()
    moved = list((root / ".slop_cache" / "deleted_agents").glob("reviewer-*"))
    assert len(moved) == 1, moved
    assert (moved[0] / "system_prompt.md").read_text() == "You review code carefully."
    assert (moved[0] / "description.txt").read_text() == "Reviews diffs and tests\n"
    options = tomllib.loads((moved[0] / "agent.toml").read_text())
    tools = ["read_file", "list_directory"]
    assert options == {"provider": "deepseek", "token_profile": "extreme", "tools": tools}
    assert ctrl.state.active_agent == ""  # the deleted agent no longer runs chat
    assert ctrl.state.token_profile == "extreme"
    # (in tests the project and config.toml share a folder: it is read as both scopes)
    assert {p["key"] for p in ctrl.state.agent_problems} == {"broken"}
    assert "system_prompt.md is missing" in ctrl.state.agent_problems[0]["reason"]
