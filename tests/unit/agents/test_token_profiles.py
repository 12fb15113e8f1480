"""Token profiles: limits per phase, the ai.max_tokens ceiling, and the /tokens arguments."""

from __future__ import annotations

import pytest

from manual_slop.token_profiles import (
    BALANCED,
    PHASES,
    TokenProfileError,
    TokenProfiles,
    describe,
    parse_tokens_command,
)


def test_balanced_carries_the_seed_defaults() -> None:
    profiles = TokenProfiles()
    limits = (profiles.limit("planner"), profiles.limit("execution"), profiles.limit("merge"))
    assert limits == (768, 512, 2048)
    assert profiles.limit("chat") == 1024


def test_the_ceiling_caps_every_phase() -> None:
    extreme = TokenProfiles("extreme")
    assert extreme.limit("merge", ceiling=4000) == 4000
    assert extreme.limit("merge") > BALANCED["merge"]


def test_tokens_command_sets_custom_limits_and_switches_profiles() -> None:
    custom = parse_tokens_command("planner 900", TokenProfiles())
    assert custom.active == "custom" and custom.limit("planner") == 900
    assert custom.limit("merge") == BALANCED["merge"]  # the rest as balanced
    again = parse_tokens_command("merge 3000", custom)
    assert (again.limit("planner"), again.limit("merge")) == (900, 3000)  # earlier custom limits kept
    assert parse_tokens_command("balanced", again).active == "balanced"
    assert parse_tokens_command("", again) is again
    assert parse_tokens_command("custom", TokenProfiles("balanced", {"chat": 64})).limit("chat") == 64


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ("huge", "expected a profile"),
        ("planner lots", "not a whole number"),
        ("planner 5", "from 16"),
        ("planner \uff14\uff15\uff16", "not a whole number"),  # full-width digits
        ("nap 100", "phase 'nap'"),
        ("a b c", "takes no arguments"),
    ],
)
def test_bad_tokens_arguments_are_named(args: str, message: str) -> None:
    with pytest.raises(TokenProfileError, match=message):
        parse_tokens_command(args, TokenProfiles())


def test_describe_lists_every_phase_as_sent() -> None:
    text = describe(TokenProfiles(), ceiling=600)
    assert "Token profile: balanced" in text
    for phase in PHASES:
        assert f"- {phase}: " in text
    assert "- merge: 600" in text and "- planner: 600" in text and "- execution: 512" in text
