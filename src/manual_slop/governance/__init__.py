"""Governance around the Execution Clutch: HITL rules (which events ask, allow or deny, and what
a timeout does) and the ``cost_over`` watch of a running track. See docs/guide_governance.md."""

from __future__ import annotations

from manual_slop.governance.cost import PRICES, CostWatch, estimate_cost
from manual_slop.governance.rules import (
    BUILTIN_RULES,
    Action,
    AllowRule,
    ApprovalPolicy,
    BuiltinRule,
    OnTimeout,
    Rule,
    RuleError,
    RuleEvent,
    RuleProblem,
    RuleSet,
    Trigger,
    Verdict,
    parse_rules,
    rules_or_raise,
)
from manual_slop.governance.subject import event_of

__all__ = [
    "BUILTIN_RULES",
    "PRICES",
    "Action",
    "AllowRule",
    "ApprovalPolicy",
    "BuiltinRule",
    "CostWatch",
    "OnTimeout",
    "Rule",
    "RuleError",
    "RuleEvent",
    "RuleProblem",
    "RuleSet",
    "Trigger",
    "Verdict",
    "estimate_cost",
    "event_of",
    "parse_rules",
    "rules_or_raise",
]
