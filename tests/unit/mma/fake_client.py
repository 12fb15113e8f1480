"""A scripted stand-in for the AI client that implements the MMA TierClient protocol.

It records every send (tier, model, thread, start and end times) so tests can
assert what the engine did; ``respond`` decides each answer, and ``hold`` can keep
sends blocked (a provider call that hangs). With ``comms`` (a controller's ``add_comms_entry``)
each answered send also logs the ``response`` entry the real client would (provider, model,
tier, conversation, ticket and ``usage``: ``usage_for`` scripts it), so the usage ledger sees it.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from manual_slop.mma.client import StepGate, StepRequest, TokenUsage

Responder = Callable[["Call"], str]


@dataclass(slots=True)
class Call:
    tier: str | None
    model: str
    md: str
    message: str
    thread: str
    started: float
    ended: float = 0.0
    step_gate: StepGate | None = None
    answer: str = ""
    tool_observer: Callable[[dict[str, Any]], None] | None = None
    answer_schema: dict[str, Any] | None = None  # what a grammar would hold the answer to
    workspace: Callable[[], Path] | None = None  # a ticket attempt's scratch tree (made on first use)

    @property
    def ticket_id(self) -> str | None:
        match = re.search(r"^Ticket (\S+):", self.message, re.MULTILINE)
        return match.group(1) if match else None

    def tree(self) -> Path:
        """The folder this call's tools work in: the attempt's scratch tree (what the real
        client's tools would edit; a test writes there as a successful tool call would)."""
        assert self.workspace is not None, "this call has no scratch tree"
        return self.workspace()

    def write(self, name: str, text: str) -> None:
        """A successful ``write_file`` in the tree, as the tool log would report it."""
        verdict = self.step("write_file", {"path": name, "content": text})
        if verdict.approved:
            path = self.tree() / verdict.args["path"]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(verdict.args["content"])
            self.ran("write_file")
        else:
            self.ran("write_file", "rejected", message=verdict.reason)

    def step(self, tool: str, args: dict[str, Any]) -> Any:
        assert self.step_gate is not None, "tools are off for this call"
        return self.step_gate(StepRequest(tool, args))

    def ran(self, tool: str, status: str = "success", *, mutating: bool = True, message: str = "") -> None:
        """Report a tool call as the real client's tool log would (what the worker checks)."""
        if self.tool_observer is not None:
            entry = {"tool": tool, "status": status, "mutating": mutating}
            if message:
                entry["message"] = message
            self.tool_observer(entry)


def default_responder(call: Call) -> str:
    if call.tier == "Tier 1":
        return (
            'Sure.\n```json\n{"tracks": [{"title": "Core", "description": "do it", "priority": "high"}]}\n```'
        )
    if call.tier == "Tier 2":
        tickets = [
            {"id": "a", "description": "first", "depends_on": []},
            {"id": "b", "description": "second", "depends_on": ["a"]},
        ]
        return json.dumps({"tickets": tickets})
    if call.tier == "Tier 4":
        return "QA: the test expects 2"
    return f"done {call.ticket_id}"


@dataclass
class FakeTierClient:
    respond: Responder = default_responder
    hold: threading.Event | None = None  # when given, sends wait for it (up to hold_timeout)
    hold_timeout: float = 10.0
    delay: float = 0.0
    calls: list[Call] = field(default_factory=list)
    resets: int = 0
    conversations: list[tuple[str, str]] = field(default_factory=list)  # (conversation, ticket) per send
    comms: Callable[[dict[str, Any]], Any] | None = None
    provider: str = "gemini"
    provider_for: Callable[[Call], str] | None = None  # a send's provider (default: ``provider``)
    usage_for: Callable[[Call], dict[str, int]] | None = None  # a send's usage (default: chars / 4)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _local: threading.local = field(default_factory=threading.local)

    def reset_session(self) -> None:
        with self._lock:
            self.resets += 1

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
        cancel: object = None,  # the real client's cancel token; the script decides here
        tool_observer: Callable[[dict[str, Any]], None] | None = None,
        answer_schema: dict[str, Any] | None = None,
        conversation: str = "",
        ticket: str = "",
        workspace: Callable[[], Path] | None = None,
    ) -> str:
        self.conversations.append((conversation, ticket))
        call = Call(
            getattr(self._local, "tier", None),
            model,
            md_content,
            user_message,
            threading.current_thread().name,
            time.monotonic(),
            step_gate=step_gate if enable_tools else None,
            tool_observer=tool_observer if enable_tools else None,
            answer_schema=answer_schema,
            workspace=workspace if enable_tools else None,
        )
        with self._lock:
            self.calls.append(call)
        self._local.usage = TokenUsage(len(md_content + user_message) // 4, 0)
        try:
            if self.hold is not None:
                self.hold.wait(self.hold_timeout)
            if self.delay:
                time.sleep(self.delay)
            call.answer = self.respond(call)
            usage = {
                "input_tokens": len(md_content + user_message) // 4,
                "output_tokens": max(1, len(call.answer) // 4),
            }
            if self.usage_for is not None:
                usage = self.usage_for(call)
            self._local.usage = TokenUsage(usage.get("input_tokens", 0), usage.get("output_tokens", 0))
            if self.comms is not None:
                self.comms(
                    {
                        "direction": "IN",
                        "kind": "response",
                        "provider": self.provider if self.provider_for is None else self.provider_for(call),
                        "model": model,
                        "source_tier": call.tier,
                        "conversation": conversation,
                        **({"ticket": ticket} if ticket else {}),
                        "payload": {"text": call.answer, "usage": usage},
                    }
                )
            return call.answer
        finally:
            call.ended = time.monotonic()

    def last_usage(self) -> TokenUsage:
        return getattr(self._local, "usage", TokenUsage())

    def tier_calls(self, tier: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.tier == tier]
