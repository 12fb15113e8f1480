"""Logs: this session's folder, and any prior session opened read-only.

Listing and reading sessions happens on a background thread; the panel only shows
what has been loaded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from imgui_bundle import imgui

from manual_slop.gui.log_view import Column, render_log_view, short
from manual_slop.session_log import LOG_STREAMS

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["list_sessions", "load_session", "render_logs"]

MAX_LINES_PER_STREAM = 20_000

GENERIC_COLUMNS = (
    Column("#", lambda e: str(e.get("seq", e.get("_line", ""))), 56),
    Column("entry", lambda e: short({k: v for k, v in e.items() if k not in ("seq", "_line")}, 200), 0),
)


def list_sessions(sessions_dir: Path) -> list[dict[str, Any]]:
    """Session folders, newest first, with what their session.json says."""
    found: list[dict[str, Any]] = []
    if not sessions_dir.is_dir():
        return found
    for folder in sorted(sessions_dir.iterdir(), reverse=True):
        if not folder.is_dir():
            continue
        meta: dict[str, Any] = {"path": str(folder), "session_id": folder.name}
        try:
            meta.update(json.loads((folder / "session.json").read_text(encoding="utf-8")))
        except (OSError, ValueError):
            meta["unreadable"] = True
        found.append(meta)
    return found


def load_session(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """Every stream of a session folder (the last MAX_LINES_PER_STREAM lines; torn lines skipped)."""
    streams: dict[str, list[dict[str, Any]]] = {}
    for stream in LOG_STREAMS:
        entries: list[dict[str, Any]] = []
        path = folder / f"{stream}.log"
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()[-MAX_LINES_PER_STREAM:]
        except OSError:
            lines = []
        for number, line in enumerate(lines, 1):
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict):
                entry.setdefault("_line", number)
                entries.append(entry)
        streams[stream] = entries
    return streams


def render_logs(ui: Ui) -> None:
    ctrl, gui = ui.ctrl, ui.gui
    imgui.text_disabled("This session")
    imgui.text_wrapped(str(ctrl.session_log.root))
    if imgui.button("Copy path"):
        imgui.set_clipboard_text(str(ctrl.session_log.root))
    imgui.same_line()
    if imgui.button("List sessions"):
        sessions_dir = ctrl.paths.log_dir / "sessions"
        ctrl.run_in_background(
            lambda: list_sessions(sessions_dir), lambda found: setattr(gui, "sessions", found)
        )
    if gui.sessions:
        imgui.set_next_item_width(-1)
        if imgui.begin_combo(
            "##session", Path(gui.logs_session).name if gui.logs_session else "open a session"
        ):
            for meta in gui.sessions:
                label = meta["session_id"] + (
                    " (this session)" if meta["path"] == str(ctrl.session_log.root) else ""
                )
                if imgui.selectable(label, meta["path"] == gui.logs_session)[0]:
                    gui.logs_session = meta["path"]
                    folder = Path(meta["path"])
                    ctrl.run_in_background(
                        lambda f=folder: load_session(f), lambda s: setattr(gui, "logs_loaded", s)
                    )
            imgui.end_combo()
    if not gui.logs_loaded:
        return
    imgui.text_disabled(f"read-only: {gui.logs_session}")
    if imgui.begin_tab_bar("##log_streams"):
        chosen = gui.tab_choices.pop("log_streams", None)  # select_tab log_streams
        for stream in LOG_STREAMS:
            entries = gui.logs_loaded.get(stream, [])
            flags = imgui.TabItemFlags_.set_selected if stream == chosen else 0
            opened, _ = imgui.begin_tab_item(f"{stream} ({len(entries)})###{stream}", None, flags)
            if opened:
                gui.logs_stream = stream
                render_log_view(f"logs_{stream}", entries, gui.logs_filters[stream], GENERIC_COLUMNS, "kind")
                imgui.end_tab_item()
        imgui.end_tab_bar()
