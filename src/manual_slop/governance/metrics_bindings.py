"""The run metrics' wiring to a controller.

``register(ctrl)`` (listed in ``bindings.FEATURE_REGISTRARS``) gives the controller a
:class:`~manual_slop.governance.metrics.MetricsCollector` as ``ctrl.metrics``, subscribes it to
the AI client's events (the MMA workers' forks share them) until shutdown, and adds the
``btn_reset_metrics`` action. The Diagnostics panel and ``GET /api/diagnostics`` read
:func:`metrics_snapshot`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from manual_slop.events import EventEmitter
from manual_slop.governance.metrics import MetricsCollector

if TYPE_CHECKING:
    from manual_slop.controller import AppController

__all__ = ["metrics_snapshot", "register"]


def register(ctrl: AppController) -> None:
    collector = MetricsCollector()
    ctrl.metrics = collector  # type: ignore[attr-defined]
    events = getattr(ctrl.backend, "events", None)
    if isinstance(events, EventEmitter):
        ctrl.on_shutdown(collector.attach(events))
    ctrl.actions.register(
        "btn_reset_metrics",
        lambda call: collector.reset(),
        "Forget the run metrics (provider and tool failure rates, latencies, guard trips)",
    )


def metrics_snapshot(ctrl: Any) -> dict[str, Any]:
    """The controller's metrics; an empty snapshot when none are collected."""
    collector = getattr(ctrl, "metrics", None)
    if not isinstance(collector, MetricsCollector):
        collector = MetricsCollector()
    return collector.snapshot()
