"""Skills in the app: the catalog of the open project, its enable switches and the prompt block.

``ctrl.skills`` is a :class:`SkillsBinding`. The catalog is read from the project's and the
user's ``skills/`` folders at start-up, when a project opens, on ``btn_skills_reload`` and on
``GET /api/skills``. Every skill is on unless its name is in the project's ``[skills] disabled``
list (``AppState.skills_disabled``, saved with the project). A chat send takes the enabled
skills' names and descriptions into its system prompt (:meth:`SkillsBinding.apply_to_settings`)
and their bodies into the send's tool context (:meth:`SkillsBinding.offered`), where
``get_skill`` reads them. Every method here runs on the main thread.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from manual_slop.automation import ActionCall, InvalidValue
from manual_slop.schema import Field
from manual_slop.skills.loader import SkillCatalog, load_catalog
from manual_slop.skills.prompt import GET_SKILL, skills_block

if TYPE_CHECKING:
    from manual_slop.agents.profiles import AgentProfile
    from manual_slop.controller import AppController
    from manual_slop.state import AppState

__all__ = ["SkillsBinding", "register", "skill_rows"]

log = logging.getLogger(__name__)


class SkillsBinding:
    """The skills of the open project and which of them are on (main thread)."""

    def __init__(self, ctrl: AppController) -> None:
        self.ctrl = ctrl
        self.catalog = SkillCatalog()

    def roots(self) -> tuple[Path, Path]:
        """(project folder, user folder): where ``skills/`` is looked for."""
        paths = self.ctrl.paths
        return paths.project_file.parent, paths.config_file.parent

    def reload(self) -> SkillCatalog:
        """Read every skill again (the switches stay as the project has them)."""
        self.catalog = load_catalog(*self.roots())
        state = self.ctrl.state
        state.skills = [skill.summary() for _, skill in sorted(self.catalog.skills.items())]
        state.skill_problems = [p.to_dict() for p in self.catalog.problems]
        for problem in self.catalog.problems:
            log.warning("skill refused: %s: %s", problem.path, problem.reason)
        return self.catalog

    def offered(self) -> SkillCatalog:
        """The enabled skills: what the system prompt lists and ``get_skill`` hands out."""
        return self.catalog.enabled(set(self.ctrl.state.skills_disabled))

    def set_enabled(self, name: str, enabled: bool) -> dict[str, Any]:
        """Switch a skill on or off (saved with the project at the next flush); its row."""
        if self.catalog.get(name) is None:
            known = ", ".join(self.catalog.names()) or "none"
            raise InvalidValue(f"no skill {name[:70]!r} (skills: {known})")
        state = self.ctrl.state
        disabled = [n for n in state.skills_disabled if n != name]
        state.skills_disabled = disabled if enabled else sorted([*disabled, name])
        return next(row for row in skill_rows(state) if row["name"] == name)

    def apply_to_settings(self, settings: dict[str, Any], agent: AgentProfile | None = None) -> bool:
        """Append the "Available skills" block to one send's system prompt; False when nothing was
        added (no enabled skill, or an agent whose tools leave out get_skill)."""
        if agent is not None and agent.tools is not None and GET_SKILL not in agent.tools:
            return False  # it could not load them: naming them would only mislead the model
        block = skills_block(self.offered().skills.values())
        if not block:
            return False
        prompt = str(settings.get("system_prompt") or "").strip()
        settings["system_prompt"] = f"{prompt}\n\n{block}" if prompt else block
        return True


def skill_rows(state: AppState) -> list[dict[str, Any]]:
    """Every valid skill's summary with its ``enabled`` switch (the panel, the field, the API)."""
    disabled = set(state.skills_disabled)
    return [{**skill, "enabled": skill["name"] not in disabled} for skill in state.skills]


def register(ctrl: AppController) -> None:
    binding = SkillsBinding(ctrl)
    ctrl.skills = binding  # type: ignore[attr-defined]
    ctrl.on_project_opened(binding.reload)
    binding.reload()
    state = ctrl.state
    reg = ctrl.fields.register
    reg(
        "skills",
        Field(list, [], "Skills: name, description, scope, path, files, enabled (read-only)"),
        lambda: skill_rows(state),
    )
    reg(
        "skill_problems",
        Field(list, [], "Folders under skills/ that are not valid skills, with kind and reason (read-only)"),
        lambda: [dict(p) for p in state.skill_problems],
    )

    def enable(call: ActionCall) -> None:
        data = call.user_data
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            raise InvalidValue(f"btn_skill_enable: expected {{name, enabled}}, got {str(data)[:80]}")
        if not isinstance(data.get("enabled"), bool):
            raise InvalidValue("btn_skill_enable: 'enabled' must be true or false")
        binding.set_enabled(data["name"], data["enabled"])

    ctrl.actions.register("btn_skills_reload", lambda call: binding.reload(), "Read the skills again")
    ctrl.actions.register(
        "btn_skill_enable",
        enable,
        "Switch a skill on or off for this project: {name, enabled}",
        Field(dict, {}),
    )
