"""The ``llm`` and ``gemini_cli`` engines: a subtask answered by a model through our own client.

``llm`` sends the subtask's prompt on a fork of the app's AI client (its own provider session,
so subtasks of one group really run side by side) with the agent's prompt, its allowed tools
and its memory categories; every mutating tool call asks through the Execution Clutch like a
chat's. ``gemini_cli`` is the same send with the Gemini CLI provider: one run of the CLI, its
tool calls asking through the bridge. Each attempt is stored as a conversation of its own
(``plan:<plan>:<subtask>:<attempt>``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from manual_slop.cancel import RequestCancelled
from manual_slop.mma.errors import Aborted
from manual_slop.plan.engines import EngineError, EngineResult, SubtaskRun, describe_failure
from manual_slop.tools.tool import ExecutionContext

__all__ = ["LlmEngine", "ModelAccess", "conversation_id", "usage_of"]


class ModelAccess(Protocol):
    """What the model engines need from the app (the plan runtime provides it)."""

    def client(self, settings: Mapping[str, Any]) -> contextlib.AbstractContextManager[Any]:
        """A client with ``settings`` applied, for this call only (``send``, ``get_token_usage``)."""
        ...

    def tools_context(self, run: SubtaskRun) -> ExecutionContext | None:
        """The tools' context for one attempt: the path policy, approvals through the clutch."""
        ...

    def memory_block(self, run: SubtaskRun, conversation: str) -> Callable[..., str] | None:
        """The memory part of the system prompt, for the agent's categories (None: no memory)."""
        ...

    def provider_problem(self, provider: str) -> str | None:
        """Why ``provider`` cannot answer here (None when it can)."""
        ...

    def record(self, conversation: str, run: SubtaskRun, text: str) -> None:
        """Store an engine's exchange (its prompt and result) as a conversation of its own."""
        ...


SUBTASK_TIER = "Tier 3"  # a subtask's comms and tool calls are tagged like an MMA worker's


def conversation_id(run: SubtaskRun) -> str:
    return f"plan:{run.plan_id}:{run.subtask_id}:{run.attempt}"


class LlmEngine:
    """Runs a subtask as one send of our tool loop (``provider`` forces a provider: gemini_cli)."""

    def __init__(self, access: ModelAccess, name: str = "llm", provider: str = "") -> None:
        self.access = access
        self.name = name
        self.provider = provider

    def availability(self) -> str | None:
        return self.access.provider_problem(self.provider) if self.provider else None

    def run(self, run: SubtaskRun) -> EngineResult:
        if run.abort.is_set():
            raise Aborted(f"subtask {run.subtask_id} aborted before it started")
        settings = dict(run.settings)
        if self.provider:
            entry = (settings.get("providers") or {}).get(self.provider, {})
            settings.update(
                provider=self.provider,
                model=entry.get("model", ""),
                base_url=entry.get("base_url", ""),
                api_key=entry.get("api_key"),
            )
        conversation = conversation_id(run)
        tools_enabled = run.tools is None or bool(run.tools)
        context = self.access.tools_context(run) if tools_enabled else None
        extras: dict[str, Any] = {}
        if context is not None:
            extras.update(context=context, pre_tool_callback=context.pre_tool_callback)
        memory = self.access.memory_block(run, conversation)
        if memory is not None:
            extras["memory_block"] = memory
        try:
            with self.access.client(settings) as client:
                text = client.send(
                    "",
                    run.prompt,
                    base_dir=str(run.base_dir),
                    enable_tools=tools_enabled,
                    tools=list(run.tools) if run.tools is not None else None,
                    system_prompt=run.system_prompt,
                    cancel=run.cancel,
                    conversation=conversation,
                    conversation_kind="plan",
                    ticket=run.subtask_id,
                    tier=SUBTASK_TIER,
                    **extras,
                )
                usage = usage_of(client)
        except RequestCancelled as exc:
            raise Aborted(f"subtask {run.subtask_id} stopped: {exc.reason}") from None
        except Exception as exc:
            raise EngineError(describe_failure(exc)) from exc
        if run.abort.is_set():
            raise Aborted(f"subtask {run.subtask_id} aborted")
        return EngineResult(
            str(text),
            {
                "input_tokens": int(usage.get("input_tokens", 0)),
                "output_tokens": int(usage.get("output_tokens", 0)),
            },
            conversation=conversation,
        )


def usage_of(client: Any) -> dict[str, int]:
    """The last send's tokens (a client without usage reporting counts none)."""
    report = getattr(client, "get_token_usage", None)
    return dict(report()) if callable(report) else {}
