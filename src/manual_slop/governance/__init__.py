"""Governance: what keeps agent runs observable and under control. See docs/guide_governance.md."""

from __future__ import annotations

from manual_slop.governance.metrics import MetricsCollector

__all__ = ["MetricsCollector"]
