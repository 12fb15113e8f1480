"""The Hook API's skill endpoints: the skills found (valid ones with their switch, refused
folders with the reason) and switching one on or off for the project.

Both run on the main thread through the controller's ``SkillsBinding`` (the same code as the
Skills panel's checkboxes). Their schemas are in :mod:`.skills_schemas`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from manual_slop.hooks.errors import Conflict, NotFound
from manual_slop.hooks.routes import Call, Route
from manual_slop.skills.bindings import skill_rows

if TYPE_CHECKING:
    from manual_slop.controller import AppController
    from manual_slop.skills.bindings import SkillsBinding

__all__ = ["skill_routes"]


class SkillsApi:
    """Handlers bound to one controller."""

    def __init__(self, ctrl: AppController, on_main: Callable[[Callable[[], Any]], Any]) -> None:
        self.ctrl = ctrl
        self.on_main = on_main

    def _binding(self) -> SkillsBinding:
        binding = getattr(self.ctrl, "skills", None)
        if binding is None:
            raise Conflict("skills are not available in this app")
        return binding

    def skills(self, call: Call) -> dict[str, Any]:
        binding = self._binding()

        def read() -> dict[str, Any]:
            binding.reload()  # what is on disk now: a skill added or fixed a moment ago shows
            state = self.ctrl.state
            return {"skills": skill_rows(state), "problems": [dict(p) for p in state.skill_problems]}

        return self.on_main(read)

    def put_skill(self, call: Call) -> dict[str, Any]:
        binding, name, enabled = self._binding(), call.params["name"], bool(call.body["enabled"])

        def switch() -> dict[str, Any] | None:
            if binding.reload().get(name) is None:
                return None
            return binding.set_enabled(name, enabled)

        row = self.on_main(switch)
        if row is None:
            raise NotFound(f"no skill {name[:70]!r}; GET /api/skills lists them (refused ones with why)")
        return {"skill": row}


def skill_routes(ctrl: AppController, on_main: Callable[[Callable[[], Any]], Any]) -> tuple[Route, ...]:
    api = SkillsApi(ctrl, on_main)
    return (
        Route("GET", "/api/skills", "getSkills",
              "Skills with their switch, and the folders refused as skills with the reason",
              api.skills, "SkillList", errors=(408, 409)),
        Route("PUT", "/api/skills/{name}", "putSkill",
              "Switch a skill on or off for this project (saved with the project)",
              api.put_skill, "SkillSwitched", request="SkillSwitch", errors=(404, 408, 409)),
    )  # fmt: skip
