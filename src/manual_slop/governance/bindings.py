"""The HITL rules in the app: fields, actions, the escalation task and the edits that save them.

``ctrl.governance`` is a :class:`RulesBinding`. The rules live in the project file
(``[[approval.rules]]``); the controller loads them into the clutch when a project opens or
reloads. Every change made here (the Approval rules panel, its actions, ``PUT
/api/approval/rules``) is validated as a whole, written to the project file atomically and
applied to the clutch at once, on the main thread. Entries of the file that are not valid rules
are kept as they are by the panel's edits (and still reported), so an edit never loses them;
``PUT`` replaces the whole list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from manual_slop.automation import ActionCall, InvalidValue
from manual_slop.governance.rules import (
    BUILTIN_RULES,
    Rule,
    RuleError,
    RuleEvent,
    RuleProblem,
    RuleSet,
    Trigger,
    Verdict,
    parse_rules,
)
from manual_slop.schema import Field, get_path

if TYPE_CHECKING:
    from manual_slop.controller import AppController

__all__ = ["RulesBinding", "register"]


class RulesBinding:
    """The project's rules as the panel and the Hook API see and change them (main thread)."""

    def __init__(self, ctrl: AppController) -> None:
        self.ctrl = ctrl

    # -- reading ------------------------------------------------------------------------------
    def raw(self) -> list[Any]:
        """``approval.rules`` as the project file holds it."""
        raw = get_path(self.ctrl.documents.project, "approval.rules", [])
        return list(raw) if isinstance(raw, list) else []

    def problems(self) -> list[RuleProblem]:
        """What is wrong with the file's entries (those rules are not in force)."""
        return parse_rules(self.raw())[1]

    @property
    def rules(self) -> tuple[Rule, ...]:
        return self.ctrl.clutch.rules

    def sorted_rules(self) -> list[Rule]:
        """The rules in the order they win: priority, then deny > ask > allow, then file order."""
        rank = {"deny": 2, "ask": 1, "allow": 0}
        indexed = list(enumerate(self.rules))
        indexed.sort(key=lambda pair: (-pair[1].priority, -rank[pair[1].action], pair[0]))
        return [rule for _, rule in indexed]

    def snapshot(self) -> dict[str, Any]:
        """``GET /api/approval/rules``: policy, rules, problems, inactive rules, built-in defaults."""
        ruleset = self.ctrl.clutch.ruleset
        return {
            "policy": str(ruleset.policy),
            "rules": [rule.to_dict() for rule in ruleset.project_rules],
            "inactive": ruleset.inactive(),
            "problems": [problem.to_dict() for problem in self.problems()],
            "defaults": [builtin.to_dict() for builtin in BUILTIN_RULES],
        }

    def decide(self, event: RuleEvent) -> Verdict:
        return self.ctrl.clutch.decide(event)

    # -- changing (main thread) --------------------------------------------------------------------
    def replace(self, raw: Any) -> RuleSet:
        """Make ``raw`` (a list of rule tables, either format) the project's rules: all valid, or
        RuleError listing every problem and nothing changed."""
        rules, problems = parse_rules(raw)
        if problems:
            raise RuleError(problems)
        self._save([rule.to_dict() for rule in rules])
        return self.ctrl.clutch.ruleset

    def save_rule(self, data: Mapping[str, Any], replaces: str = "") -> Rule:
        """Add a rule, or put it in the place of the rule named ``replaces``; RuleError names the
        problems (checked with the other rules: a name may be used once)."""
        kept = list(self.rules)
        position = len(kept)
        if replaces:
            position = next((i for i, rule in enumerate(kept) if rule.name == replaces), -1)
            if position < 0:
                raise InvalidValue(f"there is no approval rule named {replaces!r} to change")
            del kept[position]
        name = data.get("name")
        if any(rule.name == name for rule in kept):
            raise RuleError([RuleProblem(position, str(name), "name", "is already the name of another rule")])
        entries = [rule.to_dict() for rule in kept]
        entries.insert(position, dict(data))
        rules, problems = parse_rules(entries)
        if problems:  # the others were in force already: these are the new rule's
            raise RuleError(problems)
        self._save([rule.to_dict() for rule in rules], keep_broken=True)
        return rules[position]

    def delete_rule(self, name: str) -> None:
        kept = [rule for rule in self.rules if rule.name != name]
        if len(kept) == len(self.rules):
            known = ", ".join(rule.name for rule in self.rules) or "none"
            raise InvalidValue(f"no approval rule named {name!r} (rules: {known})")
        self._save([rule.to_dict() for rule in kept], keep_broken=True)

    def _save(self, entries: list[dict[str, Any]], *, keep_broken: bool = False) -> None:
        if keep_broken:  # the file's entries that are not rules stay for the user to fix
            raw = self.raw()
            entries = entries + [raw[i] for i in sorted({p.index for p in self.problems()}) if i < len(raw)]
        rules, _ = parse_rules(entries)
        try:
            self.ctrl.documents.save_approval_rules(entries)
        except OSError as exc:
            raise InvalidValue(f"the rules could not be saved to the project file: {exc}") from None
        self.ctrl.clutch.set_rules(rules)


def register(ctrl: AppController) -> None:
    binding = RulesBinding(ctrl)
    ctrl.governance = binding  # type: ignore[attr-defined]
    state = ctrl.state
    reg = ctrl.fields.register
    reg(
        "approval_rules",
        Field(list, [], "The project's HITL rules ([[approval.rules]]), in file order (read-only)"),
        lambda: [rule.to_dict() for rule in binding.rules],
    )
    reg(
        "approval_rule_problems",
        Field(list, [], "Entries of [[approval.rules]] that are not valid rules, with why (read-only)"),
        lambda: [str(problem) for problem in binding.problems()],
    )

    def save(call: ActionCall) -> None:
        data = call.user_data
        if not isinstance(data, dict) or not isinstance(data.get("rule"), dict):
            raise InvalidValue("btn_approval_rule_save: expected {rule: {...}, replaces?: name}")
        replaces = data.get("replaces", "")
        if not isinstance(replaces, str):
            raise InvalidValue("btn_approval_rule_save: replaces must be the name of a rule")
        try:
            binding.save_rule(data["rule"], replaces)
        except RuleError as exc:
            raise InvalidValue(str(exc)) from None

    def delete(call: ActionCall) -> None:
        data = call.user_data
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            raise InvalidValue("btn_approval_rule_delete: expected {name: str}")
        binding.delete_rule(data["name"])

    ctrl.actions.register(
        "btn_approval_rule_save",
        save,
        "Add an approval rule, or replace the one named 'replaces': {rule: {name, trigger, action, ...}, "
        "replaces?}; saved to the project file",
        Field(dict, {}),
    )
    ctrl.actions.register(
        "btn_approval_rule_delete",
        delete,
        "Delete the approval rule {name}; saved to the project file",
        Field(dict, {}),
    )

    def escalated(task: dict[str, Any]) -> None:
        dialog = dict(task["dialog"])
        mirror = state.pending_dialogs
        for index, shown in enumerate(mirror):
            if shown["id"] == dialog["id"]:
                mirror[index] = {**shown, "escalated": True}
                ctrl.notify("error", str(dialog.get("message") or f"dialog {dialog['id']} was escalated"))
                return

    ctrl.register_task_handler("pending_escalated", escalated)


def event_for(
    trigger: str, tool: str = "", text: str = "", path: str = "", spent_usd: float = 0.0
) -> RuleEvent:
    """An event as the "which rule decides?" box describes it (an empty path is no path)."""
    return RuleEvent(Trigger(trigger), tool, text, path or None, spent_usd)
