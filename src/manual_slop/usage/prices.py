"""What one model call cost, in dollars, from the maintained price list of ``genai-prices``.

Prices come from the data snapshot bundled with the ``genai-prices`` package (never fetched:
the app makes no network call for prices), or from ``[usage.prices."<model>"]`` in
``config.toml``, which wins. A model neither knows has *no* price (``None``: shown as
"unknown", never as $0); the local model is free by definition.

Token conventions differ per provider: Anthropic reports ``input_tokens`` *without* the cache
reads and writes, the others (Gemini, OpenAI-compatible servers) *with* them. genai-prices wants
the total, so :func:`priced_tokens` normalizes before pricing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

__all__ = [
    "FREE_PROVIDERS",
    "PROVIDER_IDS",
    "PriceBook",
    "PriceOverride",
    "Tokens",
    "parse_overrides",
    "priced_tokens",
]

# our provider names -> genai-prices provider ids (None: find the provider by the model's name)
PROVIDER_IDS: dict[str, str | None] = {
    "gemini": "google",
    "gemini_cli": "google",  # the CLI runs Gemini models on a Gemini API key
    "anthropic": "anthropic",
    "deepseek": "deepseek",
    "minimax": "minimax",
    "openai_compatible": None,  # any server: the model name says whose price list applies
}
FREE_PROVIDERS = frozenset({"local"})  # the bundled model runs on this machine
# providers whose input_tokens leave the cache reads and writes out (the others include them)
_INPUT_WITHOUT_CACHE = frozenset({"anthropic"})
_MILLION = Decimal(1_000_000)
PRICE_KEYS = ("input", "output", "cache_read", "cache_write")


@dataclass(frozen=True, slots=True)
class Tokens:
    """The tokens of one call in genai-prices' convention: ``input`` includes the cached ones."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0


def priced_tokens(provider: str, usage: Mapping[str, Any]) -> Tokens:
    """A comms entry's ``usage`` (``input_tokens`` …) as :class:`Tokens` for pricing."""

    def count(key: str) -> int:
        value = usage.get(key, 0)
        return max(0, int(value)) if isinstance(value, int | float) and not isinstance(value, bool) else 0

    tokens_in, cache_read, cache_write = (
        count("input_tokens"),
        count("cache_read_tokens"),
        count("cache_write_tokens"),
    )
    if provider in _INPUT_WITHOUT_CACHE or cache_read + cache_write > tokens_in:
        tokens_in += cache_read + cache_write  # a report that cannot include them does not
    return Tokens(tokens_in, count("output_tokens"), cache_read, cache_write)


@dataclass(frozen=True, slots=True)
class PriceOverride:
    """Dollars per million tokens for one model (``config.toml`` ``[usage.prices."<model>"]``);
    a cache rate not given is the input rate."""

    input: Decimal
    output: Decimal
    cache_read: Decimal | None = None
    cache_write: Decimal | None = None

    def cost(self, tokens: Tokens) -> Decimal:
        fresh = max(0, tokens.input - tokens.cache_read - tokens.cache_write)
        read = self.input if self.cache_read is None else self.cache_read
        write = self.input if self.cache_write is None else self.cache_write
        dollars = fresh * self.input + tokens.cache_read * read + tokens.cache_write * write
        return (dollars + tokens.output * self.output) / _MILLION


def parse_overrides(raw: Any) -> tuple[dict[str, PriceOverride], list[str]]:
    """``[usage.prices]`` as overrides by model name, and a message for each entry left out."""
    if not isinstance(raw, Mapping):
        return {}, [f"usage.prices: expected a table of models, got {type(raw).__name__}"]
    overrides: dict[str, PriceOverride] = {}
    problems: list[str] = []
    for model, entry in raw.items():
        where = f"usage.prices.{model!r}"
        if not isinstance(entry, Mapping):
            problems.append(f"{where}: expected a table with input and output, got {type(entry).__name__}")
            continue
        unknown = sorted(set(entry) - set(PRICE_KEYS))
        if unknown:
            problems.append(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(PRICE_KEYS)}")
            continue
        rates: dict[str, Decimal] = {}
        for key, value in entry.items():
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if not number or not math.isfinite(value) or value < 0:
                problems.append(f"{where}.{key}: expected dollars per million tokens (>= 0), got {value!r}")
                break
            rates[key] = Decimal(str(value))
        else:
            missing = [key for key in ("input", "output") if key not in rates]
            if missing:
                problems.append(f"{where}: missing {' and '.join(missing)} (dollars per million tokens)")
                continue
            overrides[str(model)] = PriceOverride(
                rates["input"], rates["output"], rates.get("cache_read"), rates.get("cache_write")
            )
    return overrides, problems


class PriceBook:
    """Prices calls: a config override, else genai-prices' bundled snapshot, else unknown (None).

    Immutable once built (a config change builds a new one), so any thread may use it."""

    def __init__(self, overrides: Mapping[str, PriceOverride] | None = None) -> None:
        self.overrides: dict[str, PriceOverride] = dict(overrides or {})

    def cost(self, provider: str, model: str, tokens: Tokens) -> Decimal | None:
        """Dollars for ``tokens`` of ``model`` at ``provider``; None when the price is unknown."""
        override = self.overrides.get(model)
        if override is not None:
            return override.cost(tokens)
        if provider in FREE_PROVIDERS:
            return Decimal(0)
        if not model or provider not in PROVIDER_IDS:
            return None
        return library_cost(provider, model, tokens)

    def source(self, provider: str, model: str) -> str:
        """Where the price of ``model`` comes from: ``config``, ``free``, ``genai-prices`` or ``unknown``."""
        if model in self.overrides:
            return "config"
        if provider in FREE_PROVIDERS:
            return "free"
        known = model and provider in PROVIDER_IDS and library_cost(provider, model, Tokens()) is not None
        return "genai-prices" if known else "unknown"


def library_cost(provider: str, model: str, tokens: Tokens) -> Decimal | None:
    """genai-prices' price of the call (its bundled data only: nothing is fetched), or None."""
    import genai_prices  # ~0.4 s: paid at the first priced call, not at start-up

    usage = genai_prices.Usage(
        input_tokens=tokens.input,
        output_tokens=tokens.output,
        cache_read_tokens=tokens.cache_read,
        cache_write_tokens=tokens.cache_write,
    )
    try:
        return genai_prices.calc_price(usage, model, provider_id=PROVIDER_IDS.get(provider)).total_price
    except (LookupError, ValueError):  # a model (or usage) its price list does not cover
        return None
