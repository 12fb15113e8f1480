"""Context windows, the room a request leaves for its context, and the local model's answer bounds."""

from __future__ import annotations

import pytest

from manual_slop.ai.providers import ProviderConfig, provider_class
from manual_slop.ai.providers.local import LOOP_MARK, LocalProvider, _one_copy, repeated_tail
from manual_slop.ai.windows import SAFETY_MARGIN, TEMPLATE_TOKENS, budget_for, table_window
from manual_slop.ai.xml_protocol import protocol_prompt
from manual_slop.config import DEFAULT_MODELS
from manual_slop.tools.registry import default_registry


def provider(name: str, model: str | None = None, max_tokens: int = 8192, own_limit: int = 0, **options):
    """A provider object (no I/O); ``own_limit`` is the provider's own max_tokens option."""
    options = {**options, "max_tokens": own_limit} if own_limit else options
    config = ProviderConfig(name, model or DEFAULT_MODELS[name], max_tokens=max_tokens, options=options)
    return provider_class(name)(config)


def test_the_table_picks_the_longest_matching_model_prefix() -> None:
    assert table_window("anthropic", "claude-sonnet-4-6") == 200_000
    assert table_window("gemini", "gemini-2.5-flash") == 1_048_576
    assert table_window("gemini", "gemini-1.5-pro-002") == 2_097_152
    assert table_window("minimax", "MiniMax-Text-01") == 1_000_192
    assert table_window("openai_compatible", "anything") == 8_192
    assert table_window("no_such_provider", "x") == 8_192


def test_a_configured_window_wins_over_what_the_provider_knows_and_the_table() -> None:
    assert provider("anthropic").context_window() == 200_000
    assert provider("anthropic", context_window=50_000).context_window() == 50_000
    local = provider("local")
    assert local.context_window() == 8_192 == local.known_window()  # its n_ctx
    assert provider("local", context_window=4_096).context_window() == 4_096


def test_the_answers_room_is_at_most_a_quarter_of_the_window() -> None:
    assert provider("anthropic", max_tokens=8192).answer_tokens() == 8192
    assert provider("openai_compatible", "m", max_tokens=8192, context_window=8192).answer_tokens() == 2048
    assert provider("anthropic", max_tokens=100, context_window=8192).answer_tokens() == 100


def test_the_local_answer_limit_is_the_smallest_of_its_own_the_apps_and_half_the_window() -> None:
    assert provider("local").answer_tokens() == 512  # the default of providers.local.max_tokens
    assert provider("local", max_tokens=8192, own_limit=64).answer_tokens() == 64
    assert provider("local", max_tokens=32).answer_tokens() == 32  # ai.max_tokens smaller
    assert provider("local", own_limit=100_000).answer_tokens() == 4_096  # n_ctx // 2


def test_budget_for_reserves_the_rest_of_the_request_and_caps_a_long_history() -> None:
    anthropic = provider("anthropic", max_tokens=1_000, context_window=20_000)
    count = anthropic.count_tokens
    short = budget_for(anthropic, instructions="be brief", tools="", message="hi", history="")
    fixed = count("be brief") + count("hi") + 3 * TEMPLATE_TOKENS
    assert short.reserved == fixed + 1_000
    assert short.available == 20_000 - short.reserved - int(20_000 * SAFETY_MARGIN)
    assert short.window == 20_000 and short.model == "claude-sonnet-4-6" and not short.exact

    history = "old exchange " * 20_000  # far more than the window
    long = budget_for(anthropic, instructions="be brief", tools="", message="hi", history=history)
    assert long.reserved == fixed + 1_000 + (20_000 - fixed - 1_000) // 2  # half of what was left
    assert long.available > 0

    tools = anthropic.tool_text(default_registry().declarations("openai"))
    with_tools = budget_for(anthropic, instructions="be brief", tools=tools, message="hi", history="")
    assert with_tools.reserved > short.reserved + count(tools) - 4


def test_a_small_window_gets_the_compact_tool_list() -> None:
    declarations = default_registry().declarations("openai")
    full, compact = protocol_prompt(declarations), protocol_prompt(declarations, compact=True)
    assert len(compact) < 0.45 * len(full)
    for declaration in declarations:
        assert f"- {declaration['function']['name']}(" in compact
    assert "- edit_file(path, old_string, new_string, replace_all: boolean?):" in compact
    assert "- get_git_diff(path?, staged: boolean?):" in compact
    assert LocalProvider(ProviderConfig("local", "x")).tool_text(declarations) == compact
    assert provider("local", n_ctx=32_768).tool_text(declarations) == full
    assert provider("openai_compatible", "m").tool_text(declarations).startswith('[{"type":"function"')


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello there. " + "I am a bot. " * 30, "Hello there. I am a bot"),
        ("ok " + "a" * 300, "ok a"),
        # a 600-character paragraph said twice over (the first-run answer on the 135M model)
        ("Intro. " + " ".join(f"This project does thing {n}." for n in range(24)) * 2, "Intro. This project"),
    ],
)
def test_a_repeated_ending_is_found_and_cut_to_one_copy(text: str, expected: str) -> None:
    assert repeated_tail(text) is not None
    cut = _one_copy(text)
    assert cut.startswith(expected) and cut.endswith(LOOP_MARK)
    assert cut.count("I am a bot") <= 1


@pytest.mark.parametrize(
    "text",
    [
        "",
        "short " * 3,
        "a" * 199,  # under the length a loop must have
        "| --- | --- |\n" * 10,  # a table: 140 characters of repetition, not a loop
        " ".join(f"word{n}" for n in range(400)),
        # a long passage quoted twice, with one word changed: not word for word
        "A: " + " ".join(f"step {n}" for n in range(60)) + " B: " + " ".join(f"step {n}" for n in range(59))
        + " end",
    ],
)
def test_ordinary_text_is_not_a_loop(text: str) -> None:
    assert repeated_tail(text) is None


def test_a_context_compiled_without_the_model_is_cut_to_its_room_largest_blocks_first() -> None:
    from manual_slop.ai.windows import LEFT_OUT, RequestBudget, shrink_markdown

    markdown = (
        "## Files\n\n"
        + "### `big.py` (full)\n\n"
        + "x = 1\n" * 2_000
        + "### `mid.py` (full)\n\n"
        + "y = 2\n" * 300
        + "### `small.py` (full)\n\nz = 3\n"
    )
    budget = RequestBudget("local", "m", 4_000, 1_500, lambda text: (len(text) + 2) // 3)
    cut, left_out = shrink_markdown(markdown, budget)
    assert left_out == ["`big.py` (full)"]
    assert budget.count(cut) <= budget.available
    assert f"### `big.py` (full)\n\n{LEFT_OUT}" in cut and "y = 2" in cut and "z = 3" in cut
    roomy = RequestBudget("local", "m", 1_000_000, 0, len)
    assert shrink_markdown(markdown, roomy) == (markdown, [])
