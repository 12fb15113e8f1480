"""Loop guards: a model that repeats itself is told so, and then stopped.

One :class:`RepeatGuard` per send counts each (tool, normalized arguments) pair over the
whole conversation — seeded from the calls already in its history, so a repeat is caught
across sends too. The ``warn_at``-th identical call runs and its result carries a warning;
from the ``refuse_at``-th on the call is not executed, and the model gets back what the
last identical call returned. A successful change (a mutating tool that succeeded) clears
the counts: after an edit the same read may rightly give a different answer.

:class:`GuardKind` names every trip the tool loop counts per run (also the repeat trips,
unknown tools, invalid arguments, malformed calls and the round and output limits); each
trip is logged and announced as a ``guard_trip`` event.
"""

from __future__ import annotations

import itertools
import json
import os
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from manual_slop.ai.messages import Message, Role, ToolOutput
from manual_slop.tools.tool import ToolCall, ToolStatus

__all__ = [
    "DEFAULT_LIMITS",
    "GuardKind",
    "GuardLimits",
    "RepeatCheck",
    "RepeatGuard",
    "call_key",
    "refusal_text",
    "warning_text",
]

PREVIOUS_OUTPUT_CHARS = 2_000  # of the earlier result, quoted back with a refusal
WARNING_MARK = "\n\n[GUARD: "


class GuardKind(StrEnum):
    REPEAT_WARNED = "repeat_warned"
    REPEAT_REFUSED = "repeat_refused"
    UNKNOWN_TOOL = "unknown_tool"
    INVALID_ARGS = "invalid_args"
    MALFORMED_CALL = "malformed_call"
    ROUND_LIMIT = "round_limit"
    OUTPUT_BUDGET = "output_budget"


@dataclass(frozen=True, slots=True)
class GuardLimits:
    """The identical call that warns and the one that is refused (0: never)."""

    warn_at: int = 2
    refuse_at: int = 3

    def __post_init__(self) -> None:
        for name in ("warn_at", "refuse_at"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a whole number >= 0, got {value!r}")


DEFAULT_LIMITS = GuardLimits()


@dataclass(frozen=True, slots=True)
class RepeatCheck:
    """What the guard makes of one call: how many identical calls so far (this one included)."""

    count: int
    warn: bool
    refuse: bool
    previous: str  # what the last identical call returned ('' when none did)


def call_key(name: str, args: dict[str, Any]) -> str:
    """``name`` and ``args`` in one canonical form: keys sorted, strings stripped, paths
    normalized (``./a.py`` is ``a.py``), whole floats as integers."""
    return json.dumps([name, _normal(args, "")], sort_keys=True, ensure_ascii=False, default=str)


def _normal(value: Any, key: str) -> Any:
    if isinstance(value, dict):
        return {str(k): _normal(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normal(v, key) for v in value]
    if isinstance(value, str):
        text = value.strip()
        if key.endswith("path") and text:
            text = os.path.normpath(text.replace("\\", "/"))
        return text
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def warning_text(name: str, count: int) -> str:
    return (
        f"{WARNING_MARK.lstrip()}this is call {count} of {name} with these same arguments in this "
        "conversation. It returns what it returned before unless something changed; use what you "
        "already have instead of repeating it.]"
    )


def refusal_text(name: str, count: int, previous: str) -> str:
    cut = previous[:PREVIOUS_OUTPUT_CHARS]
    more = f"\n… ({len(previous) - len(cut)} more characters)" if len(previous) > len(cut) else ""
    return (
        f"NOT EXECUTED: you are repeating yourself. {name} was already called {count - 1} times with "
        "these same arguments in this conversation and nothing has changed since. Do not call it "
        "again; go on with what it returned last time:\n" + cut + more
    )


class RepeatGuard:
    """Counts identical calls of one conversation; one instance per send."""

    def __init__(self, limits: GuardLimits, mutating: Callable[[str], bool]) -> None:
        self.limits = limits
        self._mutating = mutating
        self._counts: Counter[str] = Counter()
        self._last: dict[str, str] = {}

    def seed(self, messages: Iterable[Message]) -> None:
        """Count the calls already answered in ``messages`` (oldest first)."""
        for message, answer in itertools.pairwise(messages):
            if message.role is not Role.ASSISTANT or answer.role is not Role.TOOL:
                continue  # ids may repeat across sends: a round's outputs are the next message's
            outputs = {o.call_id: o for o in answer.tool_outputs}
            for call in message.tool_calls:
                output = outputs.get(call.id)
                if output is not None:
                    self.check(call)
                    self.record(call, output)

    def check(self, call: ToolCall) -> RepeatCheck:
        """Count ``call`` and judge it before it runs; :meth:`record` its output afterwards.
        Identical calls of one round count one after the other."""
        key = call_key(call.name, call.args)
        self._counts[key] += 1
        count = self._counts[key]
        warn_at, refuse_at = self.limits.warn_at, self.limits.refuse_at
        refuse = bool(refuse_at) and count >= refuse_at
        warn = not refuse and bool(warn_at) and count >= warn_at
        return RepeatCheck(count, warn, refuse, self._last.get(key, ""))

    def record(self, call: ToolCall, output: ToolOutput) -> None:
        if output.status is ToolStatus.SUCCESS and self._mutating(call.name):
            self._counts.clear()  # the world changed: an identical read may now differ
            self._last.clear()
        elif not output.content.startswith("NOT EXECUTED"):
            self._last[call_key(call.name, call.args)] = output.content.split(WARNING_MARK, 1)[0]
