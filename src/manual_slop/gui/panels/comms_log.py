"""Comms Log: every request, response, tool call and tool result, filterable by tier and kind.
A request entry of an agent run opens in the Prompt Inspector (exactly what was sent); a
selected ``images`` entry shows the thumbnails of the images it sent."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from imgui_bundle import imgui

from manual_slop.gui.log_view import Column, render_log_view, short
from manual_slop.gui.panels.prompt_inspector import InspectorState

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["COMMS_COLUMNS", "inspect_request", "render_comms_log"]


def _clock(entry: dict) -> str:
    stamp = entry.get("local_ts")
    return time.strftime("%H:%M:%S", time.localtime(stamp)) if isinstance(stamp, int | float) else "?"


COMMS_COLUMNS = (
    Column("#", lambda e: str(e.get("seq", "")), 50),
    Column("time", _clock, 64),
    Column("dir", lambda e: str(e.get("direction", "")), 34),
    Column("kind", lambda e: str(e.get("kind", "")), 80),
    Column("tier", lambda e: str(e.get("source_tier") or ""), 56),
    Column("provider / model", lambda e: f"{e.get('provider', '')} {e.get('model', '')}".strip(), 170),
    Column("payload", lambda e: short(e.get("payload", "")), 0),
)


def render_comms_log(ui: Ui) -> None:
    entries, flt = ui.state.comms_log, ui.gui.comms_filter
    index = flt.selected
    if index is not None and index < len(entries) and _inspectable(entries[index]):
        if imgui.small_button("Inspect this request"):
            inspect_request(ui, index)
        imgui.same_line()
    if index is not None and index < len(entries) and entries[index].get("kind") == "images":
        paths = entries[index].get("payload", {}).get("paths") or []
        ui.gui.thumbnails.draw(paths, ui.state.image_thumbnails)  # what this request sent
    render_log_view("comms", entries, flt, COMMS_COLUMNS, "kind", ui.state.comms_budget.dropped)


def _inspectable(entry: dict) -> bool:
    return entry.get("kind") == "request" and bool(entry.get("run_id"))


def inspect_request(ui: Ui, index: int) -> None:
    """Open the comms entry ``index`` (a request of an agent run) in the Prompt Inspector: its
    run, and its number there (the how-many-th request of that run the comms log holds)."""
    entries = ui.state.comms_log
    run_id = str(entries[index]["run_id"])
    number = sum(1 for e in entries[: index + 1] if _inspectable(e) and e.get("run_id") == run_id)
    state = ui.gui.inspector
    if not isinstance(state, InspectorState):
        state = ui.gui.inspector = InspectorState()
    state.run_id, state.request, state.section, state.view = run_id, number, "", None
    ui.state.tab_requests["panels"] = "Prompt Inspector"
