"""When the spend asks: the ``cost_over`` rules and the budgets a running track crossed.

The spend is the session's :class:`~manual_slop.usage.ledger.UsageLedger`: every model call
priced by genai-prices (or a ``[usage.prices]`` override). Calls whose price is unknown are not
dollars anybody can add up: they are counted apart, and every question and notice says how many
were left out, so an unknown price never lets a budget pass in silence.

The conductor asks its :class:`CostWatch` once per loop. Three things can trip it, each once per
run (the spend when the run last asked is the floor of the next question):

- a ``cost_over`` rule's ``threshold_usd`` (the session's spend);
- ``usage.budget_usd`` (the session's spend);
- ``usage.track_budget_usd`` (the spend of the running track).

A trip gives a :class:`~manual_slop.dialogs.CostDialog` for the Execution Clutch and the track
pauses until it is approved. Where a rule matches the crossing, the rule decides (allow, ask,
deny); a budget nobody's rule decides asks a human.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from manual_slop.dialogs import CostDialog
from manual_slop.governance.rules import Rule
from manual_slop.usage.ledger import Spend

__all__ = ["Budgets", "CostWatch", "unknown_note"]

SESSION_BUDGET = "usage.budget_usd"
TRACK_BUDGET = "usage.track_budget_usd"


@dataclass(frozen=True, slots=True)
class Budgets:
    """Dollars before a run asks: the session's and one track's (0 = no budget)."""

    session_usd: float = 0.0
    track_usd: float = 0.0


def unknown_note(unknown_calls: int) -> str:
    """What a sum leaves out: '' or ``"; 3 calls at unknown price not counted"``."""
    if not unknown_calls:
        return ""
    calls = "call" if unknown_calls == 1 else "calls"
    return f"; {unknown_calls} {calls} at unknown price not counted"


class CostWatch:
    """The ``cost_over`` rules and budgets of one run, checked against the ledger's spend."""

    def __init__(
        self,
        rules: Callable[[], Sequence[Rule]],
        spend: Callable[[str | None], Spend],
        budgets: Budgets | None = None,
    ) -> None:
        self._rules = rules  # the cost_over rules in force now (the clutch's, under its policy)
        self._spend = spend  # the session's (None) or one track's spend
        self.budgets = budgets or Budgets()
        self._since = 0.0  # the session's spend when this run last asked
        self._since_track = 0.0  # the track's spend then
        self._warned_unknown = False
        self._lock = threading.Lock()

    def check(self, track_id: str) -> CostDialog | None:
        """The dialog to ask when the spend crossed a threshold since the last question, else None."""
        session, track = self._spend(None), self._spend(track_id)
        spent, spent_track = float(session.usd), float(track.usd)
        budgets = self.budgets
        with self._lock:
            since, since_track = self._since, self._since_track
            rules = [
                rule
                for rule in self._rules()
                if rule.threshold_usd is not None and since < rule.threshold_usd <= spent
            ]
            crossed = [(repr(rule.name), float(rule.threshold_usd or 0.0)) for rule in rules]
            budget: list[str] = []
            if budgets.session_usd > 0 and since < budgets.session_usd <= spent:
                budget.append(SESSION_BUDGET)
                crossed.append((f"{SESSION_BUDGET} = {budgets.session_usd:g}", budgets.session_usd))
            if budgets.track_usd > 0 and since_track < budgets.track_usd <= spent_track:
                budget.append(TRACK_BUDGET)
            if crossed or budget:
                self._since, self._since_track = spent, spent_track
        if not crossed and not budget:
            return None
        parts = []
        if crossed:
            names = ", ".join(name for name, _ in crossed)
            parts.append(f"The session has spent ${spent:.4f} (over {names})")
        if TRACK_BUDGET in budget:
            parts.append(
                f"track {track_id} has spent ${spent_track:.4f} (over {TRACK_BUDGET} = {budgets.track_usd:g})"
            )
        unknown = session.unknown_calls
        message = (
            "; ".join(parts)
            + f" at genai-prices' list prices{unknown_note(unknown)}. Track {track_id} is paused: "
            "approve to resume it, reject to keep it paused."
        )
        threshold = max([t for _, t in crossed] + ([budgets.track_usd] if TRACK_BUDGET in budget else []))
        return CostDialog(
            track_id, spent, since, threshold, message, budget=", ".join(budget), unknown_calls=unknown
        )

    def unknown_notice(self, track_id: str) -> str:
        """Once per run, when a budget or rule is watching and calls have no price: the warning
        that they are not counted against it ('' otherwise)."""
        watching = self.budgets.session_usd > 0 or self.budgets.track_usd > 0 or bool(self._rules())
        if self._warned_unknown or not watching:
            return ""
        unknown = self._spend(None).unknown_calls
        if not unknown:
            return ""
        self._warned_unknown = True
        return (
            f"track {track_id}: the cost limits count known prices only{unknown_note(unknown)} "
            "(set [usage.prices] in config.toml to price them)"
        )
