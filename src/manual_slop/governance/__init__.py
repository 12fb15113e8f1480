"""Governance: what surrounds the Execution Clutch — the run log and its replay, and the
correlation ids that join a run's records to ``comms.log`` and ``audit.log``.

The modules are imported by name (``manual_slop.governance.run_log`` …); this package face
imports nothing, because the AI client and the clutch import parts of it (see
``docs/guide_governance.md``).
"""

from __future__ import annotations

__all__: list[str] = []
