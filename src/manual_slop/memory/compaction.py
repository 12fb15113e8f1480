"""Working memory and compaction: older rounds become one summary; the user's words stay.

Each request has a token budget split between working memory (the live conversation),
episodic recall and long-term memory (notes, profile, retrieved passages): by default
50/30/20 (``memory.split``). When the conversation passes :data:`TRIGGER` (70 %) of the
working share, every exchange but the newest ``history_window`` ones is summarized by a
sub-call and replaced by two turns: the user's messages of those exchanges, verbatim, and
the summary. Tool results of the summarized rounds are dropped (the summary says what they
showed). The summary is stored as a ``summary`` event, so a restart rebuilds the same
conversation and recall finds it. This replaces the silent trimming of older exchanges.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from manual_slop.ai.messages import Message, Role, Usage
from manual_slop.ai.transcript import Conversation, estimate_tokens

__all__ = [
    "EARLIER_HEADER",
    "SUMMARY_HEADER",
    "SUMMARY_PROMPT",
    "TRIGGER",
    "Compactor",
    "MemoryBudget",
    "fold",
    "summary_head",
]

TRIGGER = 0.70
EARLIER_HEADER = "[Earlier in this conversation I wrote, verbatim:]"
SUMMARY_HEADER = "[Summary of the earlier rounds of this conversation:]"
USER_SEPARATOR = "\n\n---\n\n"
SUMMARY_PROMPT = (
    "You compact a conversation between a user and a coding assistant so it can continue in less "
    "space. Write a dense summary of the rounds below: decisions, file paths, what the tools showed, "
    "open questions and unresolved problems. Do not repeat the user's messages (they are kept "
    "verbatim). Answer with the summary only."
)
MAX_SUMMARY_INPUT_CHARS = 200_000

# summarize(instructions, text) -> (summary, usage of the sub-call)
Summarize = Callable[[str, str], tuple[str, Usage]]
Log = Callable[[str, str, dict[str, Any]], Any]


@dataclass(frozen=True, slots=True)
class MemoryBudget:
    """A request's memory tokens and their split (fractions that sum to 1)."""

    total: int
    working: float = 0.5
    episodic: float = 0.3
    long_term: float = 0.2

    @classmethod
    def split_of(cls, total: int, split: tuple[float, float, float]) -> MemoryBudget:
        working, episodic, long_term = split
        whole = working + episodic + long_term
        if min(split) < 0 or whole <= 0:
            raise ValueError(f"memory.split: three non-negative shares, got {split}")
        return cls(max(0, int(total)), working / whole, episodic / whole, long_term / whole)

    @property
    def working_tokens(self) -> int:
        return int(self.total * self.working)

    @property
    def episodic_tokens(self) -> int:
        return int(self.total * self.episodic)

    @property
    def long_term_tokens(self) -> int:
        return int(self.total * self.long_term)


def summary_head(users: list[str], summary: str) -> list[Message]:
    """The two turns that stand for the summarized rounds: the user's words, then the summary."""
    return [
        Message.user(EARLIER_HEADER + "\n\n" + USER_SEPARATOR.join(users)),
        Message.assistant(f"{SUMMARY_HEADER}\n{summary}"),
    ]


def fold(conversation: Conversation, count: int, summary: str) -> list[Message]:
    """Replace the first ``count`` messages by the user's words (verbatim) and ``summary``;
    returns the messages replaced. A summary folded earlier is folded again (its words kept)."""
    replaced = conversation.messages[:count]
    conversation.messages = (
        summary_head(_verbatim_users(replaced), summary.strip()) + conversation.messages[count:]
    )
    return replaced


def _verbatim_users(messages: list[Message]) -> list[str]:
    users: list[str] = []
    for message in messages:
        if message.role is not Role.USER:
            continue
        if message.text.startswith(EARLIER_HEADER):
            body = message.text[len(EARLIER_HEADER) :].lstrip("\n")
            users.extend(part for part in body.split(USER_SEPARATOR) if part)
        else:
            users.append(message.text)
    return users


class Compactor:
    """Decides when a conversation is compacted and does it (one sub-call)."""

    def __init__(
        self,
        summarize: Summarize,
        *,
        budget_tokens: int = 0,
        split: tuple[float, float, float] = (0.5, 0.3, 0.2),
        history_window: int = 1,
    ) -> None:
        self._summarize = summarize
        self.budget_tokens = budget_tokens  # 0: what the provider has room for
        self.split = split
        self.history_window = max(1, int(history_window))

    def budget(self, provider_target: int, fixed_tokens: int) -> MemoryBudget:
        total = self.budget_tokens or max(1_000, provider_target - fixed_tokens)
        return MemoryBudget.split_of(total, self.split)

    def maybe_compact(
        self, conversation: Conversation, provider_target: int, fixed_tokens: int, log: Log
    ) -> bool:
        """Compact when the working part is over 70 % of its share; True when it did."""
        working = self.budget(provider_target, fixed_tokens).working_tokens
        used = estimate_tokens(conversation.chars())
        if used <= working * TRIGGER:
            return False
        groups = conversation.exchanges()
        older = len(groups) - self.history_window
        if older <= 0 or (
            older == 1 and groups[0][0].text.startswith(EARLIER_HEADER) and len(groups[0]) <= 2
        ):
            return False  # nothing but the rounds kept verbatim (or an already folded summary)
        count = sum(len(group) for group in groups[:older])
        text = render_rounds(conversation.messages[:count])
        try:
            summary, usage = self._summarize(SUMMARY_PROMPT, text)
        except Exception as exc:  # the summary is an aid: the request goes on with the full history
            log("OUT", "history", {"compaction_failed": f"{type(exc).__name__}: {exc}"})
            return False
        if not summary.strip():
            log("OUT", "history", {"compaction_failed": "the summary sub-call gave an empty answer"})
            return False
        replaced = fold(conversation, count, summary)
        if conversation.journal is not None:
            conversation.journal.summarized(replaced, summary.strip(), _verbatim_users(replaced), usage)
        log(
            "OUT",
            "history",
            {
                "compacted_messages": len(replaced),
                "tokens_before": used,
                "tokens_after": estimate_tokens(conversation.chars()),
                "working_budget": working,
            },
        )
        return True


def render_rounds(messages: list[Message]) -> str:
    """The rounds as the summarizer reads them: words, calls and the start of each result."""
    lines: list[str] = []
    for message in messages:
        if message.role is Role.USER:
            lines.append(f"USER: {message.text}")
        elif message.role is Role.ASSISTANT:
            if message.text.strip():
                lines.append(f"ASSISTANT: {message.text}")
            lines.extend(f"ASSISTANT CALLED {c.name}({_short(str(c.args))})" for c in message.tool_calls)
        else:
            lines.extend(
                f"RESULT OF {o.name} ({o.status}): {_short(o.content, 600)}" for o in message.tool_outputs
            )
    text = "\n\n".join(lines)
    if len(text) > MAX_SUMMARY_INPUT_CHARS:  # keep both ends: the start sets the task, the end the state
        half = MAX_SUMMARY_INPUT_CHARS // 2
        text = f"{text[:half]}\n\n[... {len(text) - 2 * half:,} characters left out ...]\n\n{text[-half:]}"
    return text


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
