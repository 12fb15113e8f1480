"""Frame-loop performance monitor: fps, frame time, CPU, input lag and named scopes.

The render loop (or the headless ticker) calls :meth:`PerformanceMonitor.frame_start`
and :meth:`PerformanceMonitor.frame_end` around each frame and wraps interesting
work in ``with monitor.scope("render_x"):``. Readers on other threads (the Hook
API's ``/api/diagnostics``) call :meth:`PerformanceMonitor.get_metrics`.
Each metric has a current value and an average over the last ``window`` samples.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

import psutil

__all__ = ["PerformanceMonitor"]


class _Series:
    """Last value and rolling mean of one metric."""

    __slots__ = ("_sum", "_values", "last")

    def __init__(self, window: int) -> None:
        self._values: deque[float] = deque(maxlen=window)
        self._sum = 0.0
        self.last = 0.0

    def add(self, value: float) -> None:
        if len(self._values) == self._values.maxlen:
            self._sum -= self._values[0]
        self._values.append(value)
        self._sum += value
        self.last = value

    @property
    def mean(self) -> float:
        return self._sum / len(self._values) if self._values else 0.0

    @property
    def count(self) -> int:
        return len(self._values)


class PerformanceMonitor:
    """Collects per-frame timings; safe to read from any thread."""

    CPU_SAMPLE_INTERVAL_S = 0.5  # psutil's cpu_percent needs time between samples to mean anything

    def __init__(self, window: int = 120) -> None:
        self._window = window
        self._lock = threading.Lock()
        self._frame_time = _Series(window)
        self._interval = _Series(window)
        self._cpu = _Series(window)
        self._input_lag = _Series(window)
        self._scopes: dict[str, _Series] = {}
        self._frame_started: float | None = None
        self._last_frame_end: float | None = None
        self._frames = 0
        self._process = psutil.Process()
        self._process.cpu_percent(None)  # prime: the first call always returns 0.0
        self._last_cpu_sample = time.perf_counter()
        self._pending_input: float | None = None

    def frame_start(self) -> None:
        self._frame_started = time.perf_counter()

    def frame_end(self) -> None:
        now = time.perf_counter()
        started = self._frame_started if self._frame_started is not None else now
        self._frame_started = None
        with self._lock:
            self._frame_time.add((now - started) * 1000.0)
            if self._last_frame_end is not None:
                self._interval.add((now - self._last_frame_end) * 1000.0)
            self._frames += 1
            self._last_frame_end = now
            if self._pending_input is not None:
                self._input_lag.add((now - self._pending_input) * 1000.0)
                self._pending_input = None
            sample_cpu = now - self._last_cpu_sample >= self.CPU_SAMPLE_INTERVAL_S
            if sample_cpu:
                self._last_cpu_sample = now
        if sample_cpu:
            value = self._process.cpu_percent(None)
            with self._lock:
                self._cpu.add(value)

    def record_input(self, event_time: float | None = None) -> None:
        """Note that input arrived (``perf_counter`` time); the lag is measured at the next frame end."""
        with self._lock:
            if self._pending_input is None:
                self._pending_input = time.perf_counter() if event_time is None else event_time

    @contextmanager
    def scope(self, name: str) -> Iterator[None]:
        """Time a block; reported as ``time_<name>_ms`` and ``time_<name>_ms_avg``."""
        started = time.perf_counter()
        try:
            yield
        finally:
            elapsed_ms = (time.perf_counter() - started) * 1000.0
            with self._lock:
                series = self._scopes.get(name)
                if series is None:
                    series = self._scopes[name] = _Series(self._window)
                series.add(elapsed_ms)

    @property
    def frames(self) -> int:
        with self._lock:
            return self._frames

    def last_frame_age_ms(self) -> float | None:
        """Milliseconds since the last frame ended; None before the first frame."""
        with self._lock:
            last = self._last_frame_end
        return None if last is None else (time.perf_counter() - last) * 1000.0

    def get_metrics(self) -> dict[str, float]:
        """fps, frame time, cpu and input lag (current and average) and every scope."""
        with self._lock:
            # fps counts frames per wall-clock second (interval between frame ends);
            # frame time is the work done inside one frame.
            interval, interval_avg = self._interval.last, self._interval.mean
            metrics = {
                "fps": 1000.0 / interval if interval > 0 else 0.0,
                "fps_avg": 1000.0 / interval_avg if interval_avg > 0 else 0.0,
                "last_frame_time_ms": self._frame_time.last,
                "frame_time_ms_avg": self._frame_time.mean,
                "cpu_percent": self._cpu.last,
                "cpu_percent_avg": self._cpu.mean,
                "input_lag_ms": self._input_lag.last,
                "input_lag_ms_avg": self._input_lag.mean,
            }
            for name, series in sorted(self._scopes.items()):
                metrics[f"time_{name}_ms"] = series.last
                metrics[f"time_{name}_ms_avg"] = series.mean
        return metrics
