"""The default Tier 3 model ladders: one per provider, the guide's table is the code's, and
every name is one the package's provider model lists know."""

from __future__ import annotations

import re
from pathlib import Path

from manual_slop.config import DEFAULT_MODELS, PROVIDER_NAMES
from manual_slop.mma.ladder import DEFAULT_TIER3_LADDERS, tier3_ladder
from manual_slop.usage.prices import Tokens, library_cost

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guide_mma.md"


def documented_ladders() -> dict[str, tuple[str, ...]]:
    section = GUIDE.read_text(encoding="utf-8").split("## Model ladder\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| (.+) \|$", section, re.MULTILINE)
    return {provider: tuple(re.findall(r"`([^`]+)`", cells)) for provider, cells in rows}


def test_the_guide_table_is_the_code_and_covers_every_provider() -> None:
    assert documented_ladders() == DEFAULT_TIER3_LADDERS
    assert tuple(DEFAULT_TIER3_LADDERS) == PROVIDER_NAMES


def test_ladder_names_are_models_the_package_knows() -> None:
    for provider, ladder in DEFAULT_TIER3_LADDERS.items():
        assert len(ladder) <= 3  # the conductor uses rungs 0..2
        if ladder:  # each provider's default model is on its own ladder
            assert DEFAULT_MODELS[provider] in ladder, provider
        for model in ladder:  # a real model of its provider: genai-prices has its price
            priced = library_cost(provider, model, Tokens(input=1_000, output=1_000))
            assert model == DEFAULT_MODELS[provider] or priced is not None, (provider, model)


def test_the_setting_wins_and_an_unknown_provider_uses_the_active_model() -> None:
    assert tier3_ladder([], "gemini") == ("gemini-2.5-flash-lite", "gemini-2.5-flash", "gemini-2.5-pro")
    assert tier3_ladder(["my-model"], "gemini") == ("my-model",)
    assert tier3_ladder((), "openai_compatible") == () and tier3_ladder((), "nobody") == ()


def test_the_field_shows_the_ladder_a_run_would_use(make_controller) -> None:
    ctrl = make_controller()
    ctrl.state.current_provider = "anthropic"
    assert ctrl.fields.get("mma_tier3_ladder") == ["claude-haiku-4-5", DEFAULT_MODELS["anthropic"]]
    ctrl.fields.set("mma_tier3_models", ["claude-sonnet-4-6"])
    assert ctrl.fields.get("mma_tier3_ladder") == ["claude-sonnet-4-6"]
