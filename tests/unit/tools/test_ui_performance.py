"""get_ui_performance: the report of a snapshot, and the tool with and without an app behind it."""

from __future__ import annotations

from pathlib import Path

import pytest

from manual_slop.perf import PerformanceMonitor
from manual_slop.tools import ExecutionContext, ToolCall, ToolRegistry, ToolStatus, default_registry
from manual_slop.tools.ui_performance import performance_report


@pytest.fixture(scope="module")
def registry() -> ToolRegistry:
    """One registry for the module (building one per test costs more than the tests)."""
    return default_registry(with_powershell=False)


METRICS = {
    "fps": 59.94,
    "fps_avg": 60.0,
    "last_frame_time_ms": 2.5,
    "frame_time_ms_avg": 3.25,
    "cpu_percent": 12.0,
    "cpu_percent_avg": 10.0,
    "input_lag_ms": 16.0,
    "input_lag_ms_avg": 17.5,
    **{f"time_panel{i}_ms": float(i) for i in range(12)},
    **{f"time_panel{i}_ms_avg": float(i) for i in range(12)},
}
HEALTHY = {"healthy": True, "degraded_reason": None, "frames": 1200, "last_frame_age_ms": 4.0}


def test_the_gui_report_names_every_metric_and_the_slowest_scopes_first() -> None:
    text = performance_report({"mode": "gui", "health": HEALTHY, "metrics": METRICS})
    lines = text.splitlines()
    assert lines[0] == "The GUI is running (desktop mode); metrics of its render loop:"
    assert "- frame loop: healthy; 1200 frames; last frame 4 ms ago" in lines
    assert "- frames per second: 59.9 (average 60.0)" in lines
    assert "- frame time: 2.5 ms (average 3.2 ms)" in lines
    assert "- CPU (this process): 12.0 % (average 10.0 %)" in lines
    assert "- input lag: 16.0 ms (average 17.5 ms)" in lines
    scopes = lines[lines.index("- slowest timed scopes (average ms per frame, top 10):") + 1 :]
    assert scopes[0] == "  panel11: 11.00 ms" and scopes[-1] == "  panel2: 2.00 ms" and len(scopes) == 10


def test_headless_says_the_gui_is_not_running_and_reports_what_it_has() -> None:
    degraded = {
        "healthy": False,
        "degraded_reason": "no frame has run yet",
        "frames": 0,
        "last_frame_age_ms": -1,
    }
    text = performance_report(
        {"mode": "headless", "health": degraded, "metrics": PerformanceMonitor().get_metrics()}
    )
    assert text.startswith("The GUI is not running (headless mode)")
    assert "- frame loop: degraded: no frame has run yet; 0 frames" in text
    assert "- frames per second: 0.0 (average 0.0)" in text and "slowest timed scopes" not in text


def test_the_tool_reads_the_contexts_source_and_fails_clearly_without_one(registry, project: Path) -> None:
    monitor = PerformanceMonitor()
    with monitor.scope("render_discussion"):
        pass
    monitor.frame_start()
    monitor.frame_end()
    calls = []

    def source() -> dict:
        calls.append(1)
        return {"mode": "gui", "health": HEALTHY, "metrics": monitor.get_metrics()}

    ctx = ExecutionContext.for_directory(project, ui_performance=source)
    result = registry.execute(ToolCall.new("get_ui_performance", {}), ctx)
    assert result.ok and calls == [1] and "  render_discussion: " in result.content
    bare = registry.execute(ToolCall.new("get_ui_performance", {}), ExecutionContext.for_directory(project))
    assert bare.status is ToolStatus.ERROR and "does not run inside the Manual Slop app" in bare.content
    extra = registry.execute(ToolCall.new("get_ui_performance", {"verbose": True}), ctx)
    assert extra.status is ToolStatus.ERROR and "Parameter validation error" in extra.content
