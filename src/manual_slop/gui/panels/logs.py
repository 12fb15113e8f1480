"""Logs: this session's folder and the session registry: star, label, replay, delete.

The rows are ``ctrl.sessions.rows`` (``logs/log_registry.toml``, scanned and pruned off the
main thread at start-up). Every change is an action (``btn_session_star``,
``btn_session_label``, ``btn_session_delete`` after a confirmation, ``btn_session_replay``),
the same as over the Hook API; reading and deleting folders happen on background threads.
Replay opens the session in the Session Replay panel (:mod:`.session_replay`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from imgui_bundle import imgui

from manual_slop.gui.confirm import confirm_modal
from manual_slop.gui.widgets import COLORS, local_time, small_button, spinner_text, text_elided

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui
    from manual_slop.sessions.bindings import SessionsBinding

__all__ = ["CONFIRM_TITLE", "render_logs"]

CONFIRM_TITLE = "Delete session"


def render_logs(ui: Ui) -> None:
    ctrl = ui.ctrl
    sessions: SessionsBinding = ctrl.sessions  # type: ignore[attr-defined]
    imgui.text_disabled("This session")
    imgui.same_line()
    text_elided(str(ctrl.session_log.root), imgui.get_content_region_avail().x - 200, keep_end=True)
    imgui.same_line()
    if imgui.small_button("Copy path"):
        imgui.set_clipboard_text(str(ctrl.session_log.root))
    imgui.same_line()
    if imgui.small_button("Refresh"):
        ui.act.click("btn_sessions_refresh")
    if not sessions.ready:
        imgui.text_disabled(f"{spinner_text()} reading the session registry…")
    else:
        _table(ui, sessions)
    _confirm_delete(ui)


def _table(ui: Ui, sessions: SessionsBinding) -> None:
    pruned = f"; {len(sessions.pruned)} pruned at start" if sessions.pruned else ""
    count = len(sessions.rows)
    imgui.text_disabled(f"{count} session{'' if count == 1 else 's'}{pruned}")
    flags = (
        imgui.TableFlags_.row_bg
        | imgui.TableFlags_.borders_inner_v
        | imgui.TableFlags_.resizable
        | imgui.TableFlags_.scroll_y
    )
    if not imgui.begin_table("##sessions", 8, flags):
        return
    fixed, stretch = imgui.TableColumnFlags_.width_fixed, imgui.TableColumnFlags_.width_stretch
    em = imgui.get_font_size()
    for header, column_flags, size in (
        ("star", fixed, imgui.get_frame_height()),
        ("session", fixed, em * 9),
        ("started", fixed, em * 7),
        ("label", stretch, 1.5),
        ("msgs", fixed, em * 2.5),
        ("errors", fixed, em * 2.5),
        ("kept because", stretch, 1.0),
        ("", fixed, em * 7.5),
    ):
        imgui.table_setup_column(header, column_flags, size)
    imgui.table_setup_scroll_freeze(0, 1)
    imgui.table_headers_row()
    for row in sessions.rows:
        _row(ui, sessions, row)
    imgui.end_table()


def _row(ui: Ui, sessions: SessionsBinding, row: dict[str, Any]) -> None:
    sid = row["session_id"]
    current = sid == sessions.current_id
    imgui.table_next_row()
    imgui.push_id(f"session:{sid}")
    imgui.table_set_column_index(0)
    changed, starred = imgui.checkbox("##star", row["starred"])
    if changed:
        ui.act.click("btn_session_star", {"session_id": sid, "starred": starred})
    imgui.set_item_tooltip("starred sessions are never pruned")
    imgui.table_set_column_index(1)
    if current:
        imgui.text_colored(COLORS["ok"], sid)
        imgui.set_item_tooltip("the running session")
    else:
        imgui.text(sid)
    imgui.table_set_column_index(2)
    imgui.text_disabled(local_time(row["start"]))
    imgui.table_set_column_index(3)
    _label(ui, sid, row["label"])
    imgui.table_set_column_index(4)
    imgui.text(str(row["messages"]))
    imgui.table_set_column_index(5)
    imgui.text_colored(COLORS["error"] if row["errors"] else COLORS["muted"], str(row["errors"]))
    imgui.table_set_column_index(6)
    kept = "running" if current else row["whitelist_reason"] or f"{row['size_bytes'] // 1024} KiB"
    text_elided(kept, color=COLORS["muted"])
    imgui.table_set_column_index(7)
    replaying = sessions.replay is not None and sessions.replay.session_id == sid
    why = "the running session is the live view" if current else "open in Session Replay"
    if small_button("Replay", not current and not replaying, why):
        ui.act.click("btn_session_replay", sid)
    imgui.same_line()
    why = "the running session" if current else "exit its replay first" if replaying else "being deleted"
    if small_button("Delete", not (current or replaying or sid in sessions.deleting), why):
        ui.gui.session_delete = sid
    imgui.pop_id()


def _label(ui: Ui, sid: str, label: str) -> None:
    key = f"session_label:{sid}"
    buffers = ui.gui.edit_buffers
    imgui.set_next_item_width(-1)
    _, buffers[key] = imgui.input_text_with_hint("##label", "label", buffers.get(key, label))
    if imgui.is_item_deactivated_after_edit() and buffers[key] != label:
        ui.act.click("btn_session_label", {"session_id": sid, "label": buffers[key]})
    if not imgui.is_item_active():
        buffers.pop(key, None)  # not being typed: show the registry's label


def _confirm_delete(ui: Ui) -> None:
    pending = ui.gui.session_delete
    note = "Its folder and every log in it are removed from disk; this cannot be undone."
    answer = confirm_modal(CONFIRM_TITLE, pending is not None, f"Delete session {pending}?", note)
    if answer is None:
        return
    if answer:
        ui.act.click("btn_session_delete", pending)
    ui.gui.session_delete = None
