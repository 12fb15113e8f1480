"""Shows the oldest pending dialog as a modal and turns the user's choice into a decision.

Dialogs come from the clutch's mirror in ``state.pending_dialogs`` (creation order).
Each kind has a body module that draws the payload and its editable parts into
per-dialog buffers; the host draws the buttons, handles Enter (approve — Ctrl+Enter
while typing) and Escape (reject), and resolves through ``Actions.decide`` — the same
``resolve`` the Hook API calls. MMA dialogs also have **Abort Track**, which rejects with
``abort=True`` so the runtime stops the whole track. With no dialog pending, the *Track
Proposals* modal may show (:mod:`~manual_slop.gui.modals.track_proposal`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from imgui_bundle import ImVec2, imgui

# the modules themselves, not through the package: its __init__ imports this module
import manual_slop.gui.modals.bodies as bodies
import manual_slop.gui.modals.mma_step as mma_step
import manual_slop.gui.modals.recovery as recovery
import manual_slop.gui.modals.rule_bodies as rule_bodies
from manual_slop.gui.modals.track_proposal import render_track_proposals
from manual_slop.gui.widgets import COLORS

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["ABORTABLE", "MODAL_TITLES", "render_modals"]

MODAL_TITLES: dict[str, str] = {
    "confirm_script": "Confirm Script",
    "tool_approval": "Approve Tool Call",
    "mma_step": "Approve MMA Step",
    "mma_spawn": "Approve Worker Spawn",
    "ask": "Question",
    "recovery": "Recover Ticket",
    "tool_result": "Approve Tool Result",
    "cost_check": "Cost Threshold Crossed",
}

# MMA dialogs: besides approve and reject, the user may stop the whole track (abort=True)
ABORTABLE = frozenset({"mma_step", "mma_spawn", "cost_check"})

Body = Callable[["Ui", dict[str, Any], dict[str, Any]], None]
Edits = Callable[["Ui", dict[str, Any], dict[str, Any]], "dict[str, Any] | None"]

_BODIES: dict[str, tuple[Body, Edits]] = {
    "confirm_script": (bodies.confirm_script, bodies.confirm_script_edits),
    "tool_approval": (bodies.tool_approval, bodies.tool_approval_edits),
    "mma_step": (mma_step.mma_step, mma_step.mma_step_edits),
    "mma_spawn": (bodies.mma_spawn, bodies.mma_spawn_edits),
    "ask": (bodies.ask, bodies.ask_edits),
    "recovery": (recovery.recovery, recovery.recovery_edits),
    "tool_result": (rule_bodies.tool_result, rule_bodies.tool_result_edits),
    "cost_check": (rule_bodies.cost_check, bodies.no_edits),
}


def render_modals(ui: Ui) -> None:
    """Called once per frame after the panels."""
    pending = ui.state.pending_dialogs
    live = {d["id"] for d in pending}
    for stale in [uid for uid in ui.gui.modal_buffers if uid not in live]:
        del ui.gui.modal_buffers[stale]
    if not pending:
        ui.gui.open_modal_id = None
        render_track_proposals(ui)  # not a dialog (nothing waits on it): shown when none is pending
        return
    dialog = pending[0]
    title = MODAL_TITLES.get(dialog["kind"], "Approval")
    if ui.gui.open_modal_id != dialog["id"] or not imgui.is_popup_open(title):
        imgui.open_popup(title)
        ui.gui.open_modal_id = dialog["id"]
    viewport = imgui.get_main_viewport()
    imgui.set_next_window_size(ImVec2(viewport.size.x * 0.6, viewport.size.y * 0.7), imgui.Cond_.appearing)
    imgui.set_next_window_pos(viewport.get_center(), imgui.Cond_.appearing, ImVec2(0.5, 0.5))
    opened, _ = imgui.begin_popup_modal(title, None)
    if not opened:
        return
    buffers = ui.gui.modal_buffers.setdefault(dialog["id"], {})
    body, edits = _BODIES.get(dialog["kind"], (bodies.generic, bodies.no_edits))
    if len(pending) > 1:
        imgui.text_disabled(f"{len(pending) - 1} more waiting after this one")
    _asked_by(dialog)
    body(ui, dialog, buffers)
    imgui.separator()
    typing = imgui.is_any_item_active()
    approve = imgui.button("Approve") or _chord(imgui.Key.enter, ctrl=typing)
    imgui.same_line()
    reject = imgui.button("Reject") or imgui.is_key_pressed(imgui.Key.escape, False)
    abort = False
    if dialog["kind"] in ABORTABLE:
        imgui.same_line()
        imgui.push_style_color(imgui.Col_.button, COLORS["killed"] * 0.7)
        abort = imgui.button("Abort Track")
        imgui.pop_style_color()
    imgui.same_line()
    imgui.text_disabled("Enter approves (Ctrl+Enter while editing), Escape rejects")
    decided = False
    if approve:
        payload = edits(ui, dialog, buffers)
        if payload is not None:
            decided = ui.act.decide(dialog["id"], True, payload)
    elif reject or abort:
        reason = buffers.get("reason", "")
        decided = ui.act.decide(dialog["id"], False, {"reason": reason} if reason else None, abort=abort)
    if decided:
        ui.gui.modal_buffers.pop(dialog["id"], None)
        ui.gui.open_modal_id = None
        imgui.close_current_popup()
    imgui.end_popup()


def _asked_by(dialog: dict[str, Any]) -> None:
    """Which approval rule asked, and, once it waited past its timeout, that it was escalated."""
    if dialog.get("escalated"):
        imgui.text_colored(COLORS["error"], "ESCALATED: waited past its timeout; it waits until you decide")
    rule = dialog.get("rule")
    if rule:
        then = str(dialog.get("on_timeout") or "reject").replace("_", " ")
        imgui.text_disabled(f"asked by rule {rule} (on timeout: {then})")


def _chord(key: imgui.Key, ctrl: bool) -> bool:
    if ctrl:
        return imgui.is_key_chord_pressed(imgui.Key.mod_ctrl | key)
    return imgui.is_key_pressed(key, False)
