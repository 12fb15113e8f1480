"""The usage ledger's wiring to a controller.

``register(ctrl)`` (listed in ``bindings.FEATURE_REGISTRARS``) gives the controller a
:class:`~manual_slop.usage.ledger.UsageLedger` as ``ctrl.usage_ledger``, priced by
genai-prices and the ``[usage.prices]`` overrides of ``config.toml`` (a bad entry is left out
with a message), fed with every comms entry, and adds ``btn_reset_usage``. The Usage panel, the
MMA dashboard and ``GET /api/usage`` read it; the MMA runtime's cost watch compares it with the
budgets (:func:`budgets`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from manual_slop.usage.ledger import UsageLedger
from manual_slop.usage.prices import PriceBook, parse_overrides

if TYPE_CHECKING:
    from manual_slop.controller import AppController

__all__ = ["budgets", "ledger_of", "register", "usage_report"]


def register(ctrl: AppController) -> None:
    overrides, problems = parse_overrides(ctrl.setting("usage.prices") or {})
    for problem in problems:
        ctrl.notify("error", f"{ctrl.paths.config_file.name}: {problem} (left out)")
    ledger = UsageLedger(PriceBook(overrides))
    ctrl.usage_ledger = ledger  # type: ignore[attr-defined]
    ctrl.on_comms_entry(ledger.record)
    ctrl.actions.register(
        "btn_reset_usage", lambda call: ledger.reset(), "Forget the session's usage and cost totals"
    )


def ledger_of(ctrl: Any) -> UsageLedger:
    """The controller's ledger (an empty one when the feature is not registered)."""
    ledger = getattr(ctrl, "usage_ledger", None)
    return ledger if isinstance(ledger, UsageLedger) else UsageLedger()


def budgets(ctrl: Any) -> tuple[float, float]:
    """``(usage.budget_usd, usage.track_budget_usd)``: 0 is no budget."""
    session, track = ctrl.setting("usage.budget_usd"), ctrl.setting("usage.track_budget_usd")
    return float(session or 0.0), float(track or 0.0)


def usage_report(ctrl: Any) -> dict[str, Any]:
    """``GET /api/usage``: the ledger's breakdown and the budgets."""
    session, track = budgets(ctrl)
    return {**ledger_of(ctrl).breakdown(), "budget_usd": session, "track_budget_usd": track}
