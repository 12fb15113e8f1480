"""Diagnostics: frame rate, frame time, CPU and input lag from the performance monitor, plotted;
the run metrics (providers, tools, guard trips) from :mod:`manual_slop.gui.metrics_view`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from imgui_bundle import ImVec2, imgui, implot

from manual_slop.gui.metrics_view import render_run_metrics
from manual_slop.gui.widgets import text_elided

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["HISTORY", "record_history", "render_diagnostics"]

HISTORY = 300  # samples kept for the plots (one per frame)


def record_history(ui: Ui) -> None:
    """Append this frame's metrics to the plot histories (called every frame)."""
    metrics = ui.ctrl.perf.get_metrics()
    for series, key in (
        (ui.gui.fps_history, "fps"),
        (ui.gui.frame_ms_history, "last_frame_time_ms"),
        (ui.gui.cpu_history, "cpu_percent"),
    ):
        series.append(float(metrics.get(key, 0.0)))
        del series[:-HISTORY]


def render_diagnostics(ui: Ui) -> None:
    metrics = ui.ctrl.perf.get_metrics()
    health = ui.ctrl.health()
    if health["healthy"]:
        imgui.text_colored(imgui.ImVec4(0.4, 0.85, 0.45, 1), "healthy")
    else:
        imgui.text_colored(imgui.ImVec4(0.95, 0.35, 0.35, 1), f"degraded: {health['degraded_reason']}")
    render_run_metrics(ui)
    imgui.separator_text("Frame")
    if imgui.begin_table("##metrics", 3, imgui.TableFlags_.row_bg | imgui.TableFlags_.borders_inner_v):
        number = imgui.calc_text_size("00000.00").x  # the panel is narrow: numbers fixed, names elided
        imgui.table_setup_column("metric", imgui.TableColumnFlags_.width_stretch)
        imgui.table_setup_column("now", imgui.TableColumnFlags_.width_fixed, number)
        imgui.table_setup_column("avg", imgui.TableColumnFlags_.width_fixed, number)
        imgui.table_headers_row()
        for label, key in (
            ("fps", "fps"),
            ("frame time (ms)", "last_frame_time_ms"),
            ("cpu (%)", "cpu_percent"),
            ("input lag (ms)", "input_lag_ms"),
        ):
            average_key = "frame_time_ms_avg" if key == "last_frame_time_ms" else f"{key}_avg"
            _row(label, metrics.get(key, 0.0), metrics.get(average_key, 0.0))
        for key in sorted(k for k in metrics if k.startswith("time_") and not k.endswith("_avg")):
            _row(key[5:-3], metrics[key], metrics.get(f"{key}_avg", 0.0))
        imgui.end_table()
    for title, series, y_max in (
        ("fps", ui.gui.fps_history, 120.0),
        ("frame time (ms)", ui.gui.frame_ms_history, 50.0),
        ("cpu (%)", ui.gui.cpu_history, 100.0),
    ):
        if implot.begin_plot(
            f"{title}##plot", ImVec2(-1, 110), implot.Flags_.no_legend | implot.Flags_.no_mouse_text
        ):
            implot.setup_axes("", "", implot.AxisFlags_.no_tick_labels, implot.AxisFlags_.auto_fit)
            implot.setup_axis_limits(implot.ImAxis_.x1, 0, HISTORY, implot.Cond_.always)
            implot.setup_axis_limits(implot.ImAxis_.y1, 0, y_max, implot.Cond_.once)
            if series:
                implot.plot_line(title, np.asarray(series, dtype=np.float64))
            implot.end_plot()


def _row(label: str, now: float, average: float) -> None:
    imgui.table_next_row()
    imgui.table_set_column_index(0)
    text_elided(label)
    imgui.table_set_column_index(1)
    imgui.text_unformatted(f"{now:.2f}")
    imgui.table_set_column_index(2)
    imgui.text_unformatted(f"{average:.2f}")
