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
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from manual_slop.mma.errors import Aborted
from manual_slop.mma.models import TierUsage
from manual_slop.threads import DaemonThreadExecutor

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
    ) -> str: ...

    def last_usage(self) -> TokenUsage: ...


@dataclass(frozen=True, slots=True)
class ContextRequest:
    """What a Tier 3 worker's context is built from (snapshotted on the main thread)."""

    focus_files: tuple[str, ...]
    base_dir: Path
    project_files: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()


ContextBuilder = Callable[[ContextRequest], str]


@dataclass(slots=True)
class MMAServices:
    """The AI client and context builder the orchestrator uses (None = not wired yet)."""

    client: TierClient | None = None
    context_builder: ContextBuilder | None = None


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
    ) -> str:
        """Send once as ``tier`` in a fresh session; Aborted when ``abort`` is set first."""
        if abort is not None and abort.is_set():
            raise Aborted(f"{tier} call aborted before it started")
        future = self._executor.submit(
            self._send, tier, md_content, message, model, base_dir, enable_tools, step_gate, abort
        )
        while True:
            try:
                return future.result(timeout=POLL_S)
            except concurrent.futures.TimeoutError:
                if abort is not None and abort.is_set():
                    raise Aborted(f"{tier} call aborted while waiting for the provider") from None

    def _send(
        self,
        tier: str,
        md_content: str,
        message: str,
        model: str,
        base_dir: str,
        enable_tools: bool,
        step_gate: StepGate | None,
        abort: threading.Event | None,
    ) -> str:
        with self._session_lock:
            if abort is not None and abort.is_set():
                raise Aborted(f"{tier} call aborted while waiting for the session")
            client = self.client
            client.reset_session()
            client.set_current_tier(tier)
            try:
                return client.send(
                    md_content,
                    message,
                    model=model,
                    base_dir=base_dir,
                    enable_tools=enable_tools,
                    step_gate=step_gate,
                )
            finally:
                usage = client.last_usage()
                self.usage.add(tier, usage.input_tokens, usage.output_tokens, model)
                client.set_current_tier(None)

    def active_sends(self) -> list[threading.Thread]:
        return self._executor.active()

    def shutdown(self, timeout: float = 0.5) -> list[threading.Thread]:
        """Refuse new calls; wait up to ``timeout`` s for running sends; returns those still alive."""
        self._executor.shutdown(wait=True, timeout=timeout)
        return self._executor.active()


class AIClientAdapter:
    """Makes the app's ``ai_client`` (issue 5's ``send`` signature) a :class:`TierClient`.

    ``usage`` reads the last call's tokens (a mapping with ``input_tokens`` /
    ``output_tokens``, or ``input`` / ``output``); ``select_model(model)`` switches
    the model before a send when a tier names one. The step gate is offered to the
    client as its ``pre_tool_callback`` in the tools contract's shape: it receives
    an ``ApprovalRequest`` (``.call.name``, ``.call.args``, ``.preview``) and returns
    an ``ApprovalResult(approved, args, reason)`` built with ``result_type``.
    """

    def __init__(
        self,
        client: Any,
        *,
        usage: Callable[[], Mapping[str, int]] | None = None,
        select_model: Callable[[str], None] | None = None,
        result_type: Callable[..., Any] | None = None,
    ) -> None:
        self._client = client
        self._usage = usage
        self._select_model = select_model
        self._result_type = result_type

    def reset_session(self) -> None:
        self._client.reset_session()

    def set_current_tier(self, tier: str | None) -> None:
        self._client.set_current_tier(tier)

    def send(
        self,
        md_content: str,
        user_message: str,
        *,
        model: str = "",
        base_dir: str = ".",
        enable_tools: bool = True,
        step_gate: StepGate | None = None,
    ) -> str:
        if model and self._select_model is not None:
            self._select_model(model)
        callback = self._pre_tool_callback(step_gate) if step_gate is not None else None
        return self._client.send(
            md_content, user_message, base_dir=base_dir, enable_tools=enable_tools, pre_tool_callback=callback
        )

    def last_usage(self) -> TokenUsage:
        if self._usage is None:
            return TokenUsage()
        raw = self._usage() or {}
        return TokenUsage(
            int(raw.get("input_tokens", raw.get("input", 0)) or 0),
            int(raw.get("output_tokens", raw.get("output", 0)) or 0),
        )

    def _pre_tool_callback(self, gate: StepGate) -> Callable[[Any], Any]:
        result_type = self._result_type
        if result_type is None:
            from manual_slop.tools.registry import ApprovalResult  # lands with the tools package

            result_type = ApprovalResult

        def callback(request: Any) -> Any:
            verdict = gate(
                StepRequest(request.call.name, dict(request.call.args), getattr(request, "preview", ""))
            )
            return result_type(approved=verdict.approved, args=verdict.args, reason=verdict.reason)

        return callback
