"""The Hook API's agent endpoints: list, read, create or replace, and delete agent profiles.

Every change runs on the main thread through the controller's ``AgentsBinding`` (the same
code as the Agents panel's buttons), so the catalog the GUI shows and the files on disk
never disagree. Their schemas are in :mod:`.agents_schemas`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from manual_slop.automation import AutomationError
from manual_slop.hooks.errors import BadRequest, Conflict, NotFound
from manual_slop.hooks.routes import Call, Route

if TYPE_CHECKING:
    from manual_slop.agents.bindings import AgentsBinding
    from manual_slop.controller import AppController

__all__ = ["agent_routes"]


class AgentsApi:
    """Handlers bound to one controller."""

    def __init__(self, ctrl: AppController, on_main: Callable[[Callable[[], Any]], Any]) -> None:
        self.ctrl = ctrl
        self.on_main = on_main

    def _binding(self) -> AgentsBinding:
        binding = getattr(self.ctrl, "agents", None)
        if binding is None:
            raise Conflict("agent profiles are not available in this app")
        return binding

    def agents(self, call: Call) -> dict[str, Any]:
        binding = self._binding()

        def read() -> dict[str, Any]:
            state = self.ctrl.state
            return {
                "agents": [dict(a) for a in state.agents],
                "problems": [dict(p) for p in state.agent_problems],
                "active": state.active_agent,
            }

        return self.on_main(lambda: (binding.reload(), read())[1])

    def agent(self, call: Call) -> dict[str, Any]:
        binding, key = self._binding(), call.params["key"]
        profile = self.on_main(lambda: binding.reload().get(key))
        if profile is None:
            raise NotFound(f"no agent {key[:70]!r}")
        return {"agent": profile.to_dict()}

    def put_agent(self, call: Call) -> dict[str, Any]:
        binding, key, body = self._binding(), call.params["key"], dict(call.body or {})
        scope = str(body.pop("scope", "project"))
        try:
            profile = self.on_main(lambda: binding.save(key, body, scope))
        except AutomationError as exc:
            raise BadRequest(str(exc)) from None
        return {"agent": profile.to_dict()}

    def delete_agent(self, call: Call) -> dict[str, Any]:
        binding, key = self._binding(), call.params["key"]
        profile = self.on_main(lambda: binding.reload().get(key))
        if profile is None:
            raise NotFound(f"no agent {key[:70]!r}")
        try:
            moved = self.on_main(lambda: binding.delete(key, profile.scope))
        except AutomationError as exc:
            raise BadRequest(str(exc)) from None
        return {"deleted": key, "moved_to": moved}


def agent_routes(ctrl: AppController, on_main: Callable[[Callable[[], Any]], Any]) -> tuple[Route, ...]:
    api = AgentsApi(ctrl, on_main)
    return (
        Route("GET", "/api/agents", "getAgents", "Agent profiles, refused profile folders, the active agent",
              api.agents, "AgentList", errors=(408, 409)),
        Route("GET", "/api/agents/{key}", "getAgent", "One agent profile with its system prompt",
              api.agent, "Agent", errors=(404, 408, 409)),
        Route("PUT", "/api/agents/{key}", "putAgent", "Create or replace an agent profile",
              api.put_agent, "Agent", request="AgentRequest", errors=(408, 409)),
        Route("DELETE", "/api/agents/{key}", "deleteAgent",
              "Delete an agent profile (its folder moves to .slop_cache/deleted_agents)",
              api.delete_agent, "AgentDeleted", errors=(404, 408, 409)),
    )  # fmt: skip
