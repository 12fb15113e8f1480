"""MMA Dashboard: epic → proposed tracks → tracks → tickets, with the run controls.

Every button goes through the MMA actions (``btn_mma_*``); ticket edits (block with a
reason, unblock, kill, per-ticket model) through their ticket actions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from imgui_bundle import ImVec2, imgui

from manual_slop.gui.inputs import text_field
from manual_slop.gui.widgets import COLORS, spinner_text, status_color

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["estimate_cost", "render_mma_dashboard"]

# USD per million tokens (input, output); an estimate for the dashboard, not a bill.
PRICES: dict[str, tuple[float, float]] = {
    "gemini-2.5-flash-lite": (0.10, 0.40),
    "gemini-2.5-flash": (0.30, 2.50),
    "gemini-2.5-pro": (1.25, 10.0),
    "claude-sonnet-4-5": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
    "deepseek-chat": (0.27, 1.10),
    "MiniMax-M2": (0.30, 1.20),
}


def estimate_cost(tier_usage: dict[str, Any]) -> float:
    """Dollars for the tokens in ``tier_usage`` at PRICES (unknown and local models cost 0)."""
    total = 0.0
    for usage in tier_usage.values():
        if not isinstance(usage, dict):
            continue
        price_in, price_out = PRICES.get(str(usage.get("model", "")), (0.0, 0.0))
        total += (
            float(usage.get("input", 0)) * price_in / 1e6 + float(usage.get("output", 0)) * price_out / 1e6
        )
    return total


def render_mma_dashboard(ui: Ui) -> None:
    state = ui.state
    status = state.mma_status
    busy = status not in ("idle", "done", "blocked", "error", "paused", "aborted")
    imgui.text("Status:")
    imgui.same_line()
    imgui.text_colored(status_color(status), f"{spinner_text()} {status}" if busy else status)
    if state.active_tier:
        imgui.same_line()
        imgui.text_disabled(f"| {state.active_tier} working")
    _epic(ui)
    _proposals(ui)
    _tracks(ui)
    _controls(ui)
    _tickets(ui)
    _usage(ui)


def _epic(ui: Ui) -> None:
    imgui.separator_text("Epic")
    text_field(ui, "##epic", "mma_epic_input", multiline=True, height_lines=3)
    if imgui.button("Plan Epic"):
        ui.act.click("btn_mma_plan_epic")


def _proposals(ui: Ui) -> None:
    proposed = ui.state.proposed_tracks
    if not proposed:
        return
    imgui.separator_text(f"Proposed tracks ({len(proposed)})")
    chosen = ui.gui.proposal_choice
    if len(chosen) != len(proposed):
        chosen[:] = [True] * len(proposed)
    for index, track in enumerate(proposed):
        _, chosen[index] = imgui.checkbox(f"##accept{index}", chosen[index])
        imgui.same_line()
        imgui.text_colored(COLORS["info"], f"[{track.get('priority', 'medium')}] {track.get('title', '?')}")
        if track.get("description"):
            imgui.indent()
            imgui.text_wrapped(str(track["description"]))
            imgui.unindent()
    if imgui.button("Accept selected tracks"):
        ui.act.click("btn_mma_accept_tracks", [i for i, keep in enumerate(chosen) if keep])


def _tracks(ui: Ui) -> None:
    tracks = ui.ctrl.fields.get("mma_tracks")
    if not tracks:
        return
    imgui.separator_text(f"Tracks ({len(tracks)})")
    flags = (
        imgui.TableFlags_.row_bg | imgui.TableFlags_.borders_inner_v | imgui.TableFlags_.sizing_stretch_prop
    )
    if imgui.begin_table("##tracks", 4, flags):
        imgui.table_setup_column("title")
        imgui.table_setup_column("status", imgui.TableColumnFlags_.width_fixed, 90)
        imgui.table_setup_column("tickets", imgui.TableColumnFlags_.width_fixed, 140)
        imgui.table_setup_column("", imgui.TableColumnFlags_.width_fixed, 110)
        imgui.table_headers_row()
        for track in tracks:
            imgui.table_next_row()
            imgui.table_set_column_index(0)
            imgui.text_unformatted(str(track.get("title", track.get("id", "?"))))
            imgui.table_set_column_index(1)
            imgui.text_colored(status_color(str(track.get("status", ""))), str(track.get("status", "")))
            imgui.table_set_column_index(2)
            counts = track.get("counts") or {}
            done = counts.get("completed", 0) if isinstance(counts, dict) else 0
            imgui.text_unformatted(f"{done} / {track.get('ticket_count', '?')} done")
            imgui.table_set_column_index(3)
            if imgui.small_button(f"Start##{track.get('id')}"):
                ui.act.click("btn_mma_start_track", str(track.get("id", "")))
            imgui.same_line()
            if imgui.small_button(f"Archive##{track.get('id')}"):
                ui.act.click("btn_mma_archive_track", str(track.get("id", "")))
        imgui.end_table()


def _controls(ui: Ui) -> None:
    if imgui.button("Pause"):
        ui.act.click("btn_mma_pause")
    imgui.same_line()
    if imgui.button("Resume"):
        ui.act.click("btn_mma_resume")
    imgui.same_line()
    imgui.push_style_color(imgui.Col_.button, COLORS["killed"] * 0.7)
    if imgui.button("Abort"):
        ui.act.click("btn_mma_abort")
    imgui.pop_style_color()


def _tickets(ui: Ui) -> None:
    tickets = ui.state.mma_tickets
    if not tickets:
        return
    track = ui.state.active_track or {}
    imgui.separator_text(f"Tickets of {track.get('title', 'the active track')} ({len(tickets)})")
    flags = (
        imgui.TableFlags_.row_bg
        | imgui.TableFlags_.borders_inner_v
        | imgui.TableFlags_.scroll_y
        | imgui.TableFlags_.resizable
        | imgui.TableFlags_.sizing_fixed_fit
    )
    height = min(imgui.get_content_region_avail().y * 0.6, 30 + 26 * len(tickets))
    if not imgui.begin_table("##tickets", 6, flags, ImVec2(0, max(120.0, height))):
        return
    imgui.table_setup_scroll_freeze(0, 1)
    for header, width in (
        ("id", 48),
        ("status", 84),
        ("description", 0),
        ("deps", 60),
        ("model", 100),
        ("", 150),
    ):
        column_flags = imgui.TableColumnFlags_.width_fixed if width else imgui.TableColumnFlags_.width_stretch
        imgui.table_setup_column(header, column_flags, width or -1.0)
    imgui.table_headers_row()
    edits = ui.gui.ticket_edits
    clipper = imgui.ListClipper()
    clipper.begin(len(tickets))
    while clipper.step():
        for row in range(clipper.display_start, clipper.display_end):
            _ticket_row(ui, tickets[row], edits)
    clipper.end()
    imgui.end_table()


def _ticket_row(ui: Ui, ticket: dict[str, Any], edits: dict[str, dict[str, str]]) -> None:
    tid = str(ticket.get("id", "?"))
    status = str(ticket.get("status", ""))
    imgui.table_next_row()
    imgui.push_id(tid)
    imgui.table_set_column_index(0)
    imgui.text_unformatted(tid)
    imgui.table_set_column_index(1)
    imgui.text_colored(status_color(status), status)
    if ticket.get("retry_count"):
        imgui.same_line()
        imgui.text_disabled(f"x{ticket['retry_count']}")
    imgui.table_set_column_index(2)
    text = str(ticket.get("description", ""))
    reason = ticket.get("blocked_reason")
    imgui.text_unformatted(f"{text}  — {reason}" if reason else text)
    if imgui.is_item_hovered() and text:
        imgui.set_tooltip(text if not reason else f"{text}\n\nblocked: {reason}")
    imgui.table_set_column_index(3)
    imgui.text_unformatted(", ".join(ticket.get("depends_on") or []))
    imgui.table_set_column_index(4)
    mine = edits.setdefault(tid, {})
    imgui.set_next_item_width(-1)
    model = mine.get("model", str(ticket.get("model_override") or ""))
    _, mine["model"] = imgui.input_text_with_hint("##model", "default", model)
    if imgui.is_item_deactivated_after_edit():
        ui.act.click("btn_mma_set_ticket_model", {"ticket_id": tid, "model": mine.pop("model")})
    elif not imgui.is_item_active():
        mine.pop("model", None)
    imgui.table_set_column_index(5)
    if status in ("blocked", "killed"):
        if imgui.small_button("Unblock"):
            ui.act.click("btn_mma_unblock_ticket", tid)
    elif status == "todo":
        imgui.set_next_item_width(100)
        _, mine["reason"] = imgui.input_text_with_hint("##reason", "reason", mine.get("reason", ""))
        imgui.same_line()
        if imgui.small_button("Block"):
            ui.act.click("btn_mma_block_ticket", {"ticket_id": tid, "reason": mine.pop("reason", "")})
    elif status == "in_progress" and imgui.small_button("Kill"):
        ui.act.click("btn_mma_abort_ticket", tid)
    imgui.pop_id()


def _usage(ui: Ui) -> None:
    usage = ui.state.tier_usage
    if not usage:
        return
    imgui.separator_text("Tier usage")
    if imgui.begin_table("##tier_usage", 4, imgui.TableFlags_.row_bg | imgui.TableFlags_.borders_inner_v):
        for header in ("tier", "model", "input", "output"):
            imgui.table_setup_column(header)
        imgui.table_headers_row()
        for tier, data in sorted(usage.items()):
            if not isinstance(data, dict):
                continue
            imgui.table_next_row()
            for column, value in enumerate(
                (tier, data.get("model", ""), data.get("input", 0), data.get("output", 0))
            ):
                imgui.table_set_column_index(column)
                imgui.text_unformatted(f"{value:,}" if isinstance(value, int) else str(value))
        imgui.end_table()
    imgui.text_disabled(f"estimated cost: ${estimate_cost(usage):.4f} (list prices; local models are free)")
