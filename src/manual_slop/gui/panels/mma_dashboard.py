"""MMA Dashboard: epic → proposed tracks → tracks → tickets, with the run controls; a goal box
that starts a ``/plan``, the project's plans, and the plan on the dashboard when its track is
one (:mod:`manual_slop.gui.plan_view`).

Every button goes through the MMA actions (``btn_mma_*``); ticket edits (block with a
reason, unblock, kill, per-ticket model) through their ticket actions. A control that
cannot act in the current ``mma_status`` is drawn disabled, with the reason on hover
(:func:`control_blockers`). Tracks show title, id and creation time, so tracks with the
same title can be told apart; long text is cut to its cell, the whole in a tooltip.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from imgui_bundle import ImVec2, imgui

from manual_slop.governance.cost import unknown_note
from manual_slop.gui.inputs import combo_field, text_field
from manual_slop.gui.plan_view import render_active_plan, render_plan_start
from manual_slop.gui.widgets import (
    COLORS,
    button,
    clip_tooltip,
    elide,
    local_time,
    small_button,
    spinner_text,
    status_color,
    text_colored,
    text_elided,
    text_wrapped_colored,
)
from manual_slop.mma.attempt import WorktreeApprovals
from manual_slop.usage.bindings import ledger_of
from manual_slop.usage.ledger import format_usd

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["control_blockers", "render_mma_dashboard", "ticket_cost"]

LIVE = ("running", "paused")  # a conductor is alive: the run controls act on it


def control_blockers(status: str, epic: str = "") -> dict[str, str]:
    """Why each run control cannot act now ('' when it can), from ``mma_status``."""
    live = status in LIVE
    planning = status == "planning"
    return {
        "btn_mma_plan_epic": (
            "planning is in progress" if planning else "" if epic.strip() else "write an epic first"
        ),
        "btn_mma_accept_tracks": "planning is in progress" if planning else "",
        "btn_mma_start_track": (
            "a track is running; pause or abort it first"
            if live
            else "planning is in progress"
            if planning
            else ""
        ),
        "btn_mma_pause": "" if status == "running" else "nothing is running",
        "btn_mma_resume": "" if status in ("paused", "blocked", "stopped") else "nothing is paused",
        "btn_mma_abort": "" if live else "nothing is running",
        "btn_mma_abort_ticket": "" if live else "the track is not running",
    }


WORKTREE_APPROVALS = tuple(str(v) for v in WorktreeApprovals)


def ticket_cost(ui: Ui, track_id: str, ticket_id: str) -> str:
    """The ticket's dollars so far as the cost column shows them ('' before its first call); a
    plan's tickets are its subtasks (the track id is the plan id)."""
    ledger = ledger_of(ui.ctrl)
    tally = ledger.tally("ticket", f"{track_id}/{ticket_id}" if track_id else ticket_id)
    if not tally.calls and track_id:
        tally = ledger.tally("subtask", f"{track_id}/{ticket_id}")
    return format_usd(tally.known_usd, tally.unknown_calls) if tally.calls else ""


def render_mma_dashboard(ui: Ui) -> None:
    state = ui.state
    status = state.mma_status
    busy = status not in ("idle", "done", "blocked", "error", "paused", "aborted", "stopped")
    blockers = control_blockers(status, state.mma_epic_input)
    imgui.text("Status:")
    imgui.same_line()
    shown = f"Planning… ({state.mma_progress})" if status == "planning" and state.mma_progress else status
    imgui.text_colored(status_color(status), f"{spinner_text()} {shown}" if busy else shown)
    if state.active_tier:
        imgui.same_line()
        imgui.text_disabled(f"| {state.active_tier} working")
    _epic(ui, blockers)
    render_plan_start(ui)
    _proposals(ui, blockers)
    _tracks(ui, blockers)
    _controls(ui, blockers)
    track = state.active_track or {}
    if track.get("kind") == "plan" and track.get("id"):
        render_active_plan(ui, str(track["id"]))
    _tickets(ui, blockers)
    _ray_workers(ui)
    _usage(ui)


def _action_button(ui: Ui, label: str, action: str, blockers: dict[str, str]) -> None:
    if button(label, not blockers.get(action), blockers.get(action, "")):
        ui.act.click(action)


def _epic(ui: Ui, blockers: dict[str, str]) -> None:
    imgui.separator_text("Epic")
    text_field(ui, "##epic", "mma_epic_input", multiline=True, height_lines=3)
    _action_button(ui, "Plan Epic", "btn_mma_plan_epic", blockers)


def _proposals(ui: Ui, blockers: dict[str, str]) -> None:
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
        text_elided(f"[{track.get('priority', 'medium')}] {track.get('title', '?')}", color=COLORS["info"])
        if track.get("description"):
            imgui.indent()
            imgui.text_wrapped(str(track["description"]))
            imgui.unindent()
        if track.get("error"):
            imgui.indent()
            text_wrapped_colored(COLORS["error"], f"Tier 2 failed, nothing saved: {track['error']}")
            imgui.unindent()
    picked = [i for i, keep in enumerate(chosen) if keep]
    why_not = blockers["btn_mma_accept_tracks"] or ("" if picked else "tick at least one track")
    if button("Accept selected tracks", not why_not, why_not):
        ui.act.click("btn_mma_accept_tracks", picked)
    imgui.same_line()
    if button("Review proposals"):  # the modal: edit, reject, accept
        ui.gui.proposal_modal = True


def _tracks(ui: Ui, blockers: dict[str, str]) -> None:
    tracks = ui.ctrl.fields.get("mma_tracks")
    if not tracks:
        return
    imgui.separator_text(f"Tracks ({len(tracks)})")
    flags = (
        imgui.TableFlags_.row_bg
        | imgui.TableFlags_.borders_inner_v
        | imgui.TableFlags_.resizable
        | imgui.TableFlags_.sizing_stretch_prop
    )
    em = imgui.get_font_size()
    if not imgui.begin_table("##tracks", 6, flags):
        return
    fixed = imgui.TableColumnFlags_.width_fixed
    imgui.table_setup_column("title", imgui.TableColumnFlags_.width_stretch, 1.6)
    imgui.table_setup_column("id", imgui.TableColumnFlags_.width_stretch, 1.0)
    imgui.table_setup_column("created", fixed, imgui.calc_text_size("0000-00-00 00:00").x)
    imgui.table_setup_column("status", fixed, 5.5 * em)
    imgui.table_setup_column("done", fixed, imgui.calc_text_size("000 / 000").x)
    imgui.table_setup_column("", fixed, imgui.calc_text_size("Start Archive").x + 4 * em)
    imgui.table_headers_row()
    active = (ui.state.active_track or {}).get("id")
    for track in tracks:
        track_id = str(track.get("id", ""))
        status = str(track.get("status", ""))
        imgui.table_next_row()
        imgui.push_id(track_id)
        imgui.table_set_column_index(0)
        text_elided(str(track.get("title") or "(untitled)"))
        if track.get("description") and imgui.is_item_hovered():
            imgui.set_item_tooltip(clip_tooltip(str(track["description"]), 2000))
        imgui.table_set_column_index(1)
        text_elided(track_id, color=COLORS["muted"], keep_end=True)
        imgui.table_set_column_index(2)
        imgui.text_unformatted(local_time(track.get("created_at")))
        imgui.table_set_column_index(3)
        text_elided(status, color=status_color(status))
        imgui.table_set_column_index(4)
        counts = track.get("counts") or {}
        done = counts.get("completed", 0) if isinstance(counts, dict) else 0
        imgui.text_unformatted(f"{done} / {track.get('ticket_count', '?')}")
        imgui.table_set_column_index(5)
        # the ## suffix keeps the items addressable by track id (tests, the palette)
        if small_button(
            f"Start##{track_id}", not blockers["btn_mma_start_track"], blockers["btn_mma_start_track"]
        ):
            ui.act.click("btn_mma_start_track", track_id)
        imgui.same_line()
        running_here = track_id == active and ui.state.mma_status in LIVE
        if small_button(f"Archive##{track_id}", not running_here, "this track is running; abort it first"):
            ui.act.click("btn_mma_archive_track", track_id)
        imgui.pop_id()
    imgui.end_table()


def _controls(ui: Ui, blockers: dict[str, str]) -> None:
    _action_button(ui, "Pause", "btn_mma_pause", blockers)
    imgui.same_line()
    _action_button(ui, "Resume", "btn_mma_resume", blockers)
    imgui.same_line()
    imgui.push_style_color(imgui.Col_.button, COLORS["killed"] * 0.7)
    _action_button(ui, "Abort", "btn_mma_abort", blockers)
    imgui.pop_style_color()
    imgui.same_line()
    imgui.set_next_item_width(imgui.calc_text_size("patch_only").x + 40)
    combo_field(ui, "Tree edits##worktree_approvals", "mma_worktree_approvals", list(WORKTREE_APPROVALS))
    if imgui.is_item_hovered():
        imgui.set_tooltip(
            "Each ticket attempt edits its own scratch tree.\n"
            "ask: every file edit and command asks; patch_only: file edits run, the patch asks\n"
            "(the shell always asks unless a rule allows it)."
        )
    imgui.same_line()
    imgui.set_next_item_width(imgui.calc_text_size("threads").x + 40)
    combo_field(ui, "Backend##mma_backend", "mma_backend", ["threads", "ray"])
    if imgui.is_item_hovered():
        imgui.set_tooltip(
            "threads: attempts run in this app.\nray: each attempt is a Ray task (mma.ray_address; '' = a "
            "local cluster started on demand). Needs pip install 'manual-slop[ray]'."
        )
    if ui.state.mma_settings.get("backend") == "ray":
        imgui.same_line()
        imgui.set_next_item_width(imgui.calc_text_size("ray://host:10001").x + 20)
        text_field(ui, "Ray address##mma_ray_address", "mma_ray_address")
        if imgui.is_item_hovered():
            imgui.set_tooltip("'' = a local cluster started on demand; auto; or ray://host:10001")


def _tickets(ui: Ui, blockers: dict[str, str]) -> None:
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
    )
    row_height = imgui.get_frame_height_with_spacing()
    height = min(imgui.get_content_region_avail().y * 0.6, row_height * (len(tickets) + 1.5))
    if not imgui.begin_table("##tickets", 7, flags, ImVec2(0, max(6 * row_height, height))):
        return
    imgui.table_setup_scroll_freeze(0, 1)
    em = imgui.get_font_size()
    fixed, stretch = imgui.TableColumnFlags_.width_fixed, imgui.TableColumnFlags_.width_stretch
    for header, flags, size in (
        ("id", fixed, 3.5 * em),
        ("status", fixed, 6.5 * em),
        ("description", stretch, 1.0),  # stretch weights: description 3 : deps 1
        ("deps", stretch, 0.33),
        ("model", fixed, 6.0 * em),
        ("cost", fixed, 5.0 * em),
        ("", fixed, 9.0 * em),
    ):
        imgui.table_setup_column(header, flags, size)
    imgui.table_headers_row()
    edits = ui.gui.ticket_edits
    clipper = imgui.ListClipper()
    clipper.begin(len(tickets))
    while clipper.step():
        for row in range(clipper.display_start, clipper.display_end):
            _ticket_row(ui, tickets[row], edits, blockers, str(track.get("id") or ""))
    clipper.end()
    imgui.end_table()


def _ticket_row(
    ui: Ui, ticket: dict[str, Any], edits: dict[str, dict[str, str]], blockers: dict[str, str], track_id: str
) -> None:
    tid = str(ticket.get("id", "?"))
    status = str(ticket.get("status", ""))
    imgui.table_next_row()
    imgui.push_id(tid)
    imgui.table_set_column_index(0)
    text_elided(tid, keep_end=True)
    imgui.table_set_column_index(1)
    retries = f" x{ticket['retry_count']}" if ticket.get("retry_count") else ""
    text_elided(status + retries, color=status_color(status))
    imgui.table_set_column_index(2)
    _description_cell(ticket)
    imgui.table_set_column_index(3)
    text_elided(", ".join(map(str, ticket.get("depends_on") or [])))
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
    text_elided(ticket_cost(ui, track_id, tid))  # genai-prices' list prices; "unknown" when none is known
    imgui.table_set_column_index(6)
    if status in ("blocked", "killed"):
        if imgui.small_button("Unblock"):
            ui.act.click("btn_mma_unblock_ticket", tid)
    elif status == "todo":
        imgui.set_next_item_width(imgui.get_content_region_avail().x - imgui.calc_text_size("Block").x - 16)
        _, mine["reason"] = imgui.input_text_with_hint("##reason", "reason", mine.get("reason", ""))
        imgui.same_line()
        if imgui.small_button("Block"):
            ui.act.click("btn_mma_block_ticket", {"ticket_id": tid, "reason": mine.pop("reason", "")})
    elif status == "in_progress":
        why_not = blockers["btn_mma_abort_ticket"]
        if small_button("Kill", not why_not, why_not):
            ui.act.click("btn_mma_abort_ticket", tid)
    imgui.pop_id()


def _description_cell(ticket: dict[str, Any]) -> None:
    """One line: the description, and the blocked reason beside it, each cut to fit; the
    whole of both in the tooltip."""
    text = str(ticket.get("description", ""))
    reason = str(ticket.get("blocked_reason") or "")
    width = imgui.get_content_region_avail().x
    imgui.begin_group()
    if reason:  # the description keeps at least half; the reason gets the rest
        shown = elide(text, width * 0.5)
        imgui.text_unformatted(shown)
        imgui.same_line()
        text_colored("blocked", elide(f"— {reason}", imgui.get_content_region_avail().x))
    else:
        imgui.text_unformatted(elide(text, width))
    imgui.end_group()
    kept = str(ticket.get("worktree") or "")
    if (text or reason) and imgui.is_item_hovered():
        tip = text if not reason else f"{text}\n\nblocked: {reason}"
        if kept:
            tip += f"\n\nits last attempt's tree, kept for inspection: {kept}/tree"
        imgui.set_tooltip(clip_tooltip(tip, 2000))


def _ray_workers(ui: Ui) -> None:
    """The Ray attempts' heartbeats: node, start time, last event, and a retry when a node died."""
    workers = ui.state.mma_ray_workers
    if not workers:
        return
    imgui.separator_text(f"Ray workers ({len(workers)})")
    flags = imgui.TableFlags_.row_bg | imgui.TableFlags_.borders_inner_v
    if imgui.begin_table("##ray_workers", 5, flags):
        for header in ("ticket", "node", "started", "last event", "starts"):
            imgui.table_setup_column(header)
        imgui.table_headers_row()
        for worker in workers:
            imgui.table_next_row()
            started = time.strftime("%H:%M:%S", time.localtime(float(worker.get("started", 0.0))))
            cells = (worker["ticket"], worker["node"], started, worker["last_event"], str(worker["starts"]))
            for column, value in enumerate(cells):
                imgui.table_set_column_index(column)
                if column == 4 and worker["starts"] > 1:
                    imgui.text_colored(COLORS["warn"], f"{value} (node lost)")
                else:
                    imgui.text_unformatted(str(value))
        imgui.end_table()


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
    track = str((ui.state.active_track or {}).get("id") or "")
    spend = ledger_of(ui.ctrl).spend(track or None)
    what = f"track {track}" if track else "the session"
    note = unknown_note(spend.unknown_calls)
    imgui.text_disabled(f"cost of {what}: {format_usd(spend.usd)} (genai-prices list prices{note})")
