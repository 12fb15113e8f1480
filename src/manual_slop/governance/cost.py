"""What the session has spent in dollars, and the ``cost_over`` rules a running track crossed.

There is no bill to read: the spend is *estimated* from the tokens per tier that MMA counts
(``TierUsage``) at list prices (:data:`PRICES`, USD per million tokens; an unknown model or a
local one costs nothing) -- the figure the MMA dashboard shows. The conductor asks its
:class:`CostWatch` once per loop; a threshold crossed gives a
:class:`~manual_slop.dialogs.CostDialog` for the Execution Clutch, and the track pauses until
it is approved.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from manual_slop.dialogs import CostDialog
from manual_slop.governance.rules import Rule

__all__ = ["PRICES", "CostWatch", "estimate_cost"]

# USD per million tokens (input, output); an estimate, not a bill.
PRICES: dict[str, tuple[float, float]] = {
    "gemini-2.5-flash-lite": (0.10, 0.40),
    "gemini-2.5-flash": (0.30, 2.50),
    "gemini-2.5-pro": (1.25, 10.0),
    "claude-sonnet-4-5": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
    "deepseek-chat": (0.27, 1.10),
    "MiniMax-M2": (0.30, 1.20),
}


def estimate_cost(tier_usage: Mapping[str, Any]) -> float:
    """Dollars for the tokens in ``tier_usage`` (tier -> {input, output, model}) at PRICES."""
    total = 0.0
    for usage in tier_usage.values():
        if not isinstance(usage, Mapping):
            continue
        price_in, price_out = PRICES.get(str(usage.get("model", "")), (0.0, 0.0))
        total += (
            float(usage.get("input", 0)) * price_in / 1e6 + float(usage.get("output", 0)) * price_out / 1e6
        )
    return total


class CostWatch:
    """The ``cost_over`` rules of one run: a threshold asks when the spend crosses it, once (the
    spend the run last asked at is the floor of the next question)."""

    def __init__(self, rules: Callable[[], Sequence[Rule]]) -> None:
        self._rules = rules  # the cost_over rules in force now (the clutch's, under its policy)
        self._since = 0.0  # the spend when this run last asked
        self._lock = threading.Lock()

    def check(self, track_id: str, tier_usage: Mapping[str, Any]) -> CostDialog | None:
        """The dialog to ask when the spend crossed a threshold since the last question, else None."""
        spent = estimate_cost(tier_usage)
        with self._lock:
            since = self._since
            crossed = [
                rule
                for rule in self._rules()
                if rule.threshold_usd is not None and since < rule.threshold_usd <= spent
            ]
            if crossed:
                self._since = spent
        if not crossed:
            return None
        threshold = max(float(rule.threshold_usd or 0.0) for rule in crossed)
        names = ", ".join(repr(rule.name) for rule in crossed)
        message = (
            f"The session has spent an estimated ${spent:.4f} on MMA (tokens per tier at list prices; "
            f"local models are free), over ${threshold:g} (rule {names}). Track {track_id} is paused: "
            "approve to resume it, reject to keep it paused."
        )
        return CostDialog(track_id, spent, since, threshold, message)
