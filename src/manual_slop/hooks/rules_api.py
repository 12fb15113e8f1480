"""The Hook API's approval-rule endpoints: read the HITL rules, and replace them.

Both run on the main thread through the controller's ``RulesBinding`` (the same code as the
Approval rules panel), so what the clutch applies, what the panel shows and what the project
file holds never disagree. A ``PUT`` is all or nothing: every problem is listed in the 400's
message, each with its rule (index and name) and key. Schemas are in :mod:`.rules_schemas`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from manual_slop.automation import AutomationError
from manual_slop.governance.rules import RuleError
from manual_slop.hooks.errors import BadRequest, Conflict
from manual_slop.hooks.routes import Call, Route

if TYPE_CHECKING:
    from manual_slop.controller import AppController
    from manual_slop.governance.bindings import RulesBinding

__all__ = ["RuleProblems", "rule_routes"]


class RuleProblems(BadRequest):
    """400 for rules that do not validate: the message lists every problem (so it may be longer
    than other messages; each quotes at most 60 characters of the input)."""

    max_chars: ClassVar[int] = 20_000


class RulesApi:
    """Handlers bound to one controller."""

    def __init__(self, ctrl: AppController, on_main: Callable[[Callable[[], Any]], Any]) -> None:
        self.ctrl = ctrl
        self.on_main = on_main

    def _binding(self) -> RulesBinding:
        binding = getattr(self.ctrl, "governance", None)
        if binding is None:
            raise Conflict("approval rules are not available in this app")
        return binding

    def rules(self, call: Call) -> dict[str, Any]:
        binding = self._binding()
        return self.on_main(binding.snapshot)

    def put_rules(self, call: Call) -> dict[str, Any]:
        binding, raw = self._binding(), call.body["rules"]

        def replace() -> dict[str, Any] | RuleError:
            try:
                binding.replace(raw)
            except RuleError as exc:  # the client's mistake: a reply, not an app error on the main thread
                return exc
            return binding.snapshot()

        try:
            result = self.on_main(replace)
        except AutomationError as exc:
            raise BadRequest(str(exc)) from None
        if isinstance(result, RuleError):
            listed = "\n".join(str(problem) for problem in result.problems)
            raise RuleProblems(f"{len(result.problems)} problem(s); nothing was changed:\n{listed}")
        return result


def rule_routes(ctrl: AppController, on_main: Callable[[Callable[[], Any]], Any]) -> tuple[Route, ...]:
    api = RulesApi(ctrl, on_main)
    return (
        Route("GET", "/api/approval/rules", "getApprovalRules",
              "The HITL rules: policy, the project's rules, inactive ones, problems, built-in defaults",
              api.rules, "ApprovalRules", errors=(408, 409)),
        Route("PUT", "/api/approval/rules", "putApprovalRules",
              "Replace the project's HITL rules (validated as a whole, saved, applied at once)",
              api.put_rules, "ApprovalRules", request="ApprovalRulesRequest", errors=(408, 409)),
    )  # fmt: skip
