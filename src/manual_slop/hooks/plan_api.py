"""The Hook API's plan endpoints (start, list, read a plan) and the DAG edit of a ticket.

Starting a plan and editing a dependency change GUI-visible state, so they run on the main
thread (``on_main``) through the same code as ``/plan`` typed in the message box and the Task DAG
view's links. Their schemas are in :mod:`.plan_schemas`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from manual_slop.automation import AutomationError
from manual_slop.hooks.errors import BadRequest, Conflict, NotFound
from manual_slop.hooks.routes import Call, Route

if TYPE_CHECKING:
    from manual_slop.controller import AppController
    from manual_slop.plan.runtime import PlanRuntime

__all__ = ["plan_routes"]


class PlanApi:
    """Handlers bound to one controller."""

    def __init__(self, ctrl: AppController, on_main: Callable[[Callable[[], Any]], Any]) -> None:
        self.ctrl = ctrl
        self.on_main = on_main

    def _plans(self) -> PlanRuntime:
        plans = getattr(self.ctrl, "plans", None)
        if plans is None:
            raise Conflict("plans are not available in this app")
        return plans

    def start(self, call: Call) -> dict[str, Any]:
        plans, goal = self._plans(), call.body["goal"]
        if not goal.strip():
            raise BadRequest("body.goal: must not be blank")
        try:
            plan_id = self.on_main(lambda: plans.start(goal))
        except AutomationError as exc:
            raise BadRequest(str(exc)) from None
        return {"plan_id": plan_id}

    def plans(self, call: Call) -> dict[str, Any]:
        return {"plans": self._plans().summaries()}

    def plan(self, call: Call) -> dict[str, Any]:
        plans, plan_id = self._plans(), call.params["id"]
        try:
            return {"plan": self.on_main(lambda: plans.get(plan_id))}
        except LookupError as exc:
            raise NotFound(f"no plan {plan_id[:70]!r}: {exc}") from None

    def depends_on(self, call: Call) -> dict[str, Any]:
        mma = getattr(self.ctrl, "mma", None)
        if mma is None:
            raise Conflict("MMA is not available in this app")
        body, ticket_id = dict(call.body or {}), call.params["id"]
        if "depends_on" in body and ("add" in body or "remove" in body):
            raise BadRequest("give either depends_on (the whole list) or add/remove, not both")
        if not {"depends_on", "add", "remove"} & set(body):
            raise BadRequest("give depends_on (the whole list), or add and/or remove")
        try:
            return self.on_main(lambda: mma.set_dependencies(ticket_id, **body))
        except AutomationError as exc:
            raise BadRequest(str(exc)) from None


def plan_routes(ctrl: AppController, on_main: Callable[[Callable[[], Any]], Any]) -> tuple[Route, ...]:
    api = PlanApi(ctrl, on_main)
    return (
        Route("POST", "/api/plan", "startPlan", "Plan a goal (like /plan <goal>): the planner runs, the plan "
              "waits for approval in /api/pending", api.start, "PlanStarted", request="PlanRequest",
              errors=(408, 409)),
        Route("GET", "/api/plans", "getPlans", "The project's plans with status and counts",
              api.plans, "PlanList", errors=(409,)),
        Route("GET", "/api/plans/{id}", "getPlan", "A plan file (live while it runs), its merged answer",
              api.plan, "PlanFile", errors=(404, 408, 409)),
        Route("POST", "/api/mma/tickets/{id}/depends_on", "setTicketDependencies",
              "Edit a waiting ticket's dependencies; a cycle or a dangling id is refused",
              api.depends_on, "TicketEdited", request="DependsOnRequest", errors=(408, 409)),
    )  # fmt: skip
