"""Session Replay: a prior session read-only, on a tinted background (opened from Logs).

A banner "Replay of session <id> — read only" and an **Exit replay** button sit above tabs
for the discussion, the comms log, the tool calls, the MMA state, the approval journal and
the raw streams. Nothing here sends or approves: there is no message box and no approve
button, and while the replay is open the controller refuses every send
(``ctrl.sessions.send_refusal``). What the view drew last is kept in
``GuiState.replay_shown`` (session id, banner) so tests can check it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from imgui_bundle import ImVec2, ImVec4, imgui

from manual_slop.gui.log_view import Column, render_log_view, short
from manual_slop.gui.widgets import COLORS, spinner_text, text_elided
from manual_slop.session_log import LOG_STREAMS

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui
    from manual_slop.sessions.replay import Replay

__all__ = ["REPLAY_TINT", "banner_text", "render_session_replay"]

REPLAY_TINT = ImVec4(0.22, 0.16, 0.30, 1.0)  # a violet no live panel uses: a replay never looks live
BANNER_COLOR = ImVec4(1.0, 0.80, 0.35, 1.0)

GENERIC_COLUMNS = (
    Column("#", lambda e: str(e.get("seq", e.get("_line", ""))), 56),
    Column("entry", lambda e: short({k: v for k, v in e.items() if k not in ("seq", "_line")}, 200), 0),
)
ROLE_COLORS = {"User": "ok", "AI": "warn", "Error": "error"}


def banner_text(session_id: str) -> str:
    return f"Replay of session {session_id} — read only"


def render_session_replay(ui: Ui) -> None:
    sessions = ui.ctrl.sessions  # type: ignore[attr-defined]
    replay = sessions.replay
    if replay is None:
        ui.gui.replay_shown = None
        if sessions.loading:
            imgui.text_disabled(f"{spinner_text()} reading session {sessions.loading}…")
        else:
            imgui.text_wrapped(
                "No replay is open. Choose a prior session in the Logs panel and press Replay."
            )
        return
    _render(ui, replay)


def _render(ui: Ui, replay: Replay) -> None:
    """The tinted read-only view of ``replay``, filling the panel."""
    imgui.push_style_color(imgui.Col_.child_bg, REPLAY_TINT)
    visible = imgui.begin_child("##replay", ImVec2(0, 0), imgui.ChildFlags_.borders)
    imgui.pop_style_color()
    if visible:
        banner = banner_text(replay.session_id)
        imgui.text_colored(BANNER_COLOR, banner)
        imgui.same_line()
        if imgui.button("Exit replay"):
            ui.act.click("btn_replay_exit")
        ui.gui.replay_shown = (replay.session_id, banner)
        imgui.text_disabled("Nothing here can be sent or approved; sending is off until you exit the replay.")
        _tabs(ui, replay)
    imgui.end_child()


def _tabs(ui: Ui, replay: Replay) -> None:
    if not imgui.begin_tab_bar("##replay_tabs"):
        return
    for title, draw in (
        (f"Discussion ({len(replay.discussion)})", _discussion),
        (f"Comms ({len(replay.comms)})", lambda r: _stream(ui, r, "comms")),
        (f"Tool calls ({len(replay.tool_calls)})", lambda r: _stream(ui, r, "toolcalls")),
        (f"MMA ({len(replay.tickets)} tickets)", _mma),
        (f"Approvals ({len(replay.approvals)})", _approvals),
        ("Raw logs", lambda r: _raw(ui, r)),
    ):
        wanted = title == "Raw logs" and "log_streams" in ui.gui.tab_choices  # select_tab log_streams
        flags = imgui.TabItemFlags_.set_selected if wanted else 0
        opened, _ = imgui.begin_tab_item(f"{title}###{title.split(' (')[0]}", None, flags)
        if opened:
            draw(replay)
            imgui.end_tab_item()
    imgui.end_tab_bar()


def _discussion(replay: Replay) -> None:
    if not replay.discussion:
        imgui.text_disabled("no messages in this session's comms log")
        return
    for index, turn in enumerate(replay.discussion):
        imgui.push_id(index)
        tier = f" [{turn['tier']}]" if turn["tier"] else ""
        imgui.text_colored(COLORS[ROLE_COLORS.get(turn["role"], "muted")], f"{turn['role']}{tier}")
        imgui.same_line()
        imgui.text_disabled(str(turn["ts"]))
        imgui.text_wrapped(turn["text"][:4000])
        imgui.separator()
        imgui.pop_id()


def _stream(ui: Ui, replay: Replay, stream: str) -> None:
    render_log_view(f"replay_{stream}", replay.streams.get(stream, []), ui.gui.logs_filters[stream],
                    GENERIC_COLUMNS, "kind")  # fmt: skip


def _mma(replay: Replay) -> None:
    if not replay.tiers:
        imgui.text_disabled("no MMA tier ran in this session")
        return
    for tier, counts in sorted(replay.tiers.items()):
        requests, responses, errors = counts["requests"], counts["responses"], counts["errors"]
        imgui.text(f"{tier}: {requests} requests, {responses} responses, {errors} errors")
    if not replay.tickets or not imgui.begin_table("##replay_tickets", 5, imgui.TableFlags_.row_bg):
        return
    for header in ("ticket", "tier", "requests", "errors", "last answer"):
        imgui.table_setup_column(header)
    imgui.table_headers_row()
    for row in replay.tickets:
        imgui.table_next_row()
        for column, value in enumerate((row["ticket"], row["tier"], row["requests"], row["errors"])):
            imgui.table_set_column_index(column)
            imgui.text(str(value))
        imgui.table_set_column_index(4)
        text_elided(row["last"])
    imgui.end_table()


def _approvals(replay: Replay) -> None:
    if not replay.approvals:
        imgui.text_disabled("no dialog waited in this session")
        return
    for index, entry in enumerate(replay.approvals):
        imgui.push_id(index)
        text_elided(short({k: v for k, v in entry.items() if k != "_line"}, 300))
        imgui.pop_id()


def _raw(ui: Ui, replay: Replay) -> None:
    if not imgui.begin_tab_bar("##log_streams"):
        return
    chosen = ui.gui.tab_choices.pop("log_streams", None)  # select_tab log_streams
    for stream in LOG_STREAMS:
        entries = replay.streams.get(stream, [])
        flags = imgui.TabItemFlags_.set_selected if stream == chosen else 0
        opened, _ = imgui.begin_tab_item(f"{stream} ({len(entries)})###{stream}", None, flags)
        if opened:
            ui.gui.logs_stream = stream
            render_log_view(f"logs_{stream}", entries, ui.gui.logs_filters[stream], GENERIC_COLUMNS, "kind")
            imgui.end_tab_item()
    imgui.end_tab_bar()
