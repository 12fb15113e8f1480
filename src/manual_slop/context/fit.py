"""Fitting a send's context into the window of the model that will answer it.

The AI client says how much room the context has (:class:`~manual_slop.ai.windows.RequestBudget`:
the window minus the instructions, tool declarations, discussion, message and the answer's
room) and how to count tokens on that model. :func:`fit_context` compiles with a files budget
of ``min(project budget, room)``, counts the result with the model's tokenizer (an estimate
where there is none) and, while it is over, compiles again with the files budget scaled by
how far off the estimate was — at most :data:`MAX_ROUNDS` compiles. Under the ``auto``
strategy every compile reduces the largest blocks first (full → skeleton or summary →
outline → name only → omitted; see :mod:`manual_slop.context.aggregate`). Other strategies
are the user's explicit choice and are never reduced: a context that does not fit under them
is refused with what to do.

A file larger than :data:`BYTES_PER_TOKEN` bytes per token of room is never read: no view of
it could be worth reading it whole (a 15 MB file against a 4,000-token room). It is listed
by name and reported as dropped.

What was reduced or left out is returned as a :class:`FitReport`: the request's status, the
Context panel and a notification show it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from manual_slop.context.aggregate import MIN_TOKEN_BUDGET, CompiledContext, ContextRequest, Strategy
from manual_slop.context.errors import ContextTooLarge
from manual_slop.context.fit_report import WHY_FIT, FitReport
from manual_slop.context.items import MAX_FILE_BYTES, FileKind, estimate_tokens

if TYPE_CHECKING:
    from manual_slop.ai.windows import RequestBudget

__all__ = ["BYTES_PER_TOKEN", "MAX_ROUNDS", "READ_FLOOR_BYTES", "FitReport", "fit_context", "read_limit"]

MAX_ROUNDS = 4
BYTES_PER_TOKEN = 16  # four times the densest text: a file above this cannot fit in any view worth it
READ_FLOOR_BYTES = 1024 * 1024  # files up to this are always read (their outline may fit)
MIN_ROOM = 64  # tokens: less room than this for the context is no room at all
_WHY = {"budget": WHY_FIT, "auto": "over full_threshold (auto)", "summarize": "summarize strategy"}


def read_limit(room_tokens: int) -> int:
    """The largest file read for a context of ``room_tokens`` tokens."""
    return max(READ_FLOOR_BYTES, min(MAX_FILE_BYTES, room_tokens * BYTES_PER_TOKEN))


def fit_context(
    request: ContextRequest, budget: RequestBudget, compile_: Callable[[ContextRequest], CompiledContext]
) -> tuple[CompiledContext, FitReport]:
    """Compile ``request`` so that it fits ``budget``; raises :class:`ContextTooLarge` when it cannot."""
    room = budget.available
    if room < MIN_ROOM:
        raise ContextTooLarge(
            f"the request does not fit {budget.describe()}: the instructions, tools, discussion, "
            f"message and the answer's room take {budget.reserved:,} tokens, leaving {max(room, 0):,} "
            "for the files. Compress or trim the discussion, shorten the message, lower the answer "
            "limit (max_tokens), or choose a model with a larger window"
        )
    auto = Strategy(request.strategy) is Strategy.AUTO
    target = min(request.token_budget, room) if auto else request.token_budget
    limit = min(request.read_limit, read_limit(room))
    compiled: CompiledContext | None = None
    tokens = 0
    for rounds in range(1, MAX_ROUNDS + 1):
        attempt = dataclasses.replace(request, token_budget=max(target, MIN_TOKEN_BUDGET), read_limit=limit)
        compiled = compile_(attempt)
        tokens = budget.count(compiled.markdown)
        if tokens <= room:
            return compiled, _report(budget, compiled, tokens, rounds)
        if not auto:
            raise ContextTooLarge(
                f"the context takes {tokens:,} tokens but {budget.describe()} has room for {room:,} "
                f"after the rest of the request; the {request.strategy!r} strategy never shortens files. "
                "Switch the context strategy to 'auto' (it shortens files to fit), remove files, or "
                "choose a model with a larger window"
            )
        if target <= MIN_TOKEN_BUDGET:
            break
        # The files budget is in estimated tokens; scale it by how far the real count was off,
        # after taking out what the files budget does not cover (system prompt, screenshot list).
        estimate = max(1, estimate_tokens(compiled.markdown))
        other = estimate - compiled.files.tokens
        ratio = tokens / estimate
        target = min(target - 1, int((room / ratio - other) * 0.95))
    assert compiled is not None
    raise ContextTooLarge(
        f"the context still takes {tokens:,} tokens with every file reduced to its name, and "
        f"{budget.describe()} has room for {room:,}: remove files or screenshots from the context, "
        "shorten the project's system prompt, or choose a model with a larger window"
    )


def _report(budget: RequestBudget, compiled: CompiledContext, tokens: int, rounds: int) -> FitReport:
    report = FitReport(
        budget.provider,
        budget.model,
        budget.window,
        budget.reserved,
        budget.available,
        tokens,
        budget.exact,
        rounds,
    )
    for item in compiled.files.items:
        if item.effective_mode is None:
            report.dropped.append({"path": item.name, "reason": "omitted to fit the window"})
        elif item.too_large:
            report.dropped.append({"path": item.name, "reason": item.error})
        elif item.kind is FileKind.TEXT and item.effective_mode is not item.mode:
            report.degraded.append(
                {
                    "path": item.name,
                    "mode": item.mode.value,
                    "effective_mode": item.effective_mode.value,
                    "why": _WHY.get(item.reduced_by, item.reduced_by),
                }
            )
    return report
