"""FitReport: how a send's context was fitted to the window of the model that answers.

Written by :func:`~manual_slop.context.fit.fit_context` and carried by the
:class:`~manual_slop.context.aggregate.CompiledContext` it describes; the request's status,
the Context panel and a notification show it. A module of its own because :mod:`.aggregate`
(which holds it) sits below :mod:`.fit` (which imports aggregate).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

__all__ = ["WHY_FIT", "FitReport"]

WHY_FIT = "to fit the window"  # the ``why`` of a file shortened only because the window is small


@dataclass(slots=True)
class FitReport:
    """How a context was fitted to the window of the model that answers."""

    provider: str
    model: str
    window: int
    reserved: int  # tokens of the rest of the request (the answer's room included)
    available: int  # room for the context
    tokens: int  # the context as sent, counted on the model
    exact: bool  # counted with the model's own tokenizer
    rounds: int  # compiles it took
    degraded: list[dict[str, str]] = field(default_factory=list)  # {path, mode, effective_mode, why}
    dropped: list[dict[str, str]] = field(default_factory=list)  # {path, reason}

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def gave_way(self) -> list[dict[str, str]]:
        """Files shortened to fit the window (not those the strategy shortens anyway)."""
        return [d for d in self.degraded if d["why"] == WHY_FIT]

    def headline(self) -> str:
        """One line for a notification: what had to give way, and for which model."""
        parts = []
        if self.gave_way:
            parts.append(f"{len(self.gave_way)} file(s) shortened")
        if self.dropped:
            parts.append(f"{len(self.dropped)} left out")
        what = " and ".join(parts) or "nothing changed"
        listed = [*self.dropped, *self.gave_way]
        names = ", ".join(d["path"] for d in listed[:4])
        more = "…" if len(listed) > 4 else ""
        return (
            f"context: {what} to fit {self.model} ({self.window:,} tokens; "
            f"{self.tokens:,} of {self.available:,} used): {names}{more}"
        )
