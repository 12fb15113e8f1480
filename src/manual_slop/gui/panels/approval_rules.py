"""Approval rules: the project's HITL rules in the order they win, an editor to add, change and
delete one (delete asks first), the entries of the file that are not rules (with why), the
built-in defaults, and a "which rule decides?" box.

Every change goes through an action -- ``btn_approval_rule_save``, ``btn_approval_rule_delete``
-- the same validation and saving as ``PUT /api/approval/rules``; a refusal is shown under the
editor (and as a toast) and the draft stays open to fix it. The panel keeps only the draft
being typed (:class:`RuleDraft`), the rule waiting for its delete confirmation and the test
box's inputs (:class:`RuleProbe`); the verdict is computed from the clutch's rules each frame.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from imgui_bundle import imgui

from manual_slop.governance.rules import (
    GATE_TRIGGERS,
    OBSERVED_TRIGGERS,
    POLICY_ACTIONS,
    Action,
    OnTimeout,
    Rule,
    RuleEvent,
    Trigger,
    Verdict,
)
from manual_slop.gui.confirm import confirm_modal
from manual_slop.gui.form import form, form_row
from manual_slop.gui.widgets import COLORS, text_elided, text_wrapped_colored

if TYPE_CHECKING:
    from manual_slop.governance.bindings import RulesBinding
    from manual_slop.gui.ui import Ui

__all__ = ["CONFIRM_TITLE", "RuleDraft", "RuleProbe", "render_approval_rules"]

CONFIRM_TITLE = "Delete approval rule"
FORM_LABELS = ("Name", "Trigger", "Action", "Priority", "Tool", "Path glob", "Pattern", "Over $", "Timeout s",
               "On timeout")  # fmt: skip
EVENT_TRIGGERS = (*GATE_TRIGGERS, *OBSERVED_TRIGGERS)
# (label, attribute, widget id) of the editor's and the test box's text rows
FILTER_ROWS = (
    ("Tool", "tool", "rule_tool"),
    ("Path glob", "path_glob", "rule_path_glob"),
    ("Pattern", "pattern", "rule_pattern"),
    ("Over $", "threshold_usd", "rule_threshold"),
    ("Timeout s", "timeout_s", "rule_timeout"),
)
PROBE_ROWS = (
    ("Tool", "tool", "probe_tool"),
    ("Path", "path", "probe_path"),
    ("Text", "text", "probe_text"),
    ("Spent $", "spent_usd", "probe_spent"),
)
TIPS = {
    "rule_name": "unique; every decision the rule makes is recorded with it",
    "rule_tool": "a glob on the tool name, e.g. run_* (empty: any)",
    "rule_path_glob": "a glob on the path, e.g. src/*.py (empty: any)",
    "rule_pattern": "a regular expression searched in the text (empty: any)",
    "rule_threshold": "cost_over: the session's spend (list prices) that trips it",
    "rule_timeout": "ask: how long to wait (empty: approval.timeout_s)",
    "probe_tool": "the tool name, e.g. run_shell or write_file",
    "probe_path": "the path the call names",
    "probe_text": "a script, a result, a step: what pattern rules search",
    "probe_spent": "cost_over: the session's spend",
}
ACTION_COLORS = {Action.DENY: "error", Action.ASK: "info", Action.ALLOW: "ok"}


@dataclass(slots=True)
class RuleDraft:
    """A rule as typed in the editor (numbers as the text the widgets hold)."""

    name: str = ""
    trigger: str = "before_tool"
    action: str = "ask"
    priority: int = 0
    tool: str = ""
    path_glob: str = ""
    pattern: str = ""
    threshold_usd: str = ""
    timeout_s: str = ""
    on_timeout: str = "reject"
    replaces: str = ""  # the name of the rule being changed; '' for a new rule
    error: str = ""  # why the last save was refused

    @classmethod
    def of(cls, rule: Rule) -> RuleDraft:
        return cls(
            name=rule.name,
            trigger=str(rule.trigger),
            action=str(rule.action),
            priority=rule.priority,
            tool=rule.tool,
            path_glob=rule.path_glob,
            pattern=rule.pattern,
            threshold_usd="" if rule.threshold_usd is None else f"{rule.threshold_usd:g}",
            timeout_s="" if rule.timeout_s is None else f"{rule.timeout_s:g}",
            on_timeout=str(rule.on_timeout),
            replaces=rule.name,
        )

    def values(self) -> dict[str, Any]:
        """``btn_approval_rule_save``'s user_data: the keys typed (an empty box is a key left out;
        text that is no number goes as typed, for the rule engine to name)."""
        rule: dict[str, Any] = {
            "name": self.name.strip(),
            "trigger": self.trigger,
            "action": self.action,
            "priority": self.priority,
        }
        for key in ("tool", "path_glob", "pattern"):
            if getattr(self, key):
                rule[key] = getattr(self, key)
        for key in ("threshold_usd", "timeout_s"):
            text = str(getattr(self, key)).strip()
            if text:
                rule[key] = _number(text)
        if self.action == Action.ASK and (self.on_timeout != OnTimeout.REJECT or "timeout_s" in rule):
            rule["on_timeout"] = self.on_timeout
        data: dict[str, Any] = {"rule": rule}
        if self.replaces:
            data["replaces"] = self.replaces
        return data


@dataclass(slots=True)
class RuleProbe:
    """The "which rule decides?" box: an event as typed, and the verdict it got last."""

    trigger: str = "before_tool"
    tool: str = ""
    path: str = ""
    text: str = ""
    spent_usd: str = ""
    verdict: Verdict | None = None

    def event(self) -> RuleEvent:
        spent = _number(self.spent_usd.strip()) if self.spent_usd.strip() else 0.0
        return RuleEvent(
            Trigger(self.trigger),
            self.tool.strip(),
            self.text,
            self.path.strip() or None,
            spent if isinstance(spent, float) else 0.0,
        )


def _number(text: str) -> float | str:
    try:
        value = float(text)
    except ValueError:
        return text
    return value if math.isfinite(value) else text


def _binding(ui: Ui) -> RulesBinding:
    return ui.ctrl.governance  # type: ignore[attr-defined]


def render_approval_rules(ui: Ui) -> None:
    binding = _binding(ui)
    policy = binding.ctrl.clutch.policy
    if imgui.button("New rule"):
        ui.gui.rule_draft = RuleDraft()
    imgui.same_line()
    allowed = ", ".join(str(a) for a in Action if a in POLICY_ACTIONS[policy])
    imgui.text_disabled(f"policy {policy}: its {allowed} rules apply")
    if imgui.is_item_hovered():
        imgui.set_item_tooltip("change the policy in AI Settings; see docs/guide_governance.md")
    _rules(ui, binding)
    _problems(binding)
    if ui.gui.rule_draft is not None:
        _editor(ui, ui.gui.rule_draft)
    _probe(ui, binding)
    _defaults(binding)
    _confirm_delete(ui)


# -- the list ------------------------------------------------------------------------------------
def _rules(ui: Ui, binding: RulesBinding) -> None:
    rules = binding.sorted_rules()
    imgui.separator_text(f"Rules ({len(rules)}), the first that matches wins")
    if not rules:
        text_wrapped_colored(
            COLORS["muted"],
            "No rules: the policy's built-in rule decides everything. New rule adds one to the "
            "project file's [[approval.rules]].",
        )
        return
    inactive = set(binding.ctrl.clutch.ruleset.inactive())
    flags = imgui.TableFlags_.row_bg | imgui.TableFlags_.borders_inner_v | imgui.TableFlags_.resizable
    if not imgui.begin_table("##approval_rules", 7, flags):
        return
    fixed, stretch = imgui.TableColumnFlags_.width_fixed, imgui.TableColumnFlags_.width_stretch
    em = imgui.get_font_size()
    for header, column_flags, size in (
        ("priority", fixed, em * 4),
        ("name", stretch, 1.0),
        ("trigger", fixed, imgui.calc_text_size("before_tool").x + em * 0.5),
        ("matches", stretch, 1.4),
        ("action", fixed, imgui.calc_text_size("allow").x + em * 0.5),
        ("on timeout", fixed, imgui.calc_text_size("keep_waiting").x + em * 0.5),
        ("", fixed, imgui.calc_text_size("EditDelete").x + em * 2),
    ):
        imgui.table_setup_column(header, column_flags, size)
    imgui.table_headers_row()
    for rule in rules:
        _row(ui, rule, rule.name in inactive)
    imgui.end_table()


def _row(ui: Ui, rule: Rule, inactive: bool) -> None:
    muted = COLORS["muted"] if inactive else None
    imgui.table_next_row()
    imgui.push_id(f"rule:{rule.name}")
    imgui.table_set_column_index(0)
    imgui.text(str(rule.priority))
    imgui.table_set_column_index(1)
    text_elided(rule.name, color=muted)
    if inactive and imgui.is_item_hovered():
        imgui.set_item_tooltip(f"not in force: the policy leaves {rule.action} rules out")
    imgui.table_set_column_index(2)
    imgui.text_unformatted(str(rule.trigger))
    imgui.table_set_column_index(3)
    text_elided(_matches(rule), color=COLORS["muted"])
    imgui.table_set_column_index(4)
    imgui.text_colored(muted or COLORS[ACTION_COLORS[rule.action]], str(rule.action))
    imgui.table_set_column_index(5)
    if rule.action is Action.ASK:
        after = f" {rule.timeout_s:g}s" if rule.timeout_s is not None else ""
        imgui.text_unformatted(f"{rule.on_timeout}{after}")
    imgui.table_set_column_index(6)
    if imgui.small_button("Edit"):
        ui.gui.rule_draft = RuleDraft.of(rule)
    imgui.same_line()
    if imgui.small_button("Delete"):
        ui.gui.rule_delete = rule.name
    imgui.pop_id()


def _matches(rule: Rule) -> str:
    parts = [f"{key}={getattr(rule, key)}" for key in ("tool", "path_glob", "pattern") if getattr(rule, key)]
    if rule.threshold_usd is not None:
        parts.append(f"spend >= ${rule.threshold_usd:g}")
    return " ".join(parts) or "every event"


def _problems(binding: RulesBinding) -> None:
    problems = binding.problems()
    if not problems:
        return
    imgui.separator_text(f"Not in force ({len(problems)})")
    for problem in problems:
        text_wrapped_colored(COLORS["error"], str(problem))


# -- the editor ----------------------------------------------------------------------------------
def _editor(ui: Ui, draft: RuleDraft) -> None:
    imgui.separator_text(f"Edit {draft.replaces}" if draft.replaces else "New rule")
    with form("##rule_form", FORM_LABELS) as shown:
        if shown:
            draft.name = _text("Name", "rule_name", draft.name)
            form_row("Trigger", "what the rule fires on")
            draft.trigger = _combo("##rule_trigger", draft.trigger, [str(t) for t in Trigger])
            form_row("Action", "ask waits for a human; allow and deny decide at once")
            draft.action = _combo("##rule_action", draft.action, [str(a) for a in Action])
            form_row("Priority", "higher wins; on a tie deny > ask > allow")
            _, draft.priority = imgui.input_int("##rule_priority", draft.priority)
            for label, attr, widget in FILTER_ROWS:
                setattr(draft, attr, _text(label, widget, getattr(draft, attr)))
            form_row("On timeout", "ask: what happens when nobody decides in time")
            draft.on_timeout = _combo("##rule_on_timeout", draft.on_timeout, [str(o) for o in OnTimeout])
    refused_now = False
    if imgui.button("Save##rule"):
        draft.error = ui.act.refusal("btn_approval_rule_save", draft.values())
        refused_now = bool(draft.error)
        if not draft.error:
            ui.gui.rule_draft = None
    imgui.same_line()
    if imgui.button("Cancel##rule"):
        ui.gui.rule_draft = None
    if draft.error:
        text_wrapped_colored(COLORS["error"], draft.error)
        if refused_now:
            imgui.set_scroll_here_y(1.0)  # the reason in view, under the button just clicked


def _text(label: str, widget: str, value: str) -> str:
    """A form row with the one-line text input ``##<widget>`` (its tooltip from TIPS); the text."""
    form_row(label, TIPS[widget])
    _, value = imgui.input_text(f"##{widget}", value)
    return value


def _combo(label: str, current: str, options: list[str]) -> str:
    chosen = current
    if imgui.begin_combo(label, current):
        for option in options:
            clicked, _ = imgui.selectable(option, option == current)
            if clicked:
                chosen = option
        imgui.end_combo()
    return chosen


# -- which rule decides? ------------------------------------------------------------------------
def _probe(ui: Ui, binding: RulesBinding) -> None:
    imgui.separator_text("Which rule decides?")
    probe = ui.gui.rule_probe
    if probe is None:
        probe = ui.gui.rule_probe = RuleProbe()
    with form("##rule_probe", ("Event", "Tool", "Path", "Text", "Spent $")) as shown:
        if shown:
            form_row("Event", "the kind of event")
            probe.trigger = _combo("##probe_trigger", probe.trigger, [str(t) for t in EVENT_TRIGGERS])
            for label, attr, widget in PROBE_ROWS:
                setattr(probe, attr, _text(label, widget, getattr(probe, attr)))
    probe.verdict = binding.decide(probe.event())
    verdict = probe.verdict
    imgui.text("->")
    imgui.same_line()
    imgui.text_colored(COLORS[ACTION_COLORS[verdict.action]], str(verdict.action))
    imgui.same_line()
    imgui.text(f"by rule {verdict.rule_name}")
    if verdict.action is Action.ASK:
        wait = f"{verdict.timeout_s:g} s" if verdict.timeout_s is not None else "approval.timeout_s"
        imgui.same_line()
        imgui.text_disabled(f"(then {verdict.on_timeout} after {wait})")


def _defaults(binding: RulesBinding) -> None:
    ruleset = binding.ctrl.clutch.ruleset
    if not imgui.collapsing_header("Built-in rules"):
        return
    for builtin in dict.fromkeys(ruleset.defaults.values()):
        imgui.text_colored(COLORS[ACTION_COLORS[builtin.action]], f"{builtin.name}: {builtin.action}")
        imgui.same_line()
        imgui.text_disabled(f"{', '.join(builtin.triggers)}: {builtin.meaning}")


# -- delete, after confirmation ----------------------------------------------------------------------
def _confirm_delete(ui: Ui) -> None:
    pending = ui.gui.rule_delete
    note = "It is removed from the project file's [[approval.rules]] at once."
    answer = confirm_modal(CONFIRM_TITLE, pending is not None, f"Delete the approval rule {pending}?", note)
    if answer is None:
        return
    if answer:
        ui.act.click("btn_approval_rule_delete", {"name": pending})
        draft = ui.gui.rule_draft
        if draft is not None and draft.replaces == pending:
            ui.gui.rule_draft = None
    ui.gui.rule_delete = None
