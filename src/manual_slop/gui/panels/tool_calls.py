"""Tool Calls: every executed tool call with its status, duration and output size."""

from __future__ import annotations

from typing import TYPE_CHECKING

from manual_slop.gui.log_view import Column, render_log_view, short
from manual_slop.gui.panels.comms_log import _clock

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["TOOL_COLUMNS", "render_tool_calls"]


def _duration(entry: dict) -> str:
    ms = entry.get("execution_ms", entry.get("duration_ms"))
    return f"{ms:.0f} ms" if isinstance(ms, int | float) else ""


TOOL_COLUMNS = (
    Column("#", lambda e: str(e.get("seq", "")), 50),
    Column("time", _clock, 64),
    Column("tool", lambda e: str(e.get("tool", e.get("name", ""))), 120),
    Column("status", lambda e: str(e.get("status", "")), 70),
    Column("tier", lambda e: str(e.get("source_tier") or ""), 56),
    Column("took", _duration, 64),
    Column("args", lambda e: short(e.get("args", "")), 0),
)


def render_tool_calls(ui: Ui) -> None:
    state = ui.state
    render_log_view(
        "tools", state.tool_calls, ui.gui.tool_filter, TOOL_COLUMNS, "status", state.tool_calls_budget.dropped
    )
