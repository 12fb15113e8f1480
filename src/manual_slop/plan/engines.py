"""Engines: what runs one subtask of a plan.

An engine takes a :class:`SubtaskRun` (the subtask, its agent, the prompt built for it, the
project folder, an abort event and the clutch to ask) and returns an :class:`EngineResult`
(the text that becomes the subtask's result, and the tokens it cost). Three engines exist:

- ``llm`` — our own tool loop with the agent's prompt and allowed tools (the default);
- ``gemini_cli`` — one run of the Gemini CLI provider, its tool calls asking through the bridge;
- ``aider`` — the real Aider CLI in a scratch copy of the project; its diff is applied only
  after the user approves it (:mod:`manual_slop.plan.aider`).

:meth:`Engine.availability` says why an engine cannot run here (None when it can); the
planner is told which engines are available and validation refuses the others, so a missing
engine is reported before anything runs.

Errors::

    Exception
    └── EngineError        the engine ran and failed (the message says how); may be retried
        └── EngineRejected the user rejected what the engine produced: never retried
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from manual_slop.automation import AutomationError
from manual_slop.cancel import CancelToken
from manual_slop.dialogs import Decision, PendingDialog
from manual_slop.mma.errors import MMAError
from manual_slop.plan.model import PlanError

__all__ = [
    "ENGINE_NAMES",
    "Engine",
    "EngineError",
    "EngineRejected",
    "EngineResult",
    "SubtaskRun",
    "describe_failure",
]

ENGINE_NAMES: tuple[str, ...] = ("llm", "aider", "gemini_cli")


class EngineError(Exception):
    """An engine failed to produce a result for its subtask; the message says why."""


class EngineRejected(EngineError):
    """The user rejected the engine's result (its diff, say): the subtask fails without a retry."""


@dataclass(frozen=True, slots=True)
class EngineResult:
    """What a subtask produced: its result text and the tokens it cost."""

    text: str
    usage: Mapping[str, int] = field(default_factory=dict)  # input_tokens, output_tokens
    files_changed: tuple[str, ...] = ()  # project-relative paths the engine changed (after approval)
    conversation: str = ""  # the stored conversation it is in ('' = none yet: the conductor stores it)


@dataclass(frozen=True, slots=True)
class SubtaskRun:
    """Everything an engine needs for one attempt of one subtask (snapshotted, thread-safe)."""

    plan_id: str
    subtask_id: str
    title: str
    prompt: str  # the objective, notes and the results it depends on, as the engine should read them
    system_prompt: str  # the agent's prompt (leading the project's)
    base_dir: Path
    abort: threading.Event
    # the clutch: shows a dialog and waits for the decision (None when the run was aborted first)
    ask: Callable[[PendingDialog], Decision | None]
    agent_key: str = ""
    tools: tuple[str, ...] | None = None  # the tools the agent may use (None = every tool)
    files: tuple[str, ...] = ()  # project-relative files the subtask is about (the aider engine edits them)
    max_tokens: int = 512  # the execution phase's limit
    settings: Mapping[str, Any] = field(default_factory=dict)  # the AI settings snapshot for this agent
    attempt: int = 1
    cancel: CancelToken = field(default_factory=CancelToken)  # cancelled with ``abort``: stops a model call
    memory_categories: tuple[str, ...] = ()  # the agent's note categories (all when empty)


class Engine(Protocol):
    """One way of running a subtask."""

    name: str

    def availability(self) -> str | None:
        """None when the engine can run here, else the reason it cannot (shown at validation)."""
        ...

    def run(self, run: SubtaskRun) -> EngineResult:
        """Run one attempt; EngineError when it fails, ``mma.errors.Aborted`` when ``run.abort`` is set."""
        ...


def describe_failure(exc: BaseException) -> str:
    """What a failure tells the user: a provider error's own message, the text of one of ours
    (engine, plan, MMA and automation errors say what is wrong), else the type and the text."""
    ui_message = getattr(exc, "ui_message", None)
    if callable(ui_message):
        try:
            return str(ui_message())
        except Exception:  # a message that cannot be built must not hide the failure
            pass
    if isinstance(exc, EngineError | PlanError | MMAError | AutomationError) and str(exc):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
