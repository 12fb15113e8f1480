"""The Hook API's usage endpoint: ``GET /api/usage``, the session's tokens and dollars per
provider, model, tier, track, ticket and plan subtask (:mod:`manual_slop.usage`). The ledger is
thread-safe, so the request's own thread reads it (no main-thread trampoline). Schema in
:mod:`.usage_schemas`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from manual_slop.hooks.routes import Call, Route
from manual_slop.usage.bindings import usage_report

if TYPE_CHECKING:
    from manual_slop.controller import AppController

__all__ = ["usage_routes"]


def usage_routes(ctrl: AppController) -> tuple[Route, ...]:
    def usage(call: Call) -> dict[str, Any]:
        return usage_report(ctrl)

    return (
        Route("GET", "/api/usage", "getUsage",
              "Tokens and dollars by provider, model, tier, track, ticket, subtask (null: unknown price)",
              usage, "Usage"),
    )  # fmt: skip
