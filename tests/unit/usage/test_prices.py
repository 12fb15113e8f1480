"""A call's dollars: genai-prices' own numbers through our provider names, the Anthropic cache
convention, config overrides (and their errors), unknown models (None, never $0), the local model
($0), and the provider table of the guide."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import genai_prices
import pytest

from manual_slop.config import PROVIDER_NAMES
from manual_slop.usage.prices import (
    FREE_PROVIDERS,
    PROVIDER_IDS,
    PriceBook,
    PriceOverride,
    Tokens,
    parse_overrides,
    priced_tokens,
)
from tests.helpers import markdown_tables

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guide_usage.md"
BOOK = PriceBook()


def library(tokens: Tokens, model: str, provider_id: str | None) -> Decimal:
    usage = genai_prices.Usage(
        input_tokens=tokens.input,
        output_tokens=tokens.output,
        cache_read_tokens=tokens.cache_read,
        cache_write_tokens=tokens.cache_write,
    )
    return genai_prices.calc_price(usage, model, provider_id=provider_id).total_price


@pytest.mark.parametrize(
    ("provider", "model", "provider_id"),
    [
        ("gemini", "gemini-2.5-flash-lite", "google"),
        ("gemini_cli", "gemini-2.5-flash", "google"),
        ("anthropic", "claude-sonnet-4-5", "anthropic"),
        ("deepseek", "deepseek-chat", "deepseek"),
        ("minimax", "MiniMax-M2", "minimax"),
        ("openai_compatible", "gpt-4o", "openai"),
    ],
)
def test_each_provider_is_priced_like_the_library(provider: str, model: str, provider_id: str) -> None:
    tokens = Tokens(input=120_000, output=3_000, cache_read=40_000, cache_write=0)
    assert BOOK.cost(provider, model, tokens) == library(tokens, model, provider_id)
    assert BOOK.source(provider, model) == "genai-prices"


def test_a_hand_checked_price() -> None:
    # gemini-2.5-flash: $0.30 per million input, $2.50 per million output, $0.03 per million cached
    tokens = Tokens(input=1_000_000, output=1_000_000, cache_read=500_000)
    assert BOOK.cost("gemini", "gemini-2.5-flash", tokens) == Decimal("2.665")  # 0.15 + 0.015 + 2.5


def test_anthropic_input_leaves_the_cache_out_the_others_include_it() -> None:
    usage = {"input_tokens": 1000, "output_tokens": 10, "cache_read_tokens": 4000, "cache_write_tokens": 500}
    assert priced_tokens("anthropic", usage) == Tokens(5500, 10, 4000, 500)
    assert priced_tokens("gemini", {**usage, "input_tokens": 6000}) == Tokens(6000, 10, 4000, 500)
    # a report whose cache exceeds its input cannot include it: added, not an error
    assert priced_tokens("deepseek", usage) == Tokens(5500, 10, 4000, 500)
    assert priced_tokens("gemini", {"input_tokens": "many", "output_tokens": True}) == Tokens()


def test_unknown_models_have_no_price_and_the_local_model_is_free() -> None:
    tokens = Tokens(input=10_000, output=1_000)
    assert BOOK.cost("openai_compatible", "qwen2.5-coder:7b", tokens) is None
    assert BOOK.cost("gemini", "gemini-does-not-exist-9", tokens) is None
    assert BOOK.cost("anthropic", "", tokens) is None
    assert BOOK.cost("someone_else", "gpt-4o", tokens) is None
    assert BOOK.source("openai_compatible", "qwen2.5-coder:7b") == "unknown"
    assert BOOK.cost("local", "SmolLM2-135M-Instruct", tokens) == Decimal(0)
    assert BOOK.source("local", "SmolLM2-135M-Instruct") == "free"


def test_a_config_override_wins_and_prices_the_cache_at_its_rates() -> None:
    overrides, problems = parse_overrides(
        {
            "qwen2.5-coder:7b": {"input": 1, "output": 2},
            "gemini-2.5-flash": {"input": 0.5, "output": 4, "cache_read": 0.05, "cache_write": 1},
        }
    )
    assert problems == []
    book = PriceBook(overrides)
    # 600k fresh input at $0.5, 300k cache reads at $0.05, 100k cache writes at $1, 10k output at $4
    tokens = Tokens(input=1_000_000, output=10_000, cache_read=300_000, cache_write=100_000)
    assert book.cost("gemini", "gemini-2.5-flash", tokens) == Decimal("0.455")
    assert book.source("gemini", "gemini-2.5-flash") == "config"
    # no cache rates: cached tokens cost the input rate
    assert book.cost("openai_compatible", "qwen2.5-coder:7b", tokens) == Decimal("1.02")
    assert overrides["qwen2.5-coder:7b"] == PriceOverride(Decimal(1), Decimal(2))


def test_bad_overrides_are_left_out_with_a_message_naming_model_and_key() -> None:
    overrides, problems = parse_overrides(
        {
            "ok": {"input": 1, "output": 1},
            "a": {"input": 1},
            "b": {"input": -1, "output": 1},
            "c": {"input": 1, "output": 1, "cached": 1},
            "d": "free",
            "e": {"input": True, "output": 1},
        }
    )
    assert list(overrides) == ["ok"]
    assert problems == [
        "usage.prices.'a': missing output (dollars per million tokens)",
        "usage.prices.'b'.input: expected dollars per million tokens (>= 0), got -1",
        "usage.prices.'c': unknown key(s) cached; allowed: input, output, cache_read, cache_write",
        "usage.prices.'d': expected a table with input and output, got str",
        "usage.prices.'e'.input: expected dollars per million tokens (>= 0), got True",
    ]
    assert parse_overrides([]) == ({}, ["usage.prices: expected a table of models, got list"])


def test_the_guide_maps_every_provider() -> None:
    (rows,) = markdown_tables(GUIDE, "## Where prices come from")
    documented = {row[0]: row[1] for row in rows}
    assert set(documented) == set(PROVIDER_NAMES) == set(PROVIDER_IDS) | FREE_PROVIDERS
    for provider, provider_id in PROVIDER_IDS.items():
        if provider_id is not None:
            assert documented[provider].split("`")[0] == provider_id, provider  # cells lose their outer `
