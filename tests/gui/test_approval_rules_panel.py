"""The Approval Rules panel in the real window: rules added and edited with the editor's widgets
(saved to the project file, applied by the clutch at once), a bad rule refused with the reason
under the editor, the "which rule decides?" box, a delete after a confirmation; and the modals
the rules open (a held tool result edited before the model sees it, a crossed cost threshold),
each naming the rule that asked."""

from __future__ import annotations

import threading
import tomllib
from pathlib import Path

import pytest
from imgui_bundle import imgui
from imgui_bundle.immapp import testing

from manual_slop.dialogs import CostDialog, ToolResultDialog
from manual_slop.governance.rules import Action
from manual_slop.gui.panels.approval_rules import CONFIRM_TITLE
from tests.gui.conftest import dialog_in_thread, frames_until

WINDOW = "//Approval Rules"
FORM = f"{WINDOW}/##rule_form"  # full paths: wildcards miss combos in tables
PROBE = f"{WINDOW}/##rule_probe"


def _type(ctx, path: str, text: str) -> None:
    ctx.item_click(path)
    ctx.key_press(imgui.Key.mod_ctrl | imgui.Key.a)
    ctx.key_chars(text)


def _choose(ctx, combo: str, option: str) -> None:
    ctx.item_click(combo)
    ctx.yield_(2)
    ctx.item_click(f"//$FOCUSED/{option}")


def _row(name: str) -> str:
    return f"{WINDOW}/##approval_rules/rule:{name}"


def _rule(ctrl, name: str):
    return next((r for r in ctrl.clutch.rules if r.name == name), None)


def _new_rule(ctx, name: str, trigger: str, action: str, **text: str) -> None:
    ctx.item_click(f"{WINDOW}/New rule")
    ctx.yield_(2)
    _type(ctx, f"{FORM}/##rule_name", name)
    if trigger != "before_tool":
        _choose(ctx, f"{FORM}/##rule_trigger", trigger)
    if action != "ask":
        _choose(ctx, f"{FORM}/##rule_action", action)
    for key, value in text.items():
        _type(ctx, f"{FORM}/##rule_{key}", value)


@pytest.mark.heavy(15)  # seconds here, alone on two cores
def test_rules_are_added_refused_edited_tested_and_deleted(make_controller, run_gui, artifacts: Path) -> None:
    ctrl = make_controller()
    seen: dict[str, object] = {}

    def test(ctx, app) -> None:
        ctx.yield_(5)
        app.focus("Approval Rules")
        ctx.yield_(3)
        # add: a deny rule, an ask rule on results
        _new_rule(ctx, "no-rm", "before_tool", "deny", tool="run_*", pattern=r"rm -rf")
        ctx.item_click(f"{WINDOW}/Save##rule")
        frames_until(ctx, lambda: _rule(ctrl, "no-rm") is not None)
        _new_rule(ctx, "results", "after_tool", "ask", tool="read_file")
        ctx.item_click(f"{WINDOW}/Save##rule")
        frames_until(ctx, lambda: _rule(ctrl, "results") is not None)
        # refused: a cost_over rule without its threshold; the reason under the editor, nothing saved
        _new_rule(ctx, "budget", "cost_over", "ask")
        ctx.item_click(f"{WINDOW}/Save##rule")
        ctx.yield_(3)
        seen["refused"] = app.gui.rule_draft.error if app.gui.rule_draft else ""
        seen["refused_saved"] = _rule(ctrl, "budget") is not None
        _type(ctx, f"{FORM}/##rule_threshold", "0.5")
        ctx.item_click(f"{WINDOW}/Save##rule")
        frames_until(ctx, lambda: _rule(ctrl, "budget") is not None)
        # edit: the deny rule's priority
        ctx.item_click(f"{_row('no-rm')}/Edit")
        ctx.yield_(2)
        _type(ctx, f"{FORM}/##rule_priority", "10")
        ctx.item_click(f"{WINDOW}/Save##rule")
        frames_until(ctx, lambda: getattr(_rule(ctrl, "no-rm"), "priority", 0) == 10)
        # which rule decides?
        _type(ctx, f"{PROBE}/##probe_tool", "run_shell")
        _type(ctx, f"{PROBE}/##probe_text", "rm -rf build")
        ctx.yield_(2)
        probe = app.gui.rule_probe
        seen["verdict"] = (probe.verdict.action, probe.verdict.rule_name) if probe else None
        ctx.scroll_to_top(WINDOW)
        ctx.yield_(3)
        testing.capture(ctx, str(artifacts / "panel_approval_rules.png"), window="Approval Rules")
        _type(ctx, f"{PROBE}/##probe_text", "make test")
        ctx.yield_(2)
        seen["verdict_other"] = (probe.verdict.action, probe.verdict.rule_name) if probe else None
        # delete: Cancel keeps the rule, Delete removes it
        ctx.item_click(f"{_row('results')}/Delete")
        ctx.yield_(2)
        ctx.item_click(f"//{CONFIRM_TITLE}/Cancel##confirm")
        ctx.yield_(2)
        seen["kept"] = _rule(ctrl, "results") is not None
        ctx.item_click(f"{_row('results')}/Delete")
        ctx.yield_(2)
        ctx.item_click(f"//{CONFIRM_TITLE}/Delete##confirm")
        frames_until(ctx, lambda: _rule(ctrl, "results") is None)

    run_gui(ctrl, test, size=(960, 720))  # a smaller window draws faster on software GL
    assert "approval.rules[2] 'budget': threshold_usd: a cost_over rule needs threshold_usd" in str(
        seen["refused"]
    )
    assert seen["refused_saved"] is False
    assert seen["verdict"] == (Action.DENY, "no-rm")
    assert seen["verdict_other"] == (Action.ASK, "policy=manual")
    assert seen["kept"] is True
    saved = tomllib.loads(ctrl.paths.project_file.read_text(encoding="utf-8"))["approval"]["rules"]
    assert saved == [
        {"name": "no-rm", "trigger": "before_tool", "action": "deny", "priority": 10, "tool": "run_*",
         "pattern": "rm -rf"},
        {"name": "budget", "trigger": "cost_over", "action": "ask", "priority": 0, "threshold_usd": 0.5,
         "on_timeout": "reject"},
    ]  # fmt: skip
    assert [r.name for r in ctrl.clutch.rules] == ["no-rm", "budget"]


@pytest.mark.heavy(10)
def test_the_modals_rules_open_name_the_rule_and_an_escalation(
    make_controller, run_gui, artifacts: Path
) -> None:
    ctrl = make_controller()
    ctrl.governance.replace(  # type: ignore[attr-defined]
        [
            {"name": "results", "trigger": "after_tool", "action": "ask", "tool": "read_file",
             "timeout_s": 0.2, "on_timeout": "escalate"},
            {"name": "budget", "trigger": "cost_over", "action": "ask", "threshold_usd": 0.5},
        ]
    )  # fmt: skip
    workers: list[threading.Thread] = []
    held = ToolResultDialog("read_file", {"path": "src/app.py"}, "success", "API_KEY = 'not for the model'\n")
    cost = CostDialog(
        "tr_parser", 0.62, 0.0, 0.5, "The session has spent an estimated $0.6200 on MMA, over $0.5."
    )
    seen: dict[str, object] = {}

    def test(ctx, app) -> None:
        ctx.yield_(3)
        dialog_in_thread(ctrl, held, workers)
        frames_until(
            ctx, lambda: any(d["id"] == held.uid and d.get("escalated") for d in ctrl.state.pending_dialogs)
        )
        seen["notified"] = [n.message for n in ctrl.state.notifications if n.level == "error"]
        ctx.yield_(3)
        testing.capture(ctx, str(artifacts / "modal_tool_result.png"))
        _type(ctx, "//Approve Tool Result/##tool_result", "API_KEY = '[withheld]'")
        ctx.item_click("//Approve Tool Result/Approve")
        frames_until(ctx, lambda: held.done)
        dialog_in_thread(ctrl, cost, workers)
        frames_until(ctx, lambda: any(d["id"] == cost.uid for d in ctrl.state.pending_dialogs))
        ctx.yield_(3)
        testing.capture(ctx, str(artifacts / "modal_cost_check.png"))
        ctx.item_click("//Cost Threshold Crossed/Reject")
        frames_until(ctx, lambda: cost.done)

    run_gui(ctrl, test)
    for worker in workers:
        worker.join(10)
    assert any("rule 'results' escalates it" in str(m) for m in seen["notified"]), seen  # type: ignore[union-attr]
    assert held.decision is not None and held.decision.approved and held.decision.decider == "gui"
    assert held.decision.payload["result"] == "API_KEY = '[withheld]'" and held.decision.edited
    assert cost.decision is not None and not cost.decision.approved
    audit = ctrl.session_log.read("audit")
    assert [(e["event"], e["kind"], e.get("decider"), e["rule"]) for e in audit] == [
        ("escalated", "tool_result", None, "results"),
        ("decision", "tool_result", "gui", "results"),
        ("decision", "cost_check", "gui", "budget"),
    ]
