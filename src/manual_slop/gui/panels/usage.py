"""Usage: the session's tokens and dollars per provider, model, tier, track, ticket and plan
subtask, and a live plot of the dollars over time (implot).

Everything comes from the controller's :class:`~manual_slop.usage.ledger.UsageLedger` (thread-
safe; copied once per recorded call, not per frame). A price nobody knows is shown as
"unknown", and the sums say how many calls they leave out: an unknown price is never $0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from imgui_bundle import ImVec2, imgui, implot

from manual_slop.governance.cost import unknown_note
from manual_slop.gui.widgets import COLORS, text_elided
from manual_slop.usage.bindings import budgets, ledger_of
from manual_slop.usage.ledger import DIMENSIONS, format_usd

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["UsageView", "render_usage", "usd_cell"]

TITLES = {
    "provider": "By provider",
    "model": "By provider / model",
    "tier": "By tier",
    "track": "By track",
    "ticket": "By ticket (track/ticket)",
    "subtask": "By plan subtask (plan/subtask)",
}
COLUMNS = ("dollars", "calls", "input", "output", "cache read", "cache write")  # dollars first: in view


def usd_cell(row: dict[str, Any]) -> str:
    """A row's dollars as the panels show them: ``$0.0123``, ``unknown``, ``$0.01 + 2 unknown``."""
    return format_usd(row.get("usd"), int(row.get("unknown_calls", 0)))


@dataclass(slots=True)
class UsageView:
    """The ledger's last copy (refreshed when its version moves)."""

    version: int = -1
    report: dict[str, Any] = field(default_factory=dict)
    xs: Any = None
    ys: Any = None

    def refresh(self, ui: Ui) -> None:
        ledger = ledger_of(ui.ctrl)
        if ledger.version == self.version:
            return
        self.version = ledger.version
        self.report = ledger.breakdown()
        xs, ys = ledger.series()
        self.xs, self.ys = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)


def _table(dimension: str, rows: dict[str, dict[str, Any]]) -> None:
    if not rows:
        return
    imgui.separator_text(TITLES[dimension])
    # numbers whole and the name column frozen: a narrow dock scrolls sideways instead of cutting
    flags = (
        imgui.TableFlags_.row_bg
        | imgui.TableFlags_.borders_inner_v
        | imgui.TableFlags_.scroll_x
        | imgui.TableFlags_.resizable
    )
    height = imgui.get_frame_height_with_spacing() * (len(rows) + 1.6) + imgui.get_style().scrollbar_size
    wide = imgui.calc_text_size("openai_compatible / gpt-4o").x
    name_width = min(wide, imgui.get_content_region_avail().x * 0.45)  # the dollars stay in view
    if not imgui.begin_table(f"##usage_{dimension}", 1 + len(COLUMNS), flags, ImVec2(0, height)):
        return
    imgui.table_setup_scroll_freeze(1, 1)
    fixed = imgui.TableColumnFlags_.width_fixed
    imgui.table_setup_column("", fixed, name_width)
    for title in COLUMNS:
        sample = "$0.0000 + 00 unknown" if title == "dollars" else "00,000,000"
        imgui.table_setup_column(title, fixed, imgui.calc_text_size(sample).x)
    imgui.table_headers_row()
    for name, row in rows.items():
        imgui.table_next_row()
        imgui.table_set_column_index(0)
        text_elided(name)
        counts = (row["calls"], row["input_tokens"], row["output_tokens"])
        cells = [f"{n:,}" for n in (*counts, row["cache_read_tokens"], row["cache_write_tokens"])]
        for column, text in enumerate(cells, start=2):
            imgui.table_set_column_index(column)
            imgui.text_unformatted(text)
        imgui.table_set_column_index(1)
        if row.get("unknown_calls"):
            imgui.text_colored(COLORS["warn"], usd_cell(row))
            if imgui.is_item_hovered():
                imgui.set_tooltip("no price is known for some calls: set [usage.prices] in config.toml")
        else:
            imgui.text_unformatted(usd_cell(row))
    imgui.end_table()


def _summary(ui: Ui, report: dict[str, Any]) -> None:
    total = report.get("total") or {}
    unknown = int(total.get("unknown_calls", 0))
    imgui.text_wrapped(f"Session: {usd_cell(total)} over {int(total.get('calls', 0)):,} calls")
    session, track = budgets(ui.ctrl)
    if session or track:
        parts = [f"session ${session:g}" if session else "", f"per track ${track:g}" if track else ""]
        imgui.text_disabled("Budget: " + ", ".join(p for p in parts if p))
    if unknown:
        imgui.push_style_color(imgui.Col_.text, COLORS["warn"])
        imgui.text_wrapped(f"prices from genai-prices{unknown_note(unknown)} in any sum")
        imgui.pop_style_color()
    else:
        imgui.push_style_color(imgui.Col_.text, imgui.get_style_color_vec4(imgui.Col_.text_disabled))
        imgui.text_wrapped("prices from genai-prices (list prices; [usage.prices] overrides)")
        imgui.pop_style_color()


def render_usage(ui: Ui) -> None:
    if not isinstance(ui.gui.usage, UsageView):
        ui.gui.usage = UsageView()
    view: UsageView = ui.gui.usage
    view.refresh(ui)
    report = view.report
    _summary(ui, report)
    if imgui.small_button("Reset##usage"):
        ui.act.click("btn_reset_usage")
    if not (report.get("total") or {}).get("calls"):
        imgui.text_disabled("no responses yet")
    for dimension in DIMENSIONS:
        _table(dimension, report.get(f"by_{dimension}") or {})
    imgui.separator_text("Dollars over time (s)")
    if implot.begin_plot("##usage_cost", ImVec2(-1, max(120.0, imgui.get_content_region_avail().y))):
        implot.setup_axes("seconds", "dollars", implot.AxisFlags_.auto_fit, implot.AxisFlags_.auto_fit)
        if view.xs is not None and len(view.xs):
            implot.plot_line("session (known prices)", view.xs, view.ys)
        implot.end_plot()
