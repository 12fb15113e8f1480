"""Exceptions of the MMA package.

Hierarchy::

    MMAError                      anything the orchestrator refuses or cannot do
    ├── TicketError               a ticket or track record is malformed (bad id, status, field)
    │   └── InvalidTransition     a status change the ticket lifecycle does not allow
    ├── DagError                  the ticket graph cannot run
    │   ├── DuplicateTicketId     two tickets share an id
    │   ├── UnknownDependency     a ticket depends on an id that is not in the track
    │   └── CycleDetected         the dependencies form a cycle (``cycle`` lists its ids)
    ├── PlanningError             a tier's answer stayed invalid after one correction round
    ├── PersistenceError          a track folder cannot be read or written
    ├── PatchError                a Tier 4 diff does not parse, apply, or touch allowed paths
    └── Aborted                   a call was abandoned because its abort event was set

Each message names the problem (ids, keys, paths) so it can be shown to the user
or fed back to the model as it is.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "Aborted",
    "CycleDetected",
    "DagError",
    "DuplicateTicketId",
    "InvalidTransition",
    "MMAError",
    "PatchError",
    "PersistenceError",
    "PlanningError",
    "TicketError",
    "UnknownDependency",
]


class MMAError(Exception):
    """Base of every MMA exception."""


class TicketError(MMAError, ValueError):
    """A ticket or track record is malformed; raised by ``from_dict`` and constructors."""

    failure_class = "validation_error"  # governance.severity: replan, then ask


class InvalidTransition(TicketError):
    """A ticket status change that its lifecycle forbids (e.g. ``completed`` → ``todo``)."""


class DagError(MMAError, ValueError):
    """The tickets of a track do not form a runnable graph."""

    failure_class = "validation_error"  # governance.severity: replan, then ask


class DuplicateTicketId(DagError):
    """Raised when two tickets of one track share an id."""

    def __init__(self, ids: Sequence[str]) -> None:
        self.ids = list(ids)
        super().__init__(f"duplicate ticket ids: {', '.join(self.ids)}")


class UnknownDependency(DagError):
    """Raised when ``depends_on`` names an id that is not a ticket of the track."""

    def __init__(self, missing: dict[str, list[str]]) -> None:
        self.missing = {k: list(v) for k, v in missing.items()}
        parts = [f"{tid} depends on unknown {', '.join(deps)}" for tid, deps in self.missing.items()]
        super().__init__("unknown dependencies: " + "; ".join(parts))


class CycleDetected(DagError):
    """Raised when the dependencies contain a cycle; ``cycle`` is ``[a, b, ..., a]``."""

    def __init__(self, cycle: Sequence[str]) -> None:
        self.cycle = list(cycle)
        super().__init__("dependency cycle: " + " -> ".join(self.cycle))


class PlanningError(MMAError):
    """A planning tier answered with something unusable, even after being told the error."""

    failure_class = "validation_error"  # governance.severity: replan, then ask


class PersistenceError(MMAError, OSError):
    """A track folder under ``conductor/tracks`` cannot be read or written."""


class PatchError(MMAError, ValueError):
    """A unified diff that does not parse, does not apply cleanly, or touches a forbidden path."""


class Aborted(MMAError):
    """The operation stopped because its abort event was set."""
