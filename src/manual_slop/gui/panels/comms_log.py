"""Comms Log: every request, response, tool call and tool result, filterable by tier and kind."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from manual_slop.gui.log_view import Column, render_log_view, short

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["COMMS_COLUMNS", "render_comms_log"]


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
    render_log_view("comms", ui.state.comms_log, ui.gui.comms_filter, COMMS_COLUMNS, "kind")
