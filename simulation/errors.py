"""Errors of the simulation harness.

::

    SimulationError                 base of everything the harness raises
    ├── LaunchError                 the app could not be started, did not announce its
    │                               Hook API, or did not stop cleanly
    ├── ScenarioError               a scenario is unknown or malformed
    │   └── TurnScriptError         a provider turn file is malformed (file, group, turn, key)
    ├── AttachedOnlyLimit           a step needs a launched app (e.g. a restart) and the
    │                               harness is attached to a running one
    └── VerificationFailed          a check on observable state failed (what, expected, actual)

Nothing here logs when it is constructed; the runner reports.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AttachedOnlyLimit",
    "LaunchError",
    "ScenarioError",
    "SimulationError",
    "TurnScriptError",
    "VerificationFailed",
]


class SimulationError(Exception):
    """Base of the harness's errors."""


class LaunchError(SimulationError):
    """Raised when the launched app fails to start, to announce its port, or to stop cleanly."""


class ScenarioError(SimulationError):
    """Raised for an unknown scenario name or a scenario that cannot run as written."""


class TurnScriptError(ScenarioError):
    """Raised when a turn file does not parse or a turn has an unknown or wrongly typed key."""


class AttachedOnlyLimit(SimulationError):
    """Raised by a step that needs an app the harness launched (restart, private config)."""


class VerificationFailed(SimulationError):
    """Raised when a check on what the user would see does not hold."""

    def __init__(self, what: str, detail: str = "", *, expected: Any = None, actual: Any = None) -> None:
        self.what = what
        self.detail = detail
        self.expected = expected
        self.actual = actual
        super().__init__(f"{what}: {detail}" if detail else what)
