"""Gen + Send from the message box to the response, and Stop.

::

    main thread                      asyncio worker            request thread (executor)
    ───────────                      ──────────────            ─────────────────────────
    submit(): snapshot settings,     run(): state "running"  ─▶ send_blocking(): compile the
    context request, discussion;      awaits the executor        context, backend.send(...,
    record + CancelToken; event  ──▶                             cancel=token)
                                     "response" event  ◀──────  text | RequestCancelled | error
    handle_ai_response (bindings) ◀──

Every request gets a :class:`~manual_slop.cancel.CancelToken`. :meth:`RequestFlow.cancel`
(the Stop button, ``btn_cancel_request``, ``POST /api/requests/{id}/cancel``) fires it: a
queued request never starts; a running one stops within a second on every provider (see
:mod:`manual_slop.cancel`) and ends as ``cancelled`` with the answer as far as it got, which
goes into the discussion marked as cut. Shutdown cancels every request still running.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any, Protocol

from manual_slop.automation import FeatureUnavailable
from manual_slop.cancel import CancelToken, RequestCancelled
from manual_slop.events import UserRequestEvent
from manual_slop.memory.conversations import discussion_id
from manual_slop.memory.index_engine import IndexEngine
from manual_slop.tools.approval import ToolHost, build_execution_context

if TYPE_CHECKING:
    from manual_slop.ai.client import ContextFit
    from manual_slop.ai.refresh import Refresher
    from manual_slop.ai.windows import RequestBudget
    from manual_slop.context.service import ContextService
    from manual_slop.events import AsyncEventQueue
    from manual_slop.memory.compaction import MemoryBudget
    from manual_slop.memory.service import MemorySettings
    from manual_slop.requests import RequestBoard

__all__ = ["CUT_MARK", "FALLBACK_MARK", "ChatBackend", "RequestFlow", "RequestHost"]

log = logging.getLogger(__name__)

CUT_MARK = "[cut: {reason}]"  # ends the text of an answer that was stopped
FALLBACK_MARK = "[answered by {provider} / {model}: {fallback}]"  # starts an answer from a fallback


class ChatBackend(Protocol):
    """What the controller needs from the AI client (``manual_slop.ai``). Declared here, where
    sends use it, so the bindings need not import the controller; the controller re-exports it."""

    def apply_settings(self, settings: Mapping[str, Any]) -> None: ...

    def send(self, md_content: str, user_message: str, **kwargs: Any) -> str: ...

    def reset_session(self) -> None: ...


class RequestHost(ToolHost, Protocol):
    """What Gen + Send needs from the app (the controller); a send's tools context included."""

    context: ContextService
    requests: RequestBoard
    event_queue: AsyncEventQueue

    @property
    def backend(self) -> ChatBackend | None: ...

    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...

    @property
    def executor(self) -> Executor: ...

    def ai_settings(self) -> dict[str, Any]: ...

    def discussion_text(self) -> str: ...

    def set_ai_status(self, status: str) -> None: ...

    def update_request(self, request_id: str, **changes: Any) -> None: ...

    def post_gui_task(self, task: dict[str, Any]) -> str | None: ...

    def publish(self, event_type: str, payload: Mapping[str, Any] | None = None) -> int: ...


class RequestFlow:
    """The controller's Gen + Send requests: submit, run, cancel."""

    def __init__(self, ctrl: RequestHost) -> None:
        self._ctrl = ctrl
        self._before_send: list[Callable[[], None]] = []

    def before_send(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` on the request thread before every send (features register at start-up;
        e.g. external MCP servers are started so their tools are offered). It bounds its waits;
        an exception is logged and the send goes on."""
        self._before_send.append(hook)

    # -- main thread -----------------------------------------------------------------------
    def submit(self, prompt: str) -> str:
        """Gen + Send: snapshot what the send needs and queue it for the asyncio worker."""
        ctrl = self._ctrl
        if ctrl.backend is None:
            raise FeatureUnavailable("no AI provider is available yet (the AI client is not wired)")
        request_id = uuid.uuid4().hex
        state = ctrl.state
        memory = ctrl.memory.settings() if ctrl.memory is not None and ctrl.memory.service else None
        settings = ctrl.ai_settings()
        agents = getattr(ctrl, "agents", None)
        agent = agents.apply_to_settings(settings, "chat") if agents is not None else None
        if agent is not None and memory is not None and agent.memory_categories:
            memory = dataclasses.replace(memory, categories=agent.memory_categories)
        skills = getattr(ctrl, "skills", None)  # the enabled skills' names and descriptions, not bodies
        offered = skills.apply_to_settings(settings, agent) if skills is not None else False
        context = ctrl.context.request()
        if (agent is not None or offered) and context is not None:  # the context's System Prompt says it once
            context = dataclasses.replace(context, system_prompt=settings["system_prompt"])
        if memory is not None:
            settings.update(
                history_window=memory.history_window,
                memory_budget_tokens=memory.budget_tokens,
                memory_split=list(memory.split),
            )
        event = UserRequestEvent(
            prompt=prompt,
            stable_md="",  # compiled from ``context`` on the request thread
            file_items=[],
            disc_text=ctrl.discussion_text(),
            base_dir=str(ctrl.base_dir()),
            request_id=request_id,
            settings=settings,
            context=context,
            discussion=state.active_discussion,
            entries=ctrl.memory.turns() if memory is not None else [],
            memory=memory,
            tools=agent.tools if agent is not None else None,
        )
        ctrl.requests.add(request_id, prompt, CancelToken())
        if state.auto_add:
            role = state.role(0, "User")
            index = ctrl.context.discussions.append(role, prompt, label="send: user message")
            ctrl.context.discussions.expect_images(request_id, index)
        state.active_request_id = request_id
        ctrl.set_ai_status("sending...")
        if not ctrl.event_queue.put_threadsafe("user_request", event):
            ctrl.update_request(request_id, state="error", error="the app is shutting down")
        return request_id

    # -- any thread --------------------------------------------------------------------------
    def cancel(self, request_id: str, reason: str = "stopped by the user") -> str:
        """Stop a request; its state afterwards (``cancelling`` until the provider let go, or
        ``cancelled``). LookupError for an unknown id, ValueError when it already ended."""
        board = self._ctrl.requests
        token = board.token(request_id)
        if token is None:
            raise LookupError(f"no request {request_id!r}")
        state = board.state(request_id)
        if state in ("done", "error", "cancelled"):
            raise ValueError(f"request {request_id} already ended ({state})")
        token.cancel(reason)
        board.mark_cancelling(request_id)
        return board.state(request_id) or "cancelling"

    def cancel_all(self, reason: str) -> int:
        """Cancel every request that has not ended (shutdown); how many."""
        count = 0
        for request_id in self._ctrl.requests.unfinished():
            try:
                self.cancel(request_id, reason)
                count += 1
            except (LookupError, ValueError):
                continue  # it ended meanwhile
        return count

    # -- asyncio worker --------------------------------------------------------------------------
    async def run(self, event: UserRequestEvent) -> None:
        ctrl = self._ctrl
        token = ctrl.requests.token(event.request_id) or CancelToken()
        payload: dict[str, Any] = {"request_id": event.request_id}
        if token.cancelled:  # stopped while queued: never sent
            payload.update(text="", status="cancelled", reason=token.reason)
        else:
            ctrl.update_request(event.request_id, state="running")
            try:
                text = await ctrl.loop.run_in_executor(ctrl.executor, self.send_blocking, event, token)
                payload.update(text=str(text), status="done")
                for key in ("provider", "model", "fallback"):  # who really answered (ai.client.Answer)
                    payload[key] = getattr(text, key, "")
            except RequestCancelled as stop:
                payload.update(text=stop.partial, status="cancelled", reason=stop.reason)
            except Exception as exc:
                message = exc.ui_message() if hasattr(exc, "ui_message") else f"{type(exc).__name__}: {exc}"
                log.warning("request %s failed: %s", event.request_id, message)
                payload.update(text=message, status="error", error=message)
        payload["discussion"] = event.discussion
        await ctrl.event_queue.put("response", payload)
        if payload.get("status") == "done" and event.memory is not None and event.memory.learn_profile:
            exchange = f"User: {event.prompt}\n\nAI: {payload['text']}"
            await ctrl.loop.run_in_executor(ctrl.executor, self._learn_profile, exchange, event.memory)

    def _learn_profile(self, exchange: str, settings: MemorySettings) -> None:
        """The passive profile's sub-call after a completed exchange (rate-limited; a failure
        only costs the lines it would have learned)."""
        binding, backend = self._ctrl.memory, self._ctrl.backend
        ask = getattr(backend, "run_text", None)
        if binding is None or binding.service is None or ask is None:
            return
        try:
            added = binding.service.learn_profile(exchange, ask, settings)
        except Exception as exc:
            log.warning("profile learning failed: %s", exc)
            return
        if added:
            self._ctrl.publish("profile_learned", {"lines": added})

    # -- request thread -----------------------------------------------------------------------
    def send_blocking(self, event: UserRequestEvent, token: CancelToken) -> str:
        ctrl = self._ctrl
        backend = ctrl.backend
        if backend is None:
            raise RuntimeError("no AI backend is configured")
        backend.apply_settings(event.settings)
        for hook in self._before_send:
            try:
                hook()
            except Exception:
                log.exception("a before-send hook failed; sending anyway")
        md_content, file_items = event.stable_md, event.file_items
        fits = event.context is not None and getattr(backend, "fits_context", False)
        refresher = None
        if event.context is not None and not fits:  # aggregate here, on the request thread
            compiled = ctrl.context.compile(event.context, "send", extra={"request_id": event.request_id})
            md_content, file_items = compiled.markdown, compiled.file_items
            refresher = compiled.refresher(ctrl.context.cache)  # changed files in their views
        extras = self._send_extras(event, token)
        extras.update(self._memory_extras(event))
        if refresher is not None:
            extras["refresher"] = refresher
        if fits:
            extras["fit_context"] = self._fitter(event)  # compiled for the answering model's window
        token.check()
        if event.tools is not None:
            extras["tools"] = list(event.tools)  # the agent's allowed tools
        shots = event.context.screenshots if event.context is not None else ()
        if shots and event.context is not None and getattr(backend, "takes_images", False):
            images = ctrl.context.images(event.context)  # read through the path policy, downscaled
            if images:
                extras["images"] = images
                token.check()
        return backend.send(
            md_content,
            event.prompt,
            base_dir=event.base_dir,
            file_items=file_items,
            discussion_history=event.disc_text,
            **extras,
        )

    def _fitter(self, event: UserRequestEvent) -> ContextFit:
        """The context of ``event`` compiled for a provider's room (once per distinct room)."""
        ctrl = self._ctrl
        compiled_for: dict[tuple[str, int, int], tuple[str, Refresher]] = {}
        assert event.context is not None
        request = event.context

        def fit(budget: RequestBudget) -> tuple[str, Refresher]:
            key = (budget.model, budget.window, budget.reserved)
            if key not in compiled_for:
                extra = {"request_id": event.request_id}
                compiled = ctrl.context.compile(request, "send", extra=extra, budget=budget)
                if compiled.fit is not None:
                    ctrl.update_request(event.request_id, context=compiled.fit.to_dict())
                compiled_for[key] = (compiled.markdown, compiled.refresher(ctrl.context.cache))
            return compiled_for[key]

        return fit

    def _memory_extras(self, event: UserRequestEvent) -> dict[str, Any]:
        """The discussion's own conversation (synced with its entries first), the memory part of
        the system prompt and, with ``rag.enabled``, the project index's passages."""
        binding = self._ctrl.memory
        service = binding.service if binding is not None else None
        settings = event.memory
        conversation = discussion_id(event.discussion)
        if service is None or settings is None:
            return {"conversation": conversation, "conversation_kind": "discussion"}
        synced = service.conversations.sync_discussion(conversation, event.entries, title=event.discussion)
        if synced.action == "rebased":
            log.info("memory: %s follows its edited entries (rebased)", conversation)

        def memory_block(budget: MemoryBudget, first_request: bool) -> str:
            return service.prompt_block(
                conversation=conversation,
                message=event.prompt,
                settings=settings,
                long_term_tokens=budget.long_term_tokens,
                episodic_tokens=budget.episodic_tokens,
                first_request=first_request,
            )

        extras: dict[str, Any] = {
            "conversation": conversation,
            "conversation_kind": "discussion",
            "memory_block": memory_block,
        }
        if settings.rag_enabled:
            extras["rag_engine"] = IndexEngine(service, settings.rag_top_k)
        return extras

    def _send_extras(self, event: UserRequestEvent, token: CancelToken) -> dict[str, Any]:
        """Tools context (approvals through the clutch), streaming into the response view, the token."""
        ctrl = self._ctrl
        context = build_execution_context(ctrl, cancel=token)  # reads the project through call_on_main
        seq = itertools.count()

        def stream(text: str) -> None:
            ctrl.post_gui_task(
                {"action": "ai_stream_chunk", "request_id": event.request_id, "seq": next(seq), "text": text}
            )

        return {
            "context": context,
            "pre_tool_callback": context.pre_tool_callback,
            "stream_callback": stream,
            "cancel": token,
        }
