"""Usage: tokens per provider and per tier, and their growth over time (implot).

Built incrementally from the comms log's ``response`` entries (their ``usage``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from imgui_bundle import ImVec2, imgui, implot

from manual_slop.gui.widgets import text_elided

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["UsageSeries", "render_usage"]


@dataclass(slots=True)
class UsageSeries:
    """Running totals; ``points[provider]`` holds (time, cumulative input+output tokens)."""

    first_seq: Any = None
    seen: int = 0
    started: float | None = None
    by_provider: dict[str, list[int]] = field(default_factory=dict)  # provider/model -> [in, out]
    by_tier: dict[str, list[int]] = field(default_factory=dict)
    points: dict[str, tuple[list[float], list[float]]] = field(default_factory=dict)

    def update(self, log: list[dict[str, Any]]) -> None:
        first = log[0].get("seq") if log else None
        if first != self.first_seq or self.seen > len(log):
            fresh = UsageSeries(first_seq=first)
            for name in self.__slots__:
                setattr(self, name, getattr(fresh, name))
        for entry in log[self.seen :]:
            if entry.get("kind") != "response":
                continue
            usage = (entry.get("payload") or {}).get("usage") or {}
            tokens_in, tokens_out = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
            key = f"{entry.get('provider', '?')} / {entry.get('model', '?')}"
            totals = self.by_provider.setdefault(key, [0, 0])
            totals[0] += tokens_in
            totals[1] += tokens_out
            tier = self.by_tier.setdefault(str(entry.get("source_tier") or "main"), [0, 0])
            tier[0] += tokens_in
            tier[1] += tokens_out
            stamp = float(entry.get("local_ts", 0.0))
            if self.started is None:
                self.started = stamp
            xs, ys = self.points.setdefault(key, ([], []))
            xs.append(stamp - self.started)
            ys.append(float(totals[0] + totals[1]))
        self.seen = len(log)


def _table(title: str, rows: dict[str, list[int]]) -> None:
    imgui.separator_text(title)
    if not rows:
        imgui.text_disabled("no responses yet")
        return
    if imgui.begin_table(f"##{title}", 3, imgui.TableFlags_.row_bg | imgui.TableFlags_.borders_inner_v):
        number = imgui.calc_text_size("0,000,000").x  # numbers whole, names cut to what is left
        imgui.table_setup_column("", imgui.TableColumnFlags_.width_stretch)
        imgui.table_setup_column("input", imgui.TableColumnFlags_.width_fixed, number)
        imgui.table_setup_column("output", imgui.TableColumnFlags_.width_fixed, number)
        imgui.table_headers_row()
        for name, (tokens_in, tokens_out) in sorted(rows.items()):
            imgui.table_next_row()
            imgui.table_set_column_index(0)
            text_elided(name)
            for column, text in enumerate((f"{tokens_in:,}", f"{tokens_out:,}"), start=1):
                imgui.table_set_column_index(column)
                imgui.text_unformatted(text)
        imgui.end_table()


def render_usage(ui: Ui) -> None:
    if ui.gui.usage is None:
        ui.gui.usage = UsageSeries()
    series: UsageSeries = ui.gui.usage
    series.update(ui.state.comms_log)
    _table("By provider / model", series.by_provider)
    _table("By tier", series.by_tier)
    imgui.separator_text("Cumulative tokens over time (s)")
    if implot.begin_plot("##usage", ImVec2(-1, -1)):
        implot.setup_axes("seconds", "tokens", implot.AxisFlags_.auto_fit, implot.AxisFlags_.auto_fit)
        for name, (xs, ys) in series.points.items():
            if xs:
                implot.plot_line(name, np.asarray(xs), np.asarray(ys))
        implot.end_plot()
