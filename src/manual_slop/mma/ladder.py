"""Default Tier 3 model ladders: which model each attempt of a ticket runs on.

A ticket's first attempt runs on the ladder's first model, each retry one rung higher
(the conductor uses ``ladder[min(retry_count, 2)]``, the last rung when it is shorter).
``[mma] tier3_models`` replaces the ladder; when it is empty the active provider's
ladder below applies. Providers whose models are whatever the user runs (a local
model, any OpenAI-compatible server) have no ladder: every attempt uses the active
model. Names are the ones the providers' model lists in this package use
(``config.DEFAULT_MODELS``, the Gemini CLI's list, the price table).
"""

from __future__ import annotations

from manual_slop.config import DEFAULT_MODELS

__all__ = ["DEFAULT_TIER3_LADDERS", "tier3_ladder"]

_GEMINI = ("gemini-2.5-flash-lite", "gemini-2.5-flash", "gemini-2.5-pro")

# provider -> models by attempt, cheapest first; () = the active model on every attempt
DEFAULT_TIER3_LADDERS: dict[str, tuple[str, ...]] = {
    "local": (),
    "gemini": _GEMINI,
    "anthropic": ("claude-haiku-4-5", DEFAULT_MODELS["anthropic"]),
    "deepseek": ("deepseek-chat", "deepseek-reasoner"),
    "minimax": (DEFAULT_MODELS["minimax"],),
    "gemini_cli": _GEMINI,
    "openai_compatible": (),
}


def tier3_ladder(configured: tuple[str, ...] | list[str], provider: str) -> tuple[str, ...]:
    """The Tier 3 models by attempt: ``[mma] tier3_models`` when set, else the provider's
    default ladder (``()`` means the active model on every attempt)."""
    if configured:
        return tuple(configured)
    return DEFAULT_TIER3_LADDERS.get(provider, ())
