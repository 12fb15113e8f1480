from __future__ import annotations

import time

from manual_slop.perf import PerformanceMonitor

SEED_KEYS = {
    "fps",
    "fps_avg",
    "last_frame_time_ms",
    "frame_time_ms_avg",
    "cpu_percent",
    "cpu_percent_avg",
    "input_lag_ms",
    "input_lag_ms_avg",
}


def test_metrics_have_the_documented_keys_and_count_frames() -> None:
    monitor = PerformanceMonitor()
    assert monitor.last_frame_age_ms() is None
    for _ in range(5):
        monitor.frame_start()
        time.sleep(0.002)
        monitor.frame_end()
    metrics = monitor.get_metrics()
    assert set(metrics) >= SEED_KEYS
    assert monitor.frames == 5
    assert metrics["last_frame_time_ms"] > 0 and metrics["fps"] > 0
    assert monitor.last_frame_age_ms() is not None


def test_named_scopes_report_current_and_average() -> None:
    monitor = PerformanceMonitor()
    with monitor.scope("render_x"):
        time.sleep(0.003)
    with monitor.scope("render_x"):
        pass
    metrics = monitor.get_metrics()
    assert metrics["time_render_x_ms"] < metrics["time_render_x_ms_avg"]
    assert metrics["time_render_x_ms_avg"] > 1.0


def test_input_lag_is_measured_to_the_next_frame_end() -> None:
    monitor = PerformanceMonitor()
    monitor.record_input()
    time.sleep(0.003)
    monitor.frame_start()
    monitor.frame_end()
    assert monitor.get_metrics()["input_lag_ms"] >= 3.0
    monitor.frame_start()
    monitor.frame_end()
    assert monitor.get_metrics()["input_lag_ms"] >= 3.0  # no new input: value unchanged
