"""The ``recovery`` modal in the real window (one window for the three answers): the choice is
a radio button, Edit sends the edited description (an empty one is refused and nothing is
decided), and Reject leaves the choice to the worker."""

from __future__ import annotations

import threading
from pathlib import Path

from imgui_bundle import imgui
from imgui_bundle.immapp import testing

from manual_slop.dialogs import RecoveryDialog
from tests.gui.conftest import dialog_in_thread, frames_until

TRIED = ["tier4_qa after worker_failed (recoverable)", "ask_human after worker_failed (degraded)"]


def recovery_dialog() -> RecoveryDialog:
    failure = ("worker_failed", "degraded", "config.toml not found")
    return RecoveryDialog("T7", "tr_1", *failure, TRIED, "read it")


def test_the_recovery_modal_skips_edits_and_rejects(make_controller, run_gui, artifacts: Path) -> None:
    ctrl = make_controller()
    skip, edit, reject = recovery_dialog(), recovery_dialog(), recovery_dialog()
    workers: list[threading.Thread] = []

    def answer(ctx, dialog: RecoveryDialog, act) -> None:
        dialog_in_thread(ctrl, dialog, workers)
        frames_until(ctx, lambda: bool(ctrl.state.pending_dialogs))
        act(ctx)
        frames_until(ctx, lambda: not ctrl.state.pending_dialogs)

    def choose_skip(ctx) -> None:
        ctx.yield_(3)
        testing.capture(ctx, str(artifacts / "modal_recovery.png"))
        ctx.item_click("//Recover Ticket/**/Skip (dependents go on)")
        ctx.item_click("//Recover Ticket/Approve")

    def choose_edit(ctx) -> None:
        ctx.item_click("//Recover Ticket/**/Edit the ticket and retry")
        ctx.item_click("//Recover Ticket/**/##recovery_description")
        ctx.key_press(imgui.Key.mod_ctrl | imgui.Key.a)
        ctx.key_press(imgui.Key.delete)
        ctx.yield_(2)
        ctx.item_click("//Recover Ticket/Approve")  # refused: the description is empty
        ctx.yield_(3)
        assert not edit.done
        ctx.item_click("//Recover Ticket/**/##recovery_description")
        ctx.key_chars("read settings.toml")
        ctx.item_click("//Recover Ticket/Approve")

    def test(ctx, app) -> None:
        ctx.yield_(5)
        answer(ctx, skip, choose_skip)
        answer(ctx, edit, choose_edit)
        answer(ctx, reject, lambda c: c.item_click("//Recover Ticket/Reject"))

    run_gui(ctrl, test)
    for worker in workers:
        worker.join(10)
    skipped, edited, rejected = skip.decision, edit.decision, reject.decision
    assert skipped is not None and skipped.approved and skipped.decider == "gui"
    assert skipped.payload["choice"] == "skip" and skipped.payload["description"] == "read it"
    assert edited is not None and edited.approved and edited.edited
    assert edited.payload["choice"] == "edit" and edited.payload["description"] == "read settings.toml"
    assert rejected is not None and not rejected.approved and not rejected.abort
