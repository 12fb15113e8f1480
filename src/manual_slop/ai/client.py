"""``AIClient``: the one object the app talks to a model through, and its singleton ``ai_client``.

The client owns the settings, one provider object and one conversation per provider
(all instance state; nothing lives in module globals but the singleton itself and the
thread-local tier tag), the comms log and the callbacks the controller wires.
:meth:`AIClient.send` is serialised by one lock; it picks the provider chain (the active
provider, then ``[ai] fallback``), runs the tool loop on the first that works and returns
the answer's text.

It satisfies the controller's ``ChatBackend`` protocol: ``apply_settings(settings)``,
``send(md_content, user_message, **kwargs) -> str``, ``reset_session()``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from manual_slop.ai.comms import CommsLog, get_current_tier, set_current_tier
from manual_slop.ai.errors import AIError
from manual_slop.ai.images import ImageSet, admit
from manual_slop.ai.images import estimate_tokens as image_tokens
from manual_slop.ai.loop_guard import GuardLimits
from manual_slop.ai.messages import Message, ModelRequest, StreamSink, ToolChoice, Usage
from manual_slop.ai.prompts import (
    BASE_INSTRUCTIONS,
    COMPRESSION_PROMPT,
    PATCH_PROMPT,
    SUMMARY_PROMPT,
    summary_request,
    system_text,
)
from manual_slop.ai.providers import Provider, ProviderConfig, ProviderHooks, provider_class
from manual_slop.ai.rag import RagEngine, append_retrieved, retrieve
from manual_slop.ai.refresh import FileRefresher, Refresher
from manual_slop.ai.retry import RetryPolicy
from manual_slop.ai.settings import Answer, ClientSettings, as_secret, provider_name
from manual_slop.ai.tool_loop import LoopSetup, ToolLoop
from manual_slop.ai.transcript import (
    Conversation,
    ConversationSource,
    InMemoryConversations,
    estimate_tokens,
)
from manual_slop.ai.windows import RequestBudget, budget_for, shrink_markdown
from manual_slop.cancel import CancelToken, RequestCancelled
from manual_slop.config import PROVIDER_NAMES
from manual_slop.events import EventEmitter
from manual_slop.governance.correlation import within_run
from manual_slop.governance.run_log import NO_RUN, RunLogs, active_run, record_run
from manual_slop.memory.compaction import Compactor, MemoryBudget
from manual_slop.tools.registry import ToolRegistry, default_registry
from manual_slop.tools.tool import ExecutionContext, PreToolCallback

__all__ = [
    "BASE_INSTRUCTIONS",
    "DEFAULT_CONVERSATION",
    "AIClient",
    "Answer",
    "ClientSettings",
    "ContextFit",
    "ai_client",
]

log = logging.getLogger(__name__)

# fit_context(budget) -> (the context compiled to fit, the refresher of its files or None)
ContextFit = Callable[[RequestBudget], tuple[str, Refresher | None]]

DEFAULT_CONVERSATION = "chat"  # the conversation of a send that names none


class AIClient:
    """Multi-provider chat client with one tool loop, retries, fallback and a comms log."""

    fits_context = True  # send() takes fit_context: the context compiled for each model's window
    takes_images = True  # send() takes images: the context's screenshots (ai.images)

    def __init__(
        self,
        *,
        registry: ToolRegistry | None = None,
        retry: RetryPolicy | None = None,
        local_engine_factory: Callable[..., Any] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.settings = ClientSettings()
        self.retry = retry or RetryPolicy()
        self.events = EventEmitter()
        self.comms = CommsLog()
        self.last_usage = Usage()
        # callbacks the controller wires (any may stay None)
        self.tool_log_callback: Callable[[dict[str, Any]], Any] | None = None
        self.confirm_and_run_callback: PreToolCallback | None = None
        self.cli_log_callback: Callable[[dict[str, Any]], Any] | None = None
        self.notify_callback: Callable[[str, str], Any] | None = None
        # (url, token) of the running Hook API, or None: where the Gemini CLI's tool calls ask
        self.hook_api_callback: Callable[[], tuple[str, str] | None] | None = None
        # the app's redactor: every text sent to a provider passes it (no secret is ever sent)
        self.redact_callback: Callable[[str], str] | None = None
        self.runs: RunLogs | None = None  # where each send's run log goes (set by the app); None: none
        self._registry = registry
        self._local_engine_factory = local_engine_factory
        self._clock = clock
        self._send_lock = threading.Lock()
        self._settings_lock = threading.Lock()
        self._providers: dict[str, Provider] = {}
        # where conversations come from: in memory, or the project's memory store (set by the app)
        self.conversations: ConversationSource = InMemoryConversations()
        self._session_of: dict[str, str] = {}  # provider name -> the conversation its session caches
        self._family = _Family()  # what this client shares with its forks (see fork())
        self._abort = threading.Event()  # set by cleanup(): waits end early
        self._current = ("", "")  # (provider, model) of the call being logged
        self._active_cancel: CancelToken | None = None  # the token of the send in flight

    # =====================================================================================
    # callbacks and logging
    # =====================================================================================
    @property
    def comms_log_callback(self) -> Callable[[dict[str, Any]], Any] | None:
        return self.comms.callback

    @comms_log_callback.setter
    def comms_log_callback(self, callback: Callable[[dict[str, Any]], Any] | None) -> None:
        self.comms.callback = callback

    def _append_comms(self, direction: str, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        provider, model = self._current
        return self.comms.append(direction, kind, provider, model, payload)

    def _notify(self, level: str, message: str) -> None:
        self._append_comms("IN", "notice", {"level": level, "message": message})
        if self.notify_callback is not None:
            try:
                self.notify_callback(level, message)
            except Exception:
                log.exception("notify callback failed")

    def _record_tool_call(
        self, chained: Callable[[dict[str, Any]], Any] | None
    ) -> Callable[[dict[str, Any]], None]:
        def record(entry: dict[str, Any]) -> None:
            entry = {**entry, "provider": self._current[0], "model": self._current[1]}
            if chained is not None:
                chained(entry)

        return record

    # =====================================================================================
    # settings
    # =====================================================================================
    @property
    def provider(self) -> str:
        return self.settings.provider

    @property
    def model(self) -> str:
        return self.settings.models.get(self.settings.provider, "")

    def set_provider(self, name: str, model: str | None = None) -> None:
        """Make ``name`` the active provider (and ``model`` its model, when given)."""
        name = provider_name(name)
        with self._settings_lock:
            self.settings.provider = name
            if model:
                self.settings.models[name] = model

    def configure(self, **changes: Any) -> None:
        """Change settings (see :meth:`ClientSettings.change`): ``base_url``, ``api_key`` and
        provider options (``model_path``, ``binary``, ``n_ctx`` ...) apply to ``provider``
        (default: the active one); a bad value raises ConfigurationError naming it."""
        with self._settings_lock:
            self.settings.change(**changes)

    def apply_settings(self, settings: Mapping[str, Any]) -> None:
        """Take the controller's snapshot (``AppController.ai_settings()``)."""
        providers = settings.get("providers") or {}
        with self._settings_lock:
            s = self.settings
            for name, entry in providers.items():
                if name not in PROVIDER_NAMES or not isinstance(entry, Mapping):
                    continue
                if entry.get("model"):
                    s.models[name] = str(entry["model"])
                if "base_url" in entry:
                    s.base_urls[name] = str(entry.get("base_url") or "")
                if "api_key" in entry:
                    s.keys[name] = as_secret(entry.get("api_key"))
                if isinstance(entry.get("options"), Mapping):
                    s.options[name] = {k: v for k, v in entry["options"].items() if v not in (None, "")}
        self.set_provider(
            str(settings.get("provider") or self.settings.provider), settings.get("model") or None
        )
        changes: dict[str, Any] = {
            k: settings[k]
            for k in (
                "temperature",
                "top_p",
                "max_tokens",
                "history_trunc_limit",
                "system_prompt",
                "base_url",
                "history_window",
                "memory_budget_tokens",
                "memory_split",
                "summary_max_tokens",
                "guard_repeat_warn",
                "guard_repeat_refuse",
            )
            if settings.get(k) is not None
        }
        if "api_key" in settings:
            with self._settings_lock:
                self.settings.keys[self.settings.provider] = as_secret(settings.get("api_key"))
        if settings.get("fallback") is not None:
            chain = [str(n).strip().lower() for n in settings["fallback"]]
            unknown = [n for n in chain if n not in PROVIDER_NAMES]
            if unknown:
                self._notify("warning", f"ai.fallback: unknown provider(s) {', '.join(unknown)} ignored")
            changes["fallback"] = [n for n in chain if n in PROVIDER_NAMES]
        self.configure(**changes)

    # =====================================================================================
    # providers
    # =====================================================================================
    def _hooks(self) -> ProviderHooks:
        hooks = ProviderHooks(comms=self._append_comms, cli_call=self._cli_call, hook_api=self._hook_api)
        if self._clock is not None:
            hooks.clock = self._clock
        return hooks

    def _cli_call(self, entry: dict[str, Any]) -> None:
        if self.cli_log_callback is not None:
            try:
                self.cli_log_callback(entry)
            except Exception:
                log.exception("cli log callback failed")

    def _hook_api(self) -> tuple[str, str] | None:
        callback = self.hook_api_callback
        if callback is None:
            return None
        try:
            return callback()
        except Exception:
            log.exception("hook api callback failed")
            return None

    def _instance(self, name: str, config: ProviderConfig) -> Provider:
        provider = self._providers.get(name)
        if provider is None and name == "local":
            provider = self._family.local  # one loaded model for the client and all its forks
        if provider is None:
            cls = provider_class(name)
            if name == "local" and self._local_engine_factory is not None:
                provider = cls(config, self._hooks(), engine_factory=self._local_engine_factory)  # type: ignore[call-arg]
            else:
                provider = cls(config, self._hooks())
            self._providers[name] = provider
            if name == "local":
                self._family.local = provider
        else:
            self._providers[name] = provider
            with self._family.local_lock if name == "local" else contextlib.nullcontext():
                provider.reconfigure(config)  # never under a fork's request on the shared model
        return provider

    def fork(self) -> AIClient:
        """A client for work that runs beside this one's (plan subtasks, merge, judge): the same
        settings, tools, callbacks, comms log, redactor and conversation store, but its own provider
        sessions and send lock, so its sends do not wait for this client's. The in-process local
        model is shared, one request at a time. :meth:`release` it when done."""
        child = AIClient(
            registry=self.registry(),
            retry=self.retry,
            local_engine_factory=self._local_engine_factory,
            clock=self._clock,
        )
        with self._settings_lock:
            child.settings = self.settings.copy()
        child.comms = self.comms
        child.events = self.events
        child.conversations = self.conversations
        child.runs = self.runs
        for name in (
            "tool_log_callback",
            "confirm_and_run_callback",
            "cli_log_callback",
            "notify_callback",
            "hook_api_callback",
            "redact_callback",
        ):
            setattr(child, name, getattr(self, name))
        child._family = self._family
        return child

    def release(self) -> None:
        """Close a fork's own provider connections (the shared local model stays loaded)."""
        with self._send_lock:
            for provider in self._providers.values():
                if provider is self._family.local:
                    continue
                try:
                    provider.cleanup()
                finally:
                    provider.close()
            self._providers.clear()

    def registry(self) -> ToolRegistry:
        """The tools offered to models (every built-in tool unless one was given)."""
        if self._registry is None:
            self._registry = default_registry()
        return self._registry

    def _chain(self, settings: ClientSettings) -> list[str]:
        """Providers to try, in order: the active one, then the fallbacks that have what they need."""
        names: list[str] = []
        for name in (settings.provider, *settings.fallback):
            if name not in names:
                names.append(name)
        usable = [n for n in names if not provider_class(n).needs_api_key or settings.keys.get(n)]
        primary = settings.provider
        if primary not in usable:
            if not any(settings.keys.values()):
                self._notify(
                    "warning",
                    f"no API key is configured for {primary} (nor for any other provider); "
                    "using the local offline model instead",
                )
                return ["local", *[n for n in usable if n != "local"]]
            if not usable:
                return [primary]  # its missing-key error names the setting to fix
            self._append_comms("OUT", "fallback", {"skipped": primary, "reason": "no API key configured"})
        return usable

    # =====================================================================================
    # send
    # =====================================================================================
    def send(
        self,
        md_content: str,
        user_message: str,
        base_dir: str = ".",
        file_items: Sequence[Any] | None = None,
        discussion_history: str = "",
        stream: bool = False,
        pre_tool_callback: PreToolCallback | None = None,
        qa_callback: Callable[[str], str | None] | None = None,
        enable_tools: bool = True,
        stream_callback: Callable[[str], None] | None = None,
        patch_callback: Callable[[str, str], str | None] | None = None,
        rag_engine: RagEngine | None = None,
        *,
        context: ExecutionContext | None = None,
        system_prompt: str | None = None,
        tier: str | None = None,
        refresher: Refresher | None = None,
        cancel: CancelToken | None = None,
        fit_context: ContextFit | None = None,
        answer_schema: dict[str, Any] | None = None,
        conversation: str | None = None,
        conversation_kind: str = "chat",
        ticket: str = "",
        memory_block: Callable[[MemoryBudget, bool], str] | None = None,
        tools: Sequence[str] | None = None,
        images: ImageSet | None = None,
    ) -> str:
        """Send ``user_message`` with ``md_content`` as context; returns the model's final text.

        ``refresher`` reports files that changed after each tool round (default: a
        :class:`FileRefresher` over ``file_items``). ``cancel`` stops the send: it raises
        :class:`~manual_slop.cancel.RequestCancelled` with the answer as far as it got.
        ``fit_context`` (instead of ``md_content``) compiles the context for the room each
        provider of the chain has (:func:`~manual_slop.ai.windows.budget_for`); what it raises
        (a context that cannot fit) ends the send before any call. ``answer_schema``: the answer
        is one JSON object of this schema (the local model is held to it by a grammar).
        ``conversation`` names the conversation the send continues (default
        :data:`DEFAULT_CONVERSATION`); no send touches another conversation. ``memory_block(budget,
        first_request)`` gives the memory section of the system prompt for the active provider's
        budget (profile, notes, recall; see ``memory.service``). ``tools``: only these tools are
        offered and run (an agent's allowed tools; default every tool). ``images``: the context's
        screenshots (:func:`manual_slop.context.images.prepare_images`); each provider gets those it
        takes, and every other one is refused in the comms log and a warning (:mod:`ai.images`).

        Raises ProviderError (classified; ``ui_message()`` for the user) when every provider
        in the chain failed, ConfigurationError for unusable settings.
        """
        with self._send_lock, record_run(
            self.runs, conversation or DEFAULT_CONVERSATION, conversation_kind, ticket=ticket,
            tier=tier or "", provider=self.provider, model=self.model,
        ):  # fmt: skip
            previous_tier = get_current_tier()
            if tier is not None:
                set_current_tier(tier)
            try:
                return self._send_locked(
                    md_content,
                    user_message,
                    base_dir=base_dir,
                    file_items=file_items,
                    discussion_history=discussion_history,
                    stream=stream,
                    pre_tool_callback=pre_tool_callback,
                    qa_callback=qa_callback,
                    enable_tools=enable_tools,
                    stream_callback=stream_callback,
                    patch_callback=patch_callback,
                    rag_engine=rag_engine,
                    context=context,
                    system_prompt=system_prompt,
                    keep_history=True,
                    refresher=refresher,
                    cancel=cancel,
                    fit_context=fit_context,
                    answer_schema=answer_schema,
                    conversation_id=conversation or DEFAULT_CONVERSATION,
                    conversation_kind=conversation_kind,
                    ticket=ticket,
                    memory_block=memory_block,
                    tools=tools,
                    images=images,
                )
            finally:
                set_current_tier(previous_tier)

    def _send_locked(
        self,
        md_content: str,
        user_message: str,
        *,
        base_dir: str,
        file_items: Sequence[Any] | None,
        discussion_history: str,
        stream: bool,
        pre_tool_callback: PreToolCallback | None,
        qa_callback: Callable[[str], str | None] | None,
        enable_tools: bool,
        stream_callback: Callable[[str], None] | None,
        patch_callback: Callable[[str, str], str | None] | None,
        rag_engine: RagEngine | None,
        context: ExecutionContext | None,
        system_prompt: str | None,
        keep_history: bool,
        refresher: Refresher | None = None,
        cancel: CancelToken | None = None,
        fit_context: ContextFit | None = None,
        answer_schema: dict[str, Any] | None = None,
        conversation_id: str = DEFAULT_CONVERSATION,
        conversation_kind: str = "chat",
        ticket: str = "",
        memory_block: Callable[[MemoryBudget, bool], str] | None = None,
        tools: Sequence[str] | None = None,
        summary: bool = False,
        images: ImageSet | None = None,
    ) -> str:
        with self._settings_lock:
            settings = self.settings.copy()
        if summary:  # a summary-phase sub-call answers within the token profile's summary limit
            settings.max_tokens = settings.summary_limit()
        if self._abort.is_set():  # (clear takes the Event's condition lock: only when needed)
            self._abort.clear()
        cancel = cancel if cancel is not None else CancelToken()
        self._active_cancel = cancel  # cleanup() stops it
        self.last_usage = Usage()
        run = active_run() if keep_history else NO_RUN  # sub-calls are no runs of their own
        redact = self.redact_callback or str  # no redactor: the text as it is
        user_message, discussion_history = redact(user_message), redact(discussion_history)
        prompt = system_prompt if system_prompt is not None else settings.system_prompt

        passages: list[str] = []  # the index's passages: asked once per send, on first use

        def retrieved() -> str:
            if not passages:
                found = "" if rag_engine is None else retrieve(user_message, rag_engine, self._append_comms)
                passages.append(found)
            return passages[0]

        def with_context(markdown: str) -> tuple[str, str]:  # (context, system text) as sent
            markdown = redact(append_retrieved(markdown, retrieved()))
            return markdown, redact(system_text(prompt, markdown, memory_text))

        refresher = refresher if refresher is not None else FileRefresher(file_items, base_dir)
        chain = self._chain(settings)
        if not keep_history:  # a sub-call: a conversation of its own, never continued
            conversation_id, conversation_kind = f"sub:{uuid.uuid4().hex[:16]}", "subcall"
        conversation = self.conversations.open(
            conversation_id, kind=conversation_kind, tier=get_current_tier() or "", ticket=ticket
        )
        started_with = len(conversation)
        memory_text = ""  # profile, notes, recall: after the prompt, never part of its dedup check
        if memory_block is not None:  # profile, notes, recall: sized for the active provider
            active = self._instance(chain[0], settings.config_for(chain[0]))
            fixed = estimate_tokens(len(prompt) + len(md_content))
            budget = self._compactor(settings, active, cancel).budget(active.budget()[1], fixed)
            memory_text = memory_block(budget, started_with == 0)
        # (context, system text) as sent; with fit_context, compiled for each provider's room below
        prepared = with_context(md_content) if fit_context is None else ("", "")
        passed_over: list[str] = []  # why the answer does not come from the active provider
        if chain[0] != settings.provider:
            passed_over.append(f"{settings.provider} has no API key")
        exec_context = self._exec_context(context, base_dir, pre_tool_callback) if enable_tools else None
        if exec_context is not None:
            exec_context = dataclasses.replace(exec_context, conversation=conversation_id)
        if exec_context is not None and exec_context.abort is not None:
            cancel.on_cancel(exec_context.abort.set)  # running and pending tool calls stop too
        last_error: AIError | None = None
        for index, name in enumerate(chain):
            config = settings.config_for(name)
            self._current = (name, config.model)
            provider = self._instance(name, config)
            if self._session_of.get(name) != conversation_id:  # its session caches another conversation
                provider.reset()
                self._session_of[name] = conversation_id
            first = (
                f"{discussion_history.strip()}\n\n---\n\n{user_message}"
                if discussion_history.strip() and not started_with
                else user_message
            )
            context_md, system = prepared
            sent_images = admit(images, provider.image_support, provider.name).report(
                lambda payload: self._append_comms("OUT", "images", payload),
                lambda notice: self._notify("warning", notice),
            )
            if fit_context is not None or context_md:  # the context this provider's window has room for
                budget = budget_for(
                    provider,
                    instructions=system_text(prompt, "", memory_text),
                    tools=self._tool_text(provider) if enable_tools else "",
                    message=first,
                    history=conversation.text() if len(conversation) == started_with else "",
                    image_tokens=image_tokens(sent_images, provider.image_support),
                )
                if fit_context is not None:
                    fitted, fitted_refresher = fit_context(budget)
                    context_md, system = with_context(fitted)
                    refresher = fitted_refresher or refresher
                elif budget.count(context_md) > budget.available:
                    context_md, system = self._shrunk(md_content, budget, with_context)
            setup = LoopSetup(
                system=system,
                context=context_md,
                user_message=first,
                prompt=user_message,
                answer_schema=answer_schema,
                registry=(self.registry() if tools is None else self.registry().subset(tools))
                if enable_tools
                else None,
                exec_context=exec_context,
                trunc_limit=settings.history_trunc_limit,
                refresher=refresher,
                redact=redact,
                cancel=cancel,
                stream=StreamSink(
                    stream_callback
                    if stream_callback is not None
                    else ((lambda _t: None) if stream else None)
                ),
                retry=self.retry,
                log=self._append_comms,
                events=self.events,
                wait=self._abort.wait,
                qa_callback=qa_callback,
                patch_callback=patch_callback,
                usage=self.last_usage,
                abort=exec_context.abort if exec_context is not None else None,
                # abspath, not resolve: no file-system calls on every send
                base_dir=str(exec_context.base_dir)
                if exec_context is not None
                else os.path.abspath(base_dir),
                on_tool_call=(
                    exec_context.on_tool_call
                    if exec_context is not None
                    else self._record_tool_call(self.tool_log_callback)
                ),
                # a fallback continues the turn the failed provider began (its tool work kept)
                continuing=len(conversation) > started_with,
                compactor=self._compactor(settings, provider, cancel),
                guard=GuardLimits(settings.guard_repeat_warn, settings.guard_repeat_refuse),
                images=sent_images,
            )
            try:
                # the one in-process model answers one request at a time, whichever fork asks
                with self._family.local_lock if name == "local" else contextlib.nullcontext():
                    loop = ToolLoop(provider, conversation, setup)
                    run.attach(loop, prompt=prompt, memory=memory_text, tools=tools)
                    text = loop.run()
            except RequestCancelled:
                raise  # a stop is not a failure: no fallback
            except AIError as error:
                last_error = error
                passed_over.append(f"{name} failed ({error.brief()})")
                if index + 1 < len(chain):
                    reason = error.ui_message().replace("\n\n", " ")
                    self._append_comms(
                        "OUT", "fallback", {"from": name, "to": chain[index + 1], "reason": reason}
                    )
                    self._notify(
                        "warning", f"{name} failed ({error.brief()}); falling back to {chain[index + 1]}"
                    )
                continue
            return Answer(text, name, provider.answering_model(), "; ".join(passed_over), loop.limit_hit)
        assert last_error is not None
        self.conversations.error(conversation_id, last_error.brief(), kind=type(last_error).__name__)
        raise last_error

    def _compactor(self, settings: ClientSettings, provider: Provider, cancel: CancelToken) -> Compactor:
        """The conversation's compaction on ``provider`` (and the memory budget it splits)."""
        return Compactor(
            self._summarizer(provider, cancel, settings.summary_limit()),
            budget_tokens=settings.memory_budget_tokens,
            split=settings.memory_split,
            history_window=settings.history_window,
        )

    def _summarizer(
        self, provider: Provider, cancel: CancelToken, summary_limit: int
    ) -> Callable[[str, str], tuple[str, Usage]]:
        """The compaction sub-call: one text-only call on ``provider`` within ``summary_limit``
        tokens, stored as its own conversation."""

        def summarize(instructions: str, text: str) -> tuple[str, Usage]:
            sub = self.conversations.open(f"sub:{uuid.uuid4().hex[:16]}", kind="subcall")
            sub.add(Message.user(text))
            request = ModelRequest(
                system=instructions,
                context="",
                messages=list(sub.messages),
                tool_choice=ToolChoice.NONE,
                cancel=cancel,
            )
            self._append_comms("OUT", "request", {"message": "(compaction summary)", "chars": len(text)})
            config = provider.config
            provider.reconfigure(dataclasses.replace(config, max_tokens=summary_limit))  # the summary phase
            try:
                reply = provider.generate(request)
            finally:
                provider.reconfigure(config)
                provider.reset()  # its session now holds the sub-call; the next call rebuilds it
            sub.add(Message.assistant(reply.text), reply.usage)
            self.last_usage.add(reply.usage)
            return reply.text, reply.usage

        return summarize

    def _shrunk(
        self, md_content: str, budget: RequestBudget, with_context: Callable[[str], tuple[str, str]]
    ) -> tuple[str, str]:
        """A context compiled without knowing the model (MMA tiers), cut to its room if over."""
        shrunk, cut = shrink_markdown(md_content, budget)
        if cut:
            self._append_comms("OUT", "context", {"left_out": cut, "window": budget.window})
            self._notify(
                "warning",
                f"context: {len(cut)} file(s) left out to fit {budget.describe()}: {', '.join(cut[:4])}"
                + ("…" if len(cut) > 4 else ""),
            )
        return with_context(shrunk)

    def _tool_text(self, provider: Provider) -> str:
        """The tool declarations as ``provider``'s model reads them (for counting its window)."""
        return provider.tool_text(self.registry().declarations("openai"))

    def _exec_context(
        self, context: ExecutionContext | None, base_dir: str, pre_tool_callback: PreToolCallback | None
    ) -> ExecutionContext:
        if context is None:
            context = ExecutionContext.for_directory(base_dir)
        callback = pre_tool_callback or context.pre_tool_callback or self.confirm_and_run_callback
        return dataclasses.replace(
            context,
            pre_tool_callback=within_run(callback),  # its dialogs belong to the send's run
            tier=context.tier or get_current_tier(),
            on_tool_call=self._record_tool_call(context.on_tool_call or self.tool_log_callback),
            abort=context.abort or threading.Event(),
        )

    # =====================================================================================
    # text-only helpers for later features (tools disabled, history untouched)
    # =====================================================================================
    def _one_shot(self, instructions: str, prompt: str, *, summary: bool = True) -> str:
        with self._send_lock:
            return self._send_locked(
                "",
                prompt,
                base_dir=".",
                file_items=None,
                discussion_history="",
                stream=False,
                pre_tool_callback=None,
                qa_callback=None,
                enable_tools=False,
                stream_callback=None,
                patch_callback=None,
                rag_engine=None,
                context=None,
                system_prompt=instructions,
                keep_history=False,
                summary=summary,
            )

    def run_text(self, instructions: str, prompt: str) -> str:
        """One text-only sub-call (tools off, a conversation of its own): profile learning and
        other helpers that need a model's short answer."""
        return self._one_shot(instructions, prompt)

    def run_discussion_compression(self, discussion_text: str) -> str:
        """A summary of ``discussion_text`` that can replace it in later requests."""
        return self._one_shot(COMPRESSION_PROMPT, discussion_text)

    def run_subagent_summarization(self, file_path: str, content: str, is_code: bool, outline: str) -> str:
        """A model-written summary of one file (for files too large to send whole)."""
        return self._one_shot(SUMMARY_PROMPT, summary_request(file_path, content, is_code, outline))

    def run_tier4_patch_generation(self, error: str, file_context: str) -> str:
        """A unified diff proposed to fix ``error`` given ``file_context`` (text only)."""
        return self._one_shot(
            PATCH_PROMPT, f"Error:\n```\n{error}\n```\n\nFiles:\n{file_context}", summary=False
        )

    # =====================================================================================
    # models, sessions, caches
    # =====================================================================================
    def list_models(self, provider: str | None = None) -> list[str]:
        """The models ``provider`` (default: the active one) offers; safe from any thread."""
        with self._settings_lock:
            settings = self.settings.copy()
        name = provider_name(provider or settings.provider)
        temporary = provider_class(name)(settings.config_for(name), self._hooks())
        try:
            return temporary.list_models()
        finally:
            temporary.close()

    def reset_session(self, conversation: str | None = None) -> None:
        """Drop the provider sessions (and their server-side caches) and the cached
        ``conversation`` (default: every one). Conversations in a memory store are rebuilt
        from it on the next send; without a store they are forgotten."""
        with self._send_lock:
            for provider in self._providers.values():
                provider.reset()
                provider.cleanup()
            self._session_of.clear()
            self.conversations.forget(conversation)
            self.last_usage = Usage()
        self._append_comms("OUT", "notice", {"message": "session reset"})

    def cleanup(self, timeout: float = 2.0) -> None:
        """Stop the send in flight, delete server-side caches and close connections (at shutdown).

        Waits at most ``timeout`` s for the send to end; a send that does not is left to die
        with the process (its caches are not deleted), so quitting never hangs on a model."""
        self._abort.set()  # a send waiting to retry gives up
        active = self._active_cancel
        if active is not None:
            active.cancel("the app is shutting down")
        if not self._send_lock.acquire(timeout=timeout):
            log.warning("a send did not stop within %.1f s; server-side caches were not deleted", timeout)
            return
        try:
            for provider in self._providers.values():
                try:
                    provider.cleanup()
                finally:
                    provider.close()
        finally:
            self._send_lock.release()

    def cache_info(self) -> dict[str, Any]:
        """Server-side cache state of each provider that has one (Gemini: name, age, file paths)."""
        return {name: p.cache_info() for name, p in self._providers.items() if p.cache_info()}

    def get_token_usage(self) -> dict[str, int]:
        """Tokens of the last send (summed over its rounds): input, output, cache read and write."""
        return self.last_usage.to_dict()

    def history(self, conversation: str = DEFAULT_CONVERSATION) -> Conversation:
        """The conversation ``conversation`` (default: the one of sends that name none)."""
        return self.conversations.open(conversation)


@dataclasses.dataclass(slots=True)
class _Family:
    """What a client shares with its forks: the in-process local model and the lock that lets
    one request at a time use it."""

    local: Provider | None = None
    local_lock: threading.RLock = dataclasses.field(default_factory=threading.RLock)


ai_client = AIClient()
