"""``get_ui_performance``: the app's frame-loop metrics, as the Diagnostics panel shows them.

The tool reads nothing itself: the app puts a callable on the execution context
(``ExecutionContext.ui_performance``, set by :func:`~manual_slop.tools.approval.build_execution_context`)
that returns a :func:`performance_snapshot` of the controller — its mode, health and the
:class:`~manual_slop.perf.PerformanceMonitor` metrics, all safe to read from any thread.
Headless, the frame loop is the ticker's, and the answer says the GUI is not running.
Outside the app (library use, an MCP server without a controller) there is nothing to read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from manual_slop.tools.errors import ToolUnavailable
from manual_slop.tools.tool import Tool, ToolRun

__all__ = ["performance_report", "performance_snapshot", "ui_performance_tools"]

SLOWEST_SCOPES = 10  # named scopes listed, slowest average first
_MAIN = (
    ("fps", "fps_avg", "frames per second", ""),
    ("last_frame_time_ms", "frame_time_ms_avg", "frame time", " ms"),
    ("cpu_percent", "cpu_percent_avg", "CPU (this process)", " %"),
    ("input_lag_ms", "input_lag_ms_avg", "input lag", " ms"),
)


class _Monitored(Protocol):
    mode: str
    perf: Any  # manual_slop.perf.PerformanceMonitor

    def health(self) -> dict[str, Any]: ...


def performance_snapshot(ctrl: _Monitored) -> dict[str, Any]:
    """What the tool reports, read from the controller (any thread)."""
    return {"mode": ctrl.mode, "health": ctrl.health(), "metrics": ctrl.perf.get_metrics()}


def performance_report(snapshot: Mapping[str, Any]) -> str:
    """The snapshot as text: mode, health, the main metrics, the slowest named scopes."""
    mode = str(snapshot.get("mode", "?"))
    health: Mapping[str, Any] = snapshot.get("health") or {}
    metrics: Mapping[str, float] = snapshot.get("metrics") or {}
    if mode == "gui":
        lines = ["The GUI is running (desktop mode); metrics of its render loop:"]
    else:
        lines = [
            f"The GUI is not running ({mode} mode): there is no window to measure. "
            "These are the metrics of the headless ticker's frame loop:"
        ]
    state = "healthy" if health.get("healthy") else f"degraded: {health.get('degraded_reason') or 'unknown'}"
    age = float(health.get("last_frame_age_ms", -1.0))
    lines.append(f"- frame loop: {state}; {health.get('frames', 0)} frames; last frame {age:.0f} ms ago")
    for current, average, label, unit in _MAIN:
        if current in metrics:
            lines.append(
                f"- {label}: {metrics[current]:.1f}{unit} (average {metrics.get(average, 0.0):.1f}{unit})"
            )
    scopes = sorted(
        ((name[len("time_") : -len("_ms_avg")], value) for name, value in metrics.items()
         if name.startswith("time_") and name.endswith("_ms_avg")),
        key=lambda item: -item[1],
    )  # fmt: skip
    if scopes:
        lines.append(f"- slowest timed scopes (average ms per frame, top {SLOWEST_SCOPES}):")
        lines += [f"  {name}: {value:.2f} ms" for name, value in scopes[:SLOWEST_SCOPES]]
    return "\n".join(lines)


def get_ui_performance(args: dict[str, Any], run: ToolRun) -> str:
    source = run.ctx.ui_performance
    if source is None:
        raise ToolUnavailable(
            "no performance data: this call does not run inside the Manual Slop app (no controller), "
            "so there is no GUI or frame loop to measure"
        )
    return performance_report(source())


def ui_performance_tools() -> list[Tool]:
    return [
        Tool(
            "get_ui_performance",
            "Report the app's own frame-loop performance. Says whether the GUI is running, and gives "
            "frame-loop health, frames per second, frame time, CPU use of the process and input lag "
            "(current and average) and the slowest timed scopes. Takes no arguments.",
            {"type": "object", "properties": {}, "additionalProperties": False},
            get_ui_performance,
        )
    ]
