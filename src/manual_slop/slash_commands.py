"""Slash commands typed in the message box (or sent through ``POST /api/send``).

``/agent [key|none]``, ``/tokens [profile | <phase> <n>]``, ``/extreme`` and ``/plan <goal>``
are handled here instead of being sent to a model; any other text, including text that
merely starts with a slash ("/usr/bin is ..."), is an ordinary message. A command's answer
is recorded as a finished request, so it reads back like any answer (``GET
/api/requests/{id}``), and shows in the Response panel; commands never enter the discussion.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from manual_slop.automation import InvalidValue
from manual_slop.token_profiles import TokenProfileError, TokenProfiles, describe, parse_tokens_command

__all__ = ["COMMANDS", "CommandHost", "command_of", "run_command"]

COMMANDS: dict[str, str] = {
    "/agent": "/agent [key|none] — show the agents, or choose the one chat runs as",
    "/tokens": "/tokens [balanced|extreme|custom | <phase> <tokens>] — show or set the token limits",
    "/extreme": "/extreme — switch to the extreme token profile",
    "/plan": "/plan <goal> — plan the goal as subtasks for agents, run them, merge and judge",
}
_COMMAND = re.compile(r"(/[a-z]+)(?:\s+(.*))?\Z", re.DOTALL)


class CommandHost(Protocol):
    """The controller as commands use it (it imports this module, so only its shape here)."""

    state: Any
    requests: Any

    def update_request(self, request_id: str, **changes: Any) -> None: ...

    def set_ai_status(self, status: str) -> None: ...

    def publish(self, event_type: str, payload: Mapping[str, Any] | None = None) -> int: ...


def command_of(prompt: str) -> tuple[str, str] | None:
    """``(command, arguments)`` when ``prompt`` is one of :data:`COMMANDS`, else None."""
    match = _COMMAND.match(prompt.strip())
    if match is None or match.group(1) not in COMMANDS:
        return None
    return match.group(1), (match.group(2) or "").strip()


def run_command(ctrl: CommandHost, command: str, args: str, prompt: str) -> str:
    """Run a command (main thread); the id of the request that records its answer.
    InvalidValue names what is wrong with its arguments (nothing changes then)."""
    if command == "/plan":
        plans = getattr(ctrl, "plans", None)
        if plans is None:
            raise InvalidValue("/plan is not available in this app")
        plan_id = plans.start(args)
        text = (
            f"Plan {plan_id}: the planner is writing a plan for this goal. It will be shown for your "
            "approval before anything runs; follow it in the MMA dashboard."
        )
        return _record(ctrl, prompt, text)
    handler = _HANDLERS[command]
    text = handler(ctrl, args)
    return _record(ctrl, prompt, text)


def _agent(ctrl: CommandHost, args: str) -> str:
    binding = _agents(ctrl)
    if not args:
        catalog = binding.reload()
        lines = [f"Active agent: {ctrl.state.active_agent or 'none'}"]
        lines += [f"- {a.key}: {a.description or '(no description)'}" for a in catalog.agents.values()]
        lines += [f"! {p.key or p.path}: {p.reason}" for p in catalog.problems]
        return "\n".join(lines)
    key = "" if args.lower() == "none" else args
    binding.reload()
    binding.set_active(key)
    return f"Active agent: {key or 'none'}"


def _tokens(ctrl: CommandHost, args: str) -> str:
    binding = _agents(ctrl)
    try:
        profiles = parse_tokens_command(args, binding.token_profiles())
    except TokenProfileError as exc:
        raise InvalidValue(str(exc)) from None
    binding.set_token_profile(profiles)
    return describe(profiles, ctrl.state.max_tokens)


def _extreme(ctrl: CommandHost, args: str) -> str:
    if args:
        raise InvalidValue("/extreme takes no arguments")
    binding = _agents(ctrl)
    profiles = TokenProfiles("extreme", binding.token_profiles().custom)
    binding.set_token_profile(profiles)
    return describe(profiles, ctrl.state.max_tokens)


_HANDLERS: dict[str, Callable[[CommandHost, str], str]] = {
    "/agent": _agent,
    "/tokens": _tokens,
    "/extreme": _extreme,
}


def _agents(ctrl: CommandHost) -> Any:  # an agents.bindings.AgentsBinding
    binding = getattr(ctrl, "agents", None)
    if binding is None:
        raise InvalidValue("agent profiles are not available in this app")
    return binding


def _record(ctrl: CommandHost, prompt: str, text: str) -> str:
    request_id = uuid.uuid4().hex
    ctrl.requests.add(request_id, prompt)
    ctrl.update_request(request_id, state="done", response=text, finished=time.time())
    ctrl.state.ai_response = text
    ctrl.set_ai_status("done")
    ctrl.publish("response", {"request_id": request_id, "text": text, "status": "done"})
    return request_id
