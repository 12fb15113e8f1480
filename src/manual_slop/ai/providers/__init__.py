"""The providers, one module each, loaded by name on first use.

| name                | module              | transport                                  |
|---------------------|---------------------|--------------------------------------------|
| ``local``           | ``local``           | xllamacpp in-process (GGUF), XML tools      |
| ``gemini``          | ``gemini``          | google-genai SDK                            |
| ``anthropic``       | ``anthropic``       | anthropic SDK                               |
| ``deepseek``        | ``openai_compat``   | requests, OpenAI-compatible                 |
| ``minimax``         | ``openai_compat``   | requests, OpenAI-compatible                 |
| ``openai_compatible`` | ``openai_compat`` | requests, OpenAI-compatible                 |
| ``gemini_cli``      | ``gemini_cli``      | the real ``gemini`` CLI (subprocess), XML   |
|                     |                     | tools; its own tools approved in the clutch |

:func:`provider_class` imports only the module of the provider asked for; the SDKs
themselves are imported when the provider makes its first call.
"""

from __future__ import annotations

import importlib

from manual_slop.ai.errors import ConfigurationError
from manual_slop.ai.providers.base import DEFAULT_TIMEOUT_S, Provider, ProviderConfig, ProviderHooks
from manual_slop.config import PROVIDER_NAMES

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "PROVIDER_CLASSES",
    "Provider",
    "ProviderConfig",
    "ProviderHooks",
    "provider_class",
]

PROVIDER_CLASSES: dict[str, str] = {
    "local": "manual_slop.ai.providers.local:LocalProvider",
    "gemini": "manual_slop.ai.providers.gemini:GeminiProvider",
    "anthropic": "manual_slop.ai.providers.anthropic:AnthropicProvider",
    "deepseek": "manual_slop.ai.providers.openai_compat:DeepSeekProvider",
    "minimax": "manual_slop.ai.providers.openai_compat:MiniMaxProvider",
    "gemini_cli": "manual_slop.ai.providers.gemini_cli:GeminiCliProvider",
    "openai_compatible": "manual_slop.ai.providers.openai_compat:OpenAICompatibleProvider",
}
assert set(PROVIDER_CLASSES) == set(PROVIDER_NAMES), "every configurable provider needs a class"


_loaded: dict[str, type[Provider]] = {}


def provider_class(name: str) -> type[Provider]:
    """The class of provider ``name`` (ConfigurationError naming the known ones otherwise)."""
    loaded = _loaded.get(name)
    if loaded is not None:
        return loaded
    target = PROVIDER_CLASSES.get(name)
    if target is None:
        raise ConfigurationError(f"unknown provider {name!r}; known: {', '.join(PROVIDER_NAMES)}")
    module, _, attr = target.partition(":")
    cls = _loaded[name] = getattr(importlib.import_module(module), attr)
    return cls
