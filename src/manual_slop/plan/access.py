"""The app's side of the model engines: clients, tool contexts, memory and provider checks.

:class:`AppModelAccess` gives each plan call a client of its own: a fork of the app's AI client
(``AIClient.fork``), so the subtasks of one group send at the same time and a chat the user
sends meanwhile is not held up. A backend that cannot fork (a test double) is shared behind a
lock instead. Tool calls get the same context as a chat's — the one path policy, approvals
through the Execution Clutch, the tool log — and memory blocks use the agent's note categories.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from manual_slop.plan.engines import SubtaskRun
from manual_slop.plan.llm_engine import SUBTASK_TIER
from manual_slop.tools.tool import ExecutionContext

if TYPE_CHECKING:
    from manual_slop.controller import AppController

__all__ = ["AppModelAccess"]


class AppModelAccess:
    """:class:`~manual_slop.plan.llm_engine.ModelAccess` on a controller (any thread)."""

    def __init__(self, ctrl: AppController) -> None:
        self.ctrl = ctrl
        self._shared = threading.Lock()  # serializes a backend that cannot fork

    @contextlib.contextmanager
    def client(self, settings: Mapping[str, Any]) -> Iterator[Any]:
        backend = self.ctrl.backend
        if backend is None:
            raise RuntimeError("no AI provider is available")
        fork = getattr(backend, "fork", None)
        if fork is None:
            with self._shared:
                backend.apply_settings(dict(settings))
                yield backend
            return
        client = fork()
        try:
            client.apply_settings(dict(settings))
            yield client
        finally:
            client.release()

    def tools_context(self, run: SubtaskRun) -> ExecutionContext | None:
        from manual_slop.tools.approval import build_execution_context

        return build_execution_context(self.ctrl, tier=SUBTASK_TIER, abort=run.abort, cancel=run.cancel)

    def memory_block(self, run: SubtaskRun, conversation: str) -> Callable[..., str] | None:
        binding = getattr(self.ctrl, "memory", None)
        service = getattr(binding, "service", None)
        if binding is None or service is None:
            return None
        settings = self.ctrl.call_on_main(binding.settings, timeout=5.0)
        if run.memory_categories:
            settings = dataclasses.replace(settings, categories=tuple(run.memory_categories))

        def block(budget: Any, first_request: bool) -> str:
            return str(
                service.prompt_block(
                    conversation=conversation,
                    message=run.prompt,
                    settings=settings,
                    long_term_tokens=budget.long_term_tokens,
                    episodic_tokens=budget.episodic_tokens,
                    first_request=first_request,
                )
            )

        return block

    def provider_problem(self, provider: str) -> str | None:
        """Why ``provider`` cannot answer here: for the Gemini CLI, a missing binary or key."""
        from manual_slop.ai.errors import AIError
        from manual_slop.ai.providers import provider_class
        from manual_slop.ai.settings import ClientSettings

        settings = self.ctrl.call_on_main(self.ctrl.ai_settings, timeout=5.0)
        client_settings = ClientSettings()
        entry = (settings.get("providers") or {}).get(provider, {})
        if isinstance(entry.get("options"), Mapping):
            client_settings.options[provider] = {
                k: v for k, v in entry["options"].items() if v not in (None, "")
            }
        cls = provider_class(provider)
        if cls.needs_api_key and not entry.get("api_key"):
            return f"no API key is configured for {provider}"
        instance = cls(client_settings.config_for(provider))
        try:
            binary = getattr(instance, "binary", None)
            if callable(binary):
                binary()
        except AIError as exc:
            return exc.ui_message() if hasattr(exc, "ui_message") else str(exc)
        finally:
            instance.close()
        return None

    def record(self, conversation: str, run: SubtaskRun, text: str) -> None:
        from manual_slop.ai.messages import Message

        source = getattr(self.ctrl.backend, "conversations", None)
        if source is None:
            return  # a backend without a conversation store (a test double)
        stored = source.open(conversation, kind="plan", tier=SUBTASK_TIER, ticket=run.subtask_id)
        stored.add(Message.user(run.prompt))
        stored.add(Message.assistant(text))
