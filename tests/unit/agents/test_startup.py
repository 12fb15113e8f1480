"""The agent profiles of the project the app opens at start-up are read at once, so the active
agent saved with the project shapes the first request."""

from __future__ import annotations

from pathlib import Path


def test_the_saved_active_agent_applies_from_the_start(make_controller, app_dir: Path) -> None:
    agent = app_dir / "agents" / "storyteller"
    agent.mkdir(parents=True)
    (agent / "system_prompt.md").write_text("You write stories.\n")
    (agent / "agent.toml").write_text('tools = ["read_file"]\n')
    (app_dir / "manual_slop.toml").write_text('[agents]\nactive = "storyteller"\n')

    ctrl = make_controller()

    assert [a["key"] for a in ctrl.state.agents] == ["storyteller"]
    active = ctrl.agents.active()
    assert active is not None and active.tools == ("read_file",)
    settings = {"system_prompt": "Project rule."}
    assert ctrl.agents.apply_to_settings(settings, "chat") is active
    assert settings["system_prompt"].startswith("You write stories.")
