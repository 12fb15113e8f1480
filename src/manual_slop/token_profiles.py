"""Token profiles: the answer length (``max_tokens``) of each kind of request.

Every request belongs to a phase — ``planner``, ``execution``, ``merge``, ``judge``, ``chat`` or
``summary`` — and is sent with the active profile's limit for that phase, never more than
``ai.max_tokens`` (the ceiling the user set for the model). ``balanced`` carries SelfAI's
defaults (planner 768, execution 512, merge 2048, chat 1024), ``extreme`` gives every phase
room for long answers, and ``custom`` holds the user's own numbers (``/tokens <phase> <n>``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_LIMIT",
    "MIN_LIMIT",
    "PHASES",
    "PROFILES",
    "TokenProfileError",
    "TokenProfiles",
    "parse_tokens_command",
]

PHASES: tuple[str, ...] = ("planner", "execution", "merge", "judge", "chat", "summary")
PROFILES: tuple[str, ...] = ("balanced", "extreme", "custom")
MIN_LIMIT = 16
MAX_LIMIT = 1_000_000

BALANCED: dict[str, int] = {
    "planner": 768,
    "execution": 512,
    "merge": 2048,
    "judge": 1024,
    "chat": 1024,
    "summary": 1024,
}
EXTREME: dict[str, int] = {
    "planner": 8192,
    "execution": 16384,
    "merge": 16384,
    "judge": 4096,
    "chat": 16384,
    "summary": 8192,
}


class TokenProfileError(ValueError):
    """A profile, phase or limit that does not exist; the message names it."""


@dataclass(frozen=True, slots=True)
class TokenProfiles:
    """The active profile's name and the custom profile's limits."""

    active: str = "balanced"
    custom: Mapping[str, int] | None = None

    def limits(self, profile: str | None = None) -> dict[str, int]:
        name = profile or self.active
        if name == "balanced":
            return dict(BALANCED)
        if name == "extreme":
            return dict(EXTREME)
        if name == "custom":
            return {**BALANCED, **(self.custom or {})}
        raise TokenProfileError(f"token profile {name!r} is not one of {', '.join(PROFILES)}")

    def limit(self, phase: str, ceiling: int = MAX_LIMIT) -> int:
        """``max_tokens`` of a request of ``phase`` (at most ``ceiling``, the model's cap)."""
        if phase not in PHASES:
            raise TokenProfileError(f"phase {phase!r} is not one of {', '.join(PHASES)}")
        return max(1, min(int(ceiling), self.limits()[phase]))

    def to_dict(self) -> dict[str, Any]:
        return {"active": self.active, "limits": self.limits(), "custom": self.limits("custom")}

    @classmethod
    def from_config(cls, active: object, custom: object) -> TokenProfiles:
        """From ``tokens.profile`` and ``tokens.custom`` (already type-checked by the schema)."""
        name = str(active or "balanced")
        if name not in PROFILES:
            raise TokenProfileError(f"tokens.profile: {name!r} is not one of {', '.join(PROFILES)}")
        return cls(name, check_limits(custom if isinstance(custom, Mapping) else {}))


def check_limits(values: Mapping[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for phase, value in values.items():
        if phase not in PHASES:
            raise TokenProfileError(f"phase {phase!r} is not one of {', '.join(PHASES)}")
        if isinstance(value, bool) or not isinstance(value, int) or not MIN_LIMIT <= value <= MAX_LIMIT:
            raise TokenProfileError(
                f"{phase}: a limit is a whole number of tokens from {MIN_LIMIT} to {MAX_LIMIT:,}, "
                f"got {value!r}"
            )
        out[phase] = value
    return out


def parse_tokens_command(args: str, current: TokenProfiles) -> TokenProfiles:
    """``/tokens`` arguments: ``''`` (show), ``<profile>``, or ``<phase> <n>`` (sets the custom
    profile's limit and makes it active). TokenProfileError names what is wrong."""
    words = args.split()
    if not words:
        return current
    if len(words) == 1:
        if words[0] not in PROFILES:
            raise TokenProfileError(
                f"/tokens {words[0]}: expected a profile ({', '.join(PROFILES)}) or '<phase> <tokens>'"
            )
        return TokenProfiles(words[0], current.custom)
    if len(words) == 2:
        phase, raw = words
        if phase not in PHASES:
            raise TokenProfileError(f"/tokens: phase {phase!r} is not one of {', '.join(PHASES)}")
        if not (raw.isascii() and raw.isdigit()) or len(raw) > 9:
            raise TokenProfileError(f"/tokens {phase}: {raw!r} is not a whole number of tokens")
        custom = {**current.limits("custom"), **check_limits({phase: int(raw)})}
        return TokenProfiles("custom", custom)
    raise TokenProfileError("/tokens takes no arguments, a profile name, or '<phase> <tokens>'")


def describe(profiles: TokenProfiles, ceiling: int) -> str:
    """What ``/tokens`` shows: the active profile and each phase's limit as sent."""
    lines = [f"Token profile: {profiles.active} (ai.max_tokens caps every phase at {ceiling:,})"]
    lines += [f"- {phase}: {profiles.limit(phase, ceiling):,}" for phase in PHASES]
    return "\n".join(lines)
