"""The ``recovery`` modal in the real window: the choice is a radio button, Edit sends the
edited description, and an empty description is refused with a toast (nothing decided)."""

from __future__ import annotations

from pathlib import Path

from imgui_bundle import imgui
from imgui_bundle.immapp import testing

from manual_slop.dialogs import Decision, RecoveryDialog
from tests.gui.conftest import decide_in_window

TRIED = ["tier4_qa after worker_failed (recoverable)", "ask_human after worker_failed (degraded)"]


def _decide(make_controller, run_gui, act) -> Decision | None:
    dialog = RecoveryDialog(
        "T7", "tr_1", "worker_failed", "degraded", "config.toml not found", TRIED, "read it"
    )
    return decide_in_window(make_controller(), run_gui, dialog, act)


def test_skip_is_chosen_with_its_radio_button(make_controller, run_gui, artifacts: Path) -> None:
    def act(ctx) -> None:
        ctx.yield_(3)
        testing.capture(ctx, str(artifacts / "modal_recovery.png"))
        ctx.item_click("//Recover Ticket/**/Skip (dependents go on)")
        ctx.item_click("//Recover Ticket/Approve")

    decision = _decide(make_controller, run_gui, act)
    assert decision is not None and decision.approved and decision.decider == "gui"
    assert decision.payload["choice"] == "skip" and decision.payload["description"] == "read it"


def test_edit_sends_the_edited_description(make_controller, run_gui) -> None:
    def act(ctx) -> None:
        ctx.item_click("//Recover Ticket/**/Edit the ticket and retry")
        ctx.item_click("//Recover Ticket/**/##recovery_description")
        ctx.key_press(imgui.Key.mod_ctrl | imgui.Key.a)
        ctx.key_press(imgui.Key.delete)
        ctx.yield_(2)
        ctx.item_click("//Recover Ticket/Approve")  # refused: the description is empty
        ctx.yield_(3)
        ctx.item_click("//Recover Ticket/**/##recovery_description")
        ctx.key_chars("read settings.toml")
        ctx.item_click("//Recover Ticket/Approve")

    decision = _decide(make_controller, run_gui, act)
    assert decision is not None and decision.approved and decision.edited
    assert decision.payload["choice"] == "edit" and decision.payload["description"] == "read settings.toml"


def test_reject_leaves_the_choice_to_the_worker(make_controller, run_gui) -> None:
    def act(ctx) -> None:
        ctx.item_click("//Recover Ticket/Reject")

    decision = _decide(make_controller, run_gui, act)
    assert decision is not None and not decision.approved and not decision.abort
