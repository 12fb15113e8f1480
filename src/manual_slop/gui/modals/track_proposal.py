"""The *Track Proposals* modal: Tier 1's tracks, to edit, reject or accept.

It opens by itself each time Tier 1 proposes (``state.proposal_round``; when no approval
dialog is waiting: those come first), and again from the dashboard's *Review proposals*.
Everything it does goes through the MMA actions, as the Hook API would:
``btn_mma_edit_track_proposal`` when a title or description is left after typing or a
priority is picked, ``btn_mma_reject_tracks``, ``btn_mma_accept_tracks``. A proposal
stays listed until its track is saved, so while Tier 2 plans the modal shows the
progress, and a proposal whose planning failed stays with the error beside it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from imgui_bundle import ImVec2, imgui

from manual_slop.gui.widgets import COLORS, button, small_button, spinner_text, text_wrapped_colored

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["TITLE", "render_track_proposals"]

TITLE = "Track Proposals"
PRIORITIES = ("high", "medium", "low")


def render_track_proposals(ui: Ui) -> None:
    """Called by the modal host when no approval dialog is pending (main thread)."""
    gui, proposals = ui.gui, ui.state.proposed_tracks
    if gui.proposal_round != ui.state.proposal_round:  # Tier 1 proposed (again): show them
        gui.proposal_round = ui.state.proposal_round
        gui.proposal_modal = bool(proposals)
    if not gui.proposal_modal:
        return
    if not imgui.is_popup_open(TITLE):
        imgui.open_popup(TITLE)
    viewport = imgui.get_main_viewport()
    imgui.set_next_window_size(ImVec2(viewport.size.x * 0.7, viewport.size.y * 0.75), imgui.Cond_.appearing)
    imgui.set_next_window_pos(viewport.get_center(), imgui.Cond_.appearing, ImVec2(0.5, 0.5))
    opened, _ = imgui.begin_popup_modal(TITLE, None)
    if not opened:
        return
    if not proposals:  # all accepted (and saved) or rejected
        _close(ui)
        imgui.end_popup()
        return
    chosen = gui.proposal_choice
    if len(chosen) != len(proposals):
        chosen[:] = [True] * len(proposals)
    planning = ui.state.mma_status == "planning"
    if planning:
        progress = ui.state.mma_progress or ui.state.active_tier or "working"
        imgui.text_colored(COLORS["info"], f"{spinner_text()} Planning… ({progress})")
    else:
        imgui.text_wrapped(
            f"Tier 1 proposes {len(proposals)} track(s). Edit them, reject the ones you do not want, "
            "accept the rest: Tier 2 then plans each into tickets."
        )
    footer = imgui.get_frame_height_with_spacing() * 1.5
    imgui.begin_child("##proposals", ImVec2(0, -footer))
    imgui.begin_disabled(planning)
    for index, proposal in enumerate(proposals):
        _proposal(ui, index, proposal)
    imgui.end_disabled()
    imgui.end_child()
    _buttons(ui, planning)
    imgui.end_popup()


def _proposal(ui: Ui, index: int, proposal: dict[str, Any]) -> None:
    chosen = ui.gui.proposal_choice
    _, chosen[index] = imgui.checkbox(f"##pick{index}", chosen[index])
    imgui.same_line()
    imgui.set_next_item_width(imgui.calc_text_size("medium").x + imgui.get_frame_height() * 2)
    current = str(proposal.get("priority", "medium"))
    if imgui.begin_combo(f"##priority{index}", current):
        for option in PRIORITIES:
            clicked, _ = imgui.selectable(option, option == current)
            if clicked and option != current:
                ui.act.click("btn_mma_edit_track_proposal", {"index": index, "priority": option})
        imgui.end_combo()
    imgui.same_line()
    reject = f"Reject##{index}"
    imgui.set_next_item_width(-(imgui.calc_text_size("Reject").x + imgui.get_style().item_spacing.x * 3))
    _text(ui, index, proposal, "title", lambda label, text: imgui.input_text(label, text))
    imgui.same_line()
    if small_button(reject):
        ui.act.click("btn_mma_reject_tracks", [index])
    size = ImVec2(-1, imgui.get_text_line_height_with_spacing() * 3)
    wrap = imgui.InputTextFlags_.word_wrap

    def description(label: str, text: str) -> tuple[bool, str]:
        return imgui.input_text_multiline(label, text, size, wrap)

    _text(ui, index, proposal, "description", description)
    if proposal.get("error"):
        text_wrapped_colored(COLORS["error"], f"Tier 2 failed, nothing saved: {proposal['error']}")
    imgui.separator()


def _text(ui: Ui, index: int, proposal: dict[str, Any], key: str, draw: Any) -> None:
    """A proposal's text, typed into a buffer and applied (an edit action) when left."""
    buffers = ui.gui.proposal_edits.setdefault(str(proposal.get("id", index)), {})
    current = str(proposal.get(key, ""))
    _, value = draw(f"##{key}{index}", buffers.get(key, current))
    if imgui.is_item_active():
        buffers[key] = value
        return
    buffers.pop(key, None)
    if imgui.is_item_deactivated_after_edit() and value != current:
        ui.act.click("btn_mma_edit_track_proposal", {"index": index, key: value})


def _buttons(ui: Ui, planning: bool) -> None:
    proposals, chosen = ui.state.proposed_tracks, ui.gui.proposal_choice
    picked = [i for i, keep in enumerate(chosen) if keep]
    why_not = "planning is in progress" if planning else ""
    if button(f"Accept selected ({len(picked)})", not why_not and bool(picked), why_not or "tick a track"):
        ui.act.click("btn_mma_accept_tracks", picked)
    imgui.same_line()
    if button("Accept all", not why_not, why_not):
        ui.act.click("btn_mma_accept_tracks", list(range(len(proposals))))
    imgui.same_line()
    if button("Reject all", not why_not, why_not):
        ui.act.click("btn_mma_reject_tracks", [])
    imgui.same_line()
    if imgui.button("Later"):
        _close(ui)
    imgui.same_line()
    imgui.text_disabled("the dashboard keeps them (Review proposals)")


def _close(ui: Ui) -> None:
    ui.gui.proposal_modal = False
    ui.gui.proposal_edits.clear()
    imgui.close_current_popup()
