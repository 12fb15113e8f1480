"""The model calls of a plan that are not subtasks: planning (with one correction), merge, judge.

:class:`PlanModels` makes each call on a client of its own with the phase's settings (token
limit, provider), tools off, in a conversation named after the plan, and reports the tokens
it cost. :func:`request_plan` asks for a plan and, when the answer breaks a rule, sends the
errors back once in the same conversation; a second invalid answer raises
:class:`~manual_slop.plan.validate.PlanInvalid` with every issue (and the answer as given).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from manual_slop.cancel import CancelToken, RequestCancelled
from manual_slop.mma.errors import Aborted
from manual_slop.plan.llm_engine import ModelAccess, usage_of
from manual_slop.plan.model import PlanError
from manual_slop.plan.validate import PlanInvalid, PlanIssue, issues_text, parse_plan_reply

__all__ = ["PHASE_TIERS", "PlanModels", "UsageSink", "request_plan"]

# which tier a plan's calls are tagged and counted as (comms log, tool log, dashboard usage)
PHASE_TIERS = {"planner": "Tier 1", "execution": "Tier 3", "merge": "Tier 2", "judge": "Tier 4"}

# (phase, {"input_tokens", "output_tokens"}) for each call
UsageSink = Callable[[str, Mapping[str, int]], None]
SettingsFor = Callable[[str], dict[str, Any]]  # phase -> the AI settings a call of that phase is sent with


class PlanModels:
    """Text-only model calls of one plan: planner, merge and judge."""

    def __init__(
        self, access: ModelAccess, settings_for: SettingsFor, usage: UsageSink | None = None
    ) -> None:
        self.access = access
        self.settings_for = settings_for
        self.usage = usage

    def ask(
        self,
        phase: str,
        prompt: str,
        *,
        conversation: str,
        schema: dict[str, Any] | None = None,
        cancel: CancelToken | None = None,
        provider: str = "",
    ) -> str:
        """One answer; Aborted when ``cancel`` stops it, other exceptions as the client raises them."""
        settings = self.settings_for(phase)
        if provider and provider != settings.get("provider"):
            entry = (settings.get("providers") or {}).get(provider, {})
            settings.update(
                provider=provider,
                model=entry.get("model", ""),
                base_url=entry.get("base_url", ""),
                api_key=entry.get("api_key"),
            )
        try:
            with self.access.client(settings) as client:
                text = client.send(
                    "",
                    prompt,
                    enable_tools=False,
                    answer_schema=schema,
                    cancel=cancel,
                    conversation=conversation,
                    conversation_kind="plan",
                    tier=PHASE_TIERS.get(phase),
                )
                usage = usage_of(client)
        except RequestCancelled as exc:
            raise Aborted(f"the {phase} call was stopped: {exc.reason}") from None
        if self.usage is not None:
            self.usage(phase, usage)
        return str(text)


def request_plan(
    ask: Callable[[str], str], prompt: str, validate: Callable[[Any], list[PlanIssue]]
) -> tuple[dict[str, Any], str]:
    """A valid plan object and the reply it came from, after at most one correction round.

    ``ask(message)`` sends one message in the planner's conversation; ``validate(data)`` lists
    the rules ``data`` breaks. PlanInvalid (``issues``, ``reply``) when the second answer is
    still invalid."""
    reply = ask(prompt)
    data, issues = _check(reply, validate)
    if not issues:
        return data, reply
    reply = ask(issues_text(issues))
    data, issues = _check(reply, validate)
    if issues:
        raise PlanInvalid(issues, reply)
    return data, reply


def _check(reply: str, validate: Callable[[Any], list[PlanIssue]]) -> tuple[dict[str, Any], list[PlanIssue]]:
    try:
        data = parse_plan_reply(reply)
    except PlanError as exc:
        return {}, [PlanIssue(None, "shape", f"plan: {exc} [rule: shape]")]
    return data, validate(data)
