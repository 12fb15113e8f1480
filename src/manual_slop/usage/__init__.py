"""Usage and cost: tokens and dollars of every model call, priced by genai-prices.

:mod:`.prices` prices one call (config overrides, the library's bundled snapshot, or unknown);
:mod:`.ledger` keeps the session's breakdowns; :mod:`.bindings` wires them to the controller.
"""

from __future__ import annotations

from manual_slop.usage.ledger import DIMENSIONS, Spend, Tally, UsageLedger, format_usd
from manual_slop.usage.prices import PROVIDER_IDS, PriceBook, PriceOverride, Tokens, parse_overrides

__all__ = [
    "DIMENSIONS",
    "PROVIDER_IDS",
    "PriceBook",
    "PriceOverride",
    "Spend",
    "Tally",
    "Tokens",
    "UsageLedger",
    "format_usd",
    "parse_overrides",
]
