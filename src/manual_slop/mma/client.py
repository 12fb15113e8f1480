"""What the MMA tiers need from the AI side, and how each tier call is made.

The engine does not import the AI client or the context aggregator: it talks to
a :class:`TierClient` and a :data:`ContextBuilder` handed to it in
:class:`MMAServices`. Tests hand in fakes; the app hands in the real ``ai_client``
(through :class:`AIClientAdapter`) and ``build_tier3_context``.

:class:`TierCaller` makes one stateless tier call: on a send thread of its own it
takes the session lock (the client has one conversation, shared by all tiers),
resets the session (context amnesia), tags the thread with the tier, sends, and
adds the call's token usage to :class:`~manual_slop.mma.models.TierUsage`. The
caller waits for the result while watching its abort event, so an abort returns
at once even when the provider call itself cannot be interrupted; the orphaned
send finishes on its daemon thread and its answer is dropped.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from manual_slop.cancel import CancelToken, RequestCancelled
from manual_slop.mma.errors import Aborted
from manual_slop.mma.models import TierUsage
from manual_slop.threads import DaemonThreadExecutor
from manual_slop.tools.tool import ApprovalRequest, ApprovalResult

__all__ = [
    "AIClientAdapter",
    "ContextBuilder",
    "ContextRequest",
    "MMAServices",
    "StepGate",
    "StepRequest",
    "StepVerdict",
    "TierCaller",
    "TierClient",
    "TokenUsage",
    "ToolObserver",
    "WorkspaceOpener",
]

POLL_S = 0.02  # how often a waiting caller looks at its abort event


@dataclass(frozen=True, slots=True)
class TokenUsage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True)
class StepRequest:
    """A tool call a worker's model wants to make (a "step" the human approves)."""

    tool: str
    args: dict[str, Any]
    preview: str = ""  # a diff for edits, the script for shell calls


@dataclass(frozen=True, slots=True)
class StepVerdict:
    approved: bool
    args: dict[str, Any]  # possibly edited: these are what runs
    reason: str = ""


StepGate = Callable[[StepRequest], StepVerdict]
# makes (on first call) and returns the folder a send's tools work in: a ticket attempt's scratch tree
WorkspaceOpener = Callable[[], Path]
# sees the log entry of every tool call a send ran (tool, status, mutating, message ...)
ToolObserver = Callable[[dict[str, Any]], None]


@runtime_checkable
class TierClient(Protocol):
    """The AI client as the tiers use it (one conversation; calls serialized by the caller)."""

    def reset_session(self) -> None: ...

    def set_current_tier(self, tier: str | None) -> None: ...

    def send(
        self,
        md_content: str,
        user_message: str,
        *,
        model: str = "",
        base_dir: str = ".",
        enable_tools: bool = True,
        step_gate: StepGate | None = None,
        cancel: CancelToken | None = None,
        tool_observer: ToolObserver | None = None,
        answer_schema: dict[str, Any] | None = None,
        conversation: str = "",
        ticket: str = "",
        workspace: WorkspaceOpener | None = None,
    ) -> str: ...

    def last_usage(self) -> TokenUsage: ...


@dataclass(frozen=True, slots=True)
class ContextRequest:
    """What a Tier 3 worker's context is built from (snapshotted on the main thread)."""

    focus_files: tuple[str, ...]
    base_dir: Path
    project_files: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    query: str = ""  # what the ticket asks for: the project index's passages are chosen by it


ContextBuilder = Callable[[ContextRequest], str]


@dataclass(slots=True)
class MMAServices:
    """The AI client and context builder the orchestrator uses (None = not wired yet)."""

    client: TierClient | None = None
    context_builder: ContextBuilder | None = None


PARALLEL_TIER = "Tier 3"  # calls of this tier run on forks of the client, side by side


class TierCaller:
    """Stateless, abortable, accounted tier calls on one shared client."""

    def __init__(
        self, client: TierClient, usage: TierUsage, session_lock: threading.Lock | None = None
    ) -> None:
        self.client = client
        self.usage = usage
        self._session_lock = session_lock or threading.Lock()
        self._executor = DaemonThreadExecutor("slop-mma-send")

    def call(
        self,
        tier: str,
        md_content: str,
        message: str,
        *,
        model: str = "",
        base_dir: str = ".",
        enable_tools: bool = False,
        step_gate: StepGate | None = None,
        abort: threading.Event | None = None,
        tool_observer: ToolObserver | None = None,
        answer_schema: dict[str, Any] | None = None,
        ticket: str = "",
        workspace: WorkspaceOpener | None = None,
        on_usage: Callable[[TokenUsage], None] | None = None,
    ) -> str:
        """Send once as ``tier`` in a conversation of its own (``mma:<tier>:…``, stored like every
        conversation; no other conversation is touched); Aborted when ``abort`` is set first. An
        abort during the call stops the send itself (its cancel token), as the Stop button does.
        ``answer_schema``: the answer is one JSON object of it (see ``mma.schemas``). ``workspace``:
        the tools work in the folder it returns (a ticket attempt's scratch tree), not ``base_dir``;
        ``on_usage`` sees this call's token usage."""
        if abort is not None and abort.is_set():
            raise Aborted(f"{tier} call aborted before it started")
        token = CancelToken()
        future = self._executor.submit(
            self._send,
            tier,
            abort,
            md_content,
            message,
            model=model,
            base_dir=base_dir,
            enable_tools=enable_tools,
            step_gate=step_gate,
            cancel=token,
            tool_observer=tool_observer,
            answer_schema=answer_schema,
            ticket=ticket,
            on_usage=on_usage,
            **({"workspace": workspace} if workspace is not None else {}),
        )
        while True:
            try:
                return future.result(timeout=POLL_S)
            except RequestCancelled:
                raise Aborted(f"{tier} call aborted: {token.reason}") from None
            except concurrent.futures.TimeoutError:
                if abort is not None and abort.is_set():
                    token.cancel(f"the {tier} call was aborted")  # the provider lets go within a second
                    raise Aborted(f"{tier} call aborted while waiting for the provider") from None

    def _send(
        self,
        tier: str,
        abort: threading.Event | None,
        md_content: str,
        message: str,
        on_usage: Callable[[TokenUsage], None] | None = None,
        **send: Any,
    ) -> str:
        """``client.send(md_content, message, **send)`` as ``tier``, in a conversation of its own."""
        ticket = send.get("ticket", "")
        conversation = f"mma:{tier}:{ticket + ':' if ticket else ''}{uuid.uuid4().hex[:12]}"
        # Tier 3 workers run side by side, each on a fork of the client (its own provider session
        # and send lock); the other tiers take turns on the shared one
        fork_of = getattr(self.client, "fork", None) if tier == PARALLEL_TIER else None
        fork = fork_of() if fork_of is not None else None
        client = fork if fork is not None else self.client
        with contextlib.nullcontext() if fork is not None else self._session_lock:
            if abort is not None and abort.is_set():
                raise Aborted(f"{tier} call aborted while waiting for the session")
            client.set_current_tier(tier)
            try:
                return client.send(md_content, message, conversation=conversation, **send)
            finally:
                usage = client.last_usage()
                self.usage.add(tier, usage.input_tokens, usage.output_tokens, send.get("model", ""))
                client.set_current_tier(None)
                if on_usage is not None:
                    on_usage(usage)
                if fork is not None:
                    client.release()

    def active_sends(self) -> list[threading.Thread]:
        return self._executor.active()

    def shutdown(self, timeout: float = 0.5) -> list[threading.Thread]:
        """Refuse new calls; wait up to ``timeout`` s for running sends; returns those still alive."""
        self._executor.shutdown(wait=True, timeout=timeout)
        return self._executor.active()


class AIClientAdapter:
    """Makes the app's ``ai_client`` (``manual_slop.ai.client.AIClient``) a :class:`TierClient`.

    The tier tag is passed as ``send(..., tier=...)`` (the client tags its comms and tool
    entries with it); a tier model is set with ``set_provider(provider, model)`` for the call
    and the previous model restored after it; the step gate is offered as the client's
    ``pre_tool_callback`` in the tools contract's shape (``ApprovalRequest`` →
    ``ApprovalResult``), so every mutating tool call of a worker is a step; usage is
    ``get_token_usage()``. With a ``workspace`` the send's folder is the one it opens (a ticket's
    scratch tree): the tools' context (``context(folder)``: the project's path policy rebuilt
    for that folder), the shell's working directory and the file refresh all use it.
    """

    def __init__(
        self,
        client: Any,
        settings: Callable[[], Any] | None = None,
        context: Callable[[Path | None], Any] | None = None,
    ) -> None:
        self._client = client
        self._settings = settings  # the user's provider settings, applied before each call
        # builds the tools' ExecutionContext: the project's allowlist, for another folder if given
        self._context = context
        self._local = threading.local()

    def reset_session(self) -> None:
        self._client.reset_session()

    def fork(self) -> AIClientAdapter | None:
        """The same adapter on a fork of the client (:meth:`AIClient.fork`): sends that do not
        wait for the shared client's (None when the client cannot fork). :meth:`release` it after
        its call."""
        if not hasattr(self._client, "fork"):
            return None
        return AIClientAdapter(self._client.fork(), self._settings, self._context)

    def release(self) -> None:
        self._client.release()

    def set_current_tier(self, tier: str | None) -> None:
        self._local.tier = tier

    def send(
        self,
        md_content: str,
        user_message: str,
        *,
        model: str = "",
        base_dir: str = ".",
        enable_tools: bool = True,
        step_gate: StepGate | None = None,
        cancel: CancelToken | None = None,
        tool_observer: ToolObserver | None = None,
        answer_schema: dict[str, Any] | None = None,
        conversation: str = "",
        ticket: str = "",
        workspace: WorkspaceOpener | None = None,
    ) -> str:
        client = self._client
        if self._settings is not None:
            client.apply_settings(self._settings())
        callback = _pre_tool_callback(step_gate) if step_gate is not None else None
        extra: dict[str, Any] = {}
        folder = workspace() if enable_tools and workspace is not None else None
        if folder is not None:
            base_dir = str(folder)
        if enable_tools and self._context is not None:
            context = self._context(folder)
            if tool_observer is not None:
                logged = context.on_tool_call

                def on_tool_call(entry: dict[str, Any]) -> Any:
                    tool_observer(entry)
                    return logged(entry) if logged is not None else None

                context = dataclasses.replace(context, on_tool_call=on_tool_call)
            extra["context"] = context
        previous = client.model
        if model:
            client.set_provider(client.provider, model)
        try:
            return client.send(
                md_content,
                user_message,
                base_dir=base_dir,
                enable_tools=enable_tools,
                pre_tool_callback=callback,
                tier=getattr(self._local, "tier", None),
                cancel=cancel,
                answer_schema=answer_schema,
                conversation=conversation or None,
                conversation_kind="mma",
                ticket=ticket,
                **extra,
            )
        finally:
            if model and previous:
                client.set_provider(client.provider, previous)

    def last_usage(self) -> TokenUsage:
        raw = self._client.get_token_usage()
        return TokenUsage(int(raw.get("input_tokens", 0)), int(raw.get("output_tokens", 0)))


def _pre_tool_callback(gate: StepGate) -> Callable[[ApprovalRequest], ApprovalResult]:
    def callback(request: ApprovalRequest) -> ApprovalResult:
        verdict = gate(StepRequest(request.call.name, dict(request.call.args), request.preview))
        return ApprovalResult(verdict.approved, dict(verdict.args), verdict.reason)

    return callback
