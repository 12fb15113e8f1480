"""The AI client's settings and its answer type.

:class:`ClientSettings` holds what the next send uses and validates every change
(:meth:`ClientSettings.change`); the client copies it at the start of each send.
:class:`Answer` is a send's text that also says which provider and model gave it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from manual_slop.ai.errors import ConfigurationError
from manual_slop.ai.providers import ProviderConfig
from manual_slop.ai.providers.base import DEFAULT_TIMEOUT_S
from manual_slop.config import DEFAULT_MODELS, PROVIDER_NAMES, Secret

__all__ = ["NUMBER_BOUNDS", "Answer", "ClientSettings", "as_secret", "provider_name"]

# the numeric settings: name -> (lowest, highest, whole number)
NUMBER_BOUNDS: dict[str, tuple[float, float, bool]] = {
    "temperature": (0.0, 2.0, False),
    "top_p": (0.0, 1.0, False),
    "max_tokens": (1, 1_000_000, True),
    "history_trunc_limit": (0, 10_000_000, True),
    "timeout_s": (0.001, 86_400, False),
    "max_prompt_tokens": (0, 10_000_000, True),
    "history_window": (1, 1000, True),
    "memory_budget_tokens": (0, 10_000_000, True),
    "summary_max_tokens": (0, 1_000_000, True),
    "guard_repeat_warn": (0, 1000, True),
    "guard_repeat_refuse": (0, 1000, True),
}


@dataclass(slots=True)
class ClientSettings:
    """What the next send uses; copied at the start of each send."""

    provider: str = "local"
    models: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_MODELS))
    base_urls: dict[str, str] = field(default_factory=dict)
    keys: dict[str, Secret | None] = field(default_factory=dict)
    options: dict[str, dict[str, Any]] = field(default_factory=dict)  # model_path, binary, n_ctx ...
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 8192
    history_trunc_limit: int = 8000
    system_prompt: str = ""
    fallback: tuple[str, ...] = ()
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_prompt_tokens: int = 0
    history_window: int = 1  # newest exchanges never summarized
    memory_budget_tokens: int = 0  # 0: what the provider has room for after system, context and tools
    memory_split: tuple[float, float, float] = (0.5, 0.3, 0.2)  # working, episodic, long-term
    summary_max_tokens: int = 0  # answer room of summaries and other sub-calls (0: max_tokens)
    guard_repeat_warn: int = 2  # the identical tool call that warns (loop_guard; 0: never)
    guard_repeat_refuse: int = 3  # the identical tool call that is refused (0: never)

    def summary_limit(self) -> int:
        """``max_tokens`` of a summary-phase call (compaction, file summaries, compression)."""
        return min(self.max_tokens, self.summary_max_tokens) if self.summary_max_tokens else self.max_tokens

    def change(
        self,
        *,
        provider: str | None = None,
        base_url: str | None = None,
        api_key: Secret | str | None = None,
        system_prompt: str | None = None,
        fallback: Sequence[str] | None = None,
        memory_split: Sequence[float] | None = None,
        **values: Any,
    ) -> None:
        """Validate and apply changes (``None`` leaves a setting as it is). The numbers
        (:data:`NUMBER_BOUNDS`: ``temperature``, ``max_tokens`` ...) must lie within their bounds;
        ``base_url``, ``api_key`` and every other keyword (a provider option: ``model_path``,
        ``n_ctx`` ...) apply to ``provider`` (default: the active one)."""
        target = provider_name(provider or self.provider)
        for name, (low, high, whole) in NUMBER_BOUNDS.items():
            value = values.pop(name, None)
            if value is not None:
                number = _number(name, value, low, high)
                setattr(self, name, int(number) if whole else number)
        if base_url is not None:
            self.base_urls[target] = base_url
        if api_key is not None:
            self.keys[target] = as_secret(api_key)
        if system_prompt is not None:
            self.system_prompt = system_prompt
        if fallback is not None:
            self.fallback = tuple(provider_name(n) for n in fallback)
        if memory_split is not None:
            self.memory_split = _split(memory_split)
        if values:
            self.options.setdefault(target, {}).update(values)

    def copy(self) -> ClientSettings:
        """Scalars shared, containers copied one level deep (``options`` two). Field by field:
        every send copies, and ``dataclasses.replace`` (``__init__`` again) cost twice as much."""
        new = object.__new__(ClientSettings)
        for name in _FIELD_NAMES:
            object.__setattr__(new, name, getattr(self, name))
        new.models = dict(self.models)
        new.base_urls = dict(self.base_urls)
        new.keys = dict(self.keys)
        new.options = {k: dict(v) for k, v in self.options.items()}
        return new

    def config_for(self, name: str) -> ProviderConfig:
        return ProviderConfig(
            name=name,
            model=self.models.get(name) or DEFAULT_MODELS.get(name, ""),
            base_url=self.base_urls.get(name, ""),
            api_key=self.keys.get(name),
            temperature=self.temperature,
            top_p=self.top_p,
            max_tokens=self.max_tokens,
            timeout_s=self.timeout_s,
            max_prompt_tokens=self.max_prompt_tokens,
            options=dict(self.options.get(name, {})),
        )


_FIELD_NAMES = tuple(f.name for f in dataclasses.fields(ClientSettings))


class Answer(str):
    """A send's final text that also says who answered it: the provider and model that did,
    and ``fallback`` — why not the active provider (``''`` when it was the active one)."""

    provider: str
    model: str
    fallback: str
    limit: str  # the loop guard limit that forced the answer ('round_limit' ...; '' when none did)

    def __new__(
        cls, text: str, provider: str = "", model: str = "", fallback: str = "", limit: str = ""
    ) -> Answer:
        answer = super().__new__(cls, text)
        answer.provider, answer.model, answer.fallback, answer.limit = provider, model, fallback, limit
        return answer

    def __getnewargs__(self) -> tuple[str, str, str, str, str]:  # copies and pickles keep who answered
        return (str(self), self.provider, self.model, self.fallback, self.limit)


def provider_name(name: str) -> str:
    """``name`` normalized; ConfigurationError naming the known providers when it is none."""
    normalized = str(name).strip().lower()
    if normalized not in PROVIDER_NAMES:
        raise ConfigurationError(f"unknown provider {name!r}; known: {', '.join(PROVIDER_NAMES)}")
    return normalized


def as_secret(value: Any) -> Secret | None:
    if isinstance(value, Secret):
        return value or None
    return Secret(str(value)) if value else None


def _number(name: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise ConfigurationError(f"{name}: expected a number between {low:g} and {high:g}, got {value!r}")
    return float(value)


def _split(value: Sequence[float]) -> tuple[float, float, float]:
    parts = tuple(float(v) for v in value) if isinstance(value, list | tuple) else ()
    if len(parts) != 3 or min(parts) < 0 or sum(parts) <= 0:
        raise ConfigurationError(
            f"memory_split: three non-negative shares (working, episodic, long-term), got {value!r}"
        )
    return parts  # type: ignore[return-value]
