"""How many tokens each model holds: the context windows the app fits its requests into.

A provider's window is, in order: ``providers.<name>.context_window`` when set (> 0); what
the provider itself knows (the local model: the ``n_ctx`` it was loaded with; an
OpenAI-compatible server that reports it in its model list); else this table, matched by
the longest model-name prefix. The table lists the published windows of the models the
app names by default; an unknown model of a hosted provider gets its provider's row with
an empty prefix, and an unknown OpenAI-compatible server a conservative 8,192.

:class:`RequestBudget` is what a send asks before it compiles its context: the window,
what the rest of the request takes (instructions, tool declarations, discussion, the
message, room for the answer) and how to count tokens on this model.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "CONTEXT_WINDOWS",
    "SAFETY_MARGIN",
    "RequestBudget",
    "SizedModel",
    "budget_for",
    "shrink_markdown",
    "table_window",
]

# (provider, model-name prefix, tokens); the longest matching prefix wins.
CONTEXT_WINDOWS: tuple[tuple[str, str, int], ...] = (
    ("anthropic", "", 200_000),
    ("gemini", "", 1_048_576),
    ("gemini", "gemini-1.5-pro", 2_097_152),
    ("gemini_cli", "", 1_048_576),
    ("deepseek", "", 128_000),
    ("minimax", "", 204_800),
    ("minimax", "MiniMax-Text-01", 1_000_192),
    ("openai_compatible", "", 8_192),
    ("local", "", 8_192),
)
SAFETY_MARGIN = 0.03  # of the window, for chat-template tokens and counting differences
TEMPLATE_TOKENS = 8  # per message: the chat template's role markers


def table_window(provider: str, model: str) -> int:
    """The table's window for ``model`` of ``provider`` (8,192 when the provider is unknown)."""
    best, best_length = 8_192, -1
    for name, prefix, tokens in CONTEXT_WINDOWS:
        if name == provider and model.startswith(prefix) and len(prefix) > best_length:
            best, best_length = tokens, len(prefix)
    return best


class SizedModel(Protocol):
    """What a budget needs from a provider (:class:`~manual_slop.ai.providers.base.Provider`
    has it; the providers import this module for :func:`table_window`, so not the reverse)."""

    @property
    def name(self) -> str: ...

    @property
    def exact_count(self) -> bool: ...  # True: count_tokens is the model's own tokenizer

    def count_tokens(self, text: str) -> int: ...

    def answer_tokens(self) -> int: ...

    def context_window(self) -> int: ...

    def answering_model(self) -> str: ...


@dataclass(frozen=True, slots=True)
class RequestBudget:
    """The room a request's context has on the model that will answer it."""

    provider: str
    model: str
    window: int  # tokens the model holds
    reserved: int  # tokens the rest of the request takes, the answer's room included
    count: Callable[[str], int]  # tokens of a text on this model (its tokenizer, or an estimate)
    exact: bool = False  # True when ``count`` is the model's own tokenizer

    @property
    def available(self) -> int:
        """Tokens left for the context (negative when the rest alone does not fit)."""
        return self.window - self.reserved - int(self.window * SAFETY_MARGIN)

    def describe(self) -> str:
        return f"{self.provider} / {self.model} ({self.window:,} tokens)"


def budget_for(
    provider: SizedModel,
    *,
    instructions: str,
    tools: str,
    message: str,
    history: str,
    image_tokens: int = 0,
) -> RequestBudget:
    """The room the context has on ``provider`` for a request made of ``instructions``, the
    tool declarations as the model reads them (``tools``), the first ``message`` and the
    ``history`` already in the provider's conversation, and the images it takes (``image_tokens``,
    their vendor's per-image estimate: :mod:`manual_slop.ai.images`).

    A long history is given at most half of what is left (shortening the rest is the tool
    loop's: it summarizes older exchanges, :mod:`manual_slop.memory.compaction`); the files
    the user chose stay.
    """
    count = provider.count_tokens
    fixed = count("\n\n".join(part for part in (instructions, tools) if part)) + count(message)
    fixed += TEMPLATE_TOKENS * 3 + image_tokens
    answer = provider.answer_tokens()
    window = provider.context_window()
    past = count(history) if history else 0
    reserved = fixed + answer + min(past, max(0, (window - fixed - answer) // 2))
    return RequestBudget(
        provider.name, provider.answering_model(), window, reserved, count, provider.exact_count
    )


_BLOCK = re.compile(r"^### ", re.MULTILINE)
LEFT_OUT = "(left out to fit the model's window)\n\n"


def shrink_markdown(markdown: str, budget: RequestBudget, rounds: int = 3) -> tuple[str, list[str]]:
    """``markdown`` cut to the room of ``budget``: the bodies of its largest ``### `` blocks are
    left out (their headings stay) until it fits; returns the text and the headings cut.

    The safety net for a context compiled without knowing the model (MMA tiers, one-shot
    helpers); Gen + Send fits its context properly (:mod:`manual_slop.context.fit`).
    """
    room = budget.available
    tokens = budget.count(markdown)
    cut: list[str] = []
    for _ in range(rounds):
        if tokens <= room:
            break
        starts = [m.start() for m in _BLOCK.finditer(markdown)]
        if not starts:
            break
        head, blocks = (
            markdown[: starts[0]],
            [markdown[a:b] for a, b in zip(starts, [*starts[1:], len(markdown)], strict=True)],
        )
        chars_per_token = len(markdown) / max(tokens, 1)
        excess = (tokens - room) * chars_per_token * 1.05
        for index in sorted(range(len(blocks)), key=lambda i: -len(blocks[i])):
            if excess <= 0:
                break
            heading = blocks[index].split("\n", 1)[0]
            if blocks[index].endswith(LEFT_OUT):
                continue
            shortened = f"{heading}\n\n{LEFT_OUT}"
            excess -= len(blocks[index]) - len(shortened)
            blocks[index] = shortened
            cut.append(heading.removeprefix("### "))
        markdown = head + "".join(blocks)
        tokens = budget.count(markdown)
    return markdown, cut
