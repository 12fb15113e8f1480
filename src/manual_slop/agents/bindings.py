"""Agent profiles and token profiles in the app: fields, actions and the active agent.

``ctrl.agents`` is an :class:`AgentsBinding`. The catalog is read from the project's and the
user's ``agents/`` folders when a project opens and after every change made here; the
active agent (``agents.active`` in the project file) shapes every chat request: its prompt
leads the system prompt, its ``agent.toml`` may choose provider, model, tools and token
profile, and its memory categories choose the notes that load by themselves.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from manual_slop.agents.profiles import (
    SCOPES,
    AgentCatalog,
    AgentProfile,
    ProfileError,
    check_key,
    delete_profile,
    load_catalog,
    profile_from_dict,
    save_profile,
)
from manual_slop.automation import ActionCall, InvalidValue
from manual_slop.schema import Field
from manual_slop.token_profiles import PHASES, PROFILES, TokenProfileError, TokenProfiles

if TYPE_CHECKING:
    from manual_slop.controller import AppController

__all__ = ["AgentsBinding", "register"]

log = logging.getLogger(__name__)

PROFILE_FIELDS = (
    "system_prompt",
    "description",
    "memory_categories",
    "workspace_slug",
    "provider",
    "model",
    "tools",
    "token_profile",
)


class AgentsBinding:
    """The catalog of the open project, the active agent and the token profiles (main thread)."""

    def __init__(self, ctrl: AppController) -> None:
        self.ctrl = ctrl
        self.catalog = AgentCatalog()

    # -- where profiles live ----------------------------------------------------------------------
    def root(self, scope: str) -> Path:
        if scope == "project":
            return self.ctrl.paths.project_file.parent
        if scope == "user":
            return self.ctrl.paths.config_file.parent
        raise InvalidValue(f"scope {scope!r}: expected one of {', '.join(SCOPES)}")

    def reload(self) -> AgentCatalog:
        """Read every profile again; the active agent is kept only while it exists."""
        self.catalog = load_catalog(self.root("project"), self.root("user"))
        state = self.ctrl.state
        state.agents = [a.summary() for a in sorted(self.catalog.agents.values(), key=lambda a: a.key)]
        state.agent_problems = [p.to_dict() for p in self.catalog.problems]
        for problem in self.catalog.problems:
            log.warning("agent profile refused: %s: %s", problem.path, problem.reason)
        return self.catalog

    def active(self) -> AgentProfile | None:
        key = self.ctrl.state.active_agent
        return self.catalog.get(key) if key else None

    def token_profiles(self) -> TokenProfiles:
        state = self.ctrl.state
        return TokenProfiles(state.token_profile, dict(state.token_custom))

    # -- changes (main thread) ---------------------------------------------------------------
    def set_active(self, key: str) -> None:
        key = key.strip()
        if key and self.catalog.get(key) is None:
            known = ", ".join(self.catalog.keys()) or "none"
            raise InvalidValue(f"no agent {key!r} (agents: {known})")
        self.ctrl.state.active_agent = key  # saved with the project at the next flush

    def save(self, key: str, values: Mapping[str, Any], scope: str = "project") -> AgentProfile:
        """Create or replace a profile from plain values; InvalidValue names the problem."""
        unknown = sorted(set(values) - set(PROFILE_FIELDS) - {"key", "scope"})
        if unknown:
            known = ", ".join(PROFILE_FIELDS)
            raise InvalidValue(f"agent {key}: unknown field(s) {', '.join(unknown)} (known: {known})")
        try:
            profile = profile_from_dict(
                key,
                values,
                scope=scope,
                known_tools=self.tool_names(),
                known_token_profiles=PROFILES,
            )
            save_profile(self.root(scope), profile)
        except (ProfileError, OSError) as exc:
            raise InvalidValue(str(exc)) from None
        self.reload()
        saved = self.catalog.get(profile.key)
        return saved or profile

    def delete(self, key: str, scope: str = "project") -> str:
        """Move a profile's folder aside; where it went."""
        try:
            moved = delete_profile(self.root(scope), check_key(key), self.root("project"))
        except (ProfileError, OSError) as exc:
            raise InvalidValue(str(exc)) from None
        self.reload()
        if self.ctrl.state.active_agent == key and self.catalog.get(key) is None:
            self.ctrl.state.active_agent = ""
        return str(moved)

    def set_token_profile(self, profiles: TokenProfiles) -> None:
        state = self.ctrl.state
        state.token_profile = profiles.active
        state.token_custom = dict(profiles.custom or {})  # saved with the config at the next flush

    # -- one request ----------------------------------------------------------------------------
    def apply_to_settings(self, settings: dict[str, Any], phase: str = "chat") -> AgentProfile | None:
        """Shape one request's settings for the active agent and the phase's token limit."""
        agent = self.active()
        profiles = self.token_profiles()
        if agent is not None and agent.token_profile:
            profiles = TokenProfiles(agent.token_profile, profiles.custom)
        apply_profile(settings, agent, profiles, phase)
        return agent

    def tool_names(self) -> list[str]:
        """The tools an agent may name: the AI client's (the built-in set without a client)."""
        registry = getattr(self.ctrl.backend, "registry", None)
        if callable(registry):
            return list(registry().names())
        from manual_slop.tools.registry import default_registry  # only when a profile is saved

        return default_registry().names()


def apply_profile(
    settings: dict[str, Any], agent: AgentProfile | None, profiles: TokenProfiles, phase: str
) -> None:
    """``settings`` (``ctrl.ai_settings()``) as ``agent`` sends a request of ``phase``."""
    try:
        settings["max_tokens"] = profiles.limit(phase, int(settings.get("max_tokens") or 1_000_000))
    except TokenProfileError as exc:  # an agent naming a profile that no longer exists
        log.warning("%s; the balanced profile is used", exc)
        settings["max_tokens"] = TokenProfiles().limit(phase, int(settings.get("max_tokens") or 1_000_000))
    if agent is None:
        return
    project_prompt = str(settings.get("system_prompt") or "")
    lead = agent.system_prompt.strip()  # the agent's role first, then the project's instructions
    settings["system_prompt"] = f"{lead}\n\n{project_prompt}" if project_prompt else lead
    if agent.provider and agent.provider != settings.get("provider"):
        entry = (settings.get("providers") or {}).get(agent.provider, {})
        settings["provider"] = agent.provider
        settings["model"] = entry.get("model", "")
        settings["base_url"] = entry.get("base_url", "")
        settings["api_key"] = entry.get("api_key")
    if agent.model:
        settings["model"] = agent.model
    settings["agent"] = agent.key


def register(ctrl: AppController) -> None:
    binding = AgentsBinding(ctrl)
    ctrl.agents = binding  # type: ignore[attr-defined]
    ctrl.on_project_opened(binding.reload)
    binding.reload()  # the project opened at start-up: its saved active agent must apply at once
    state = ctrl.state
    reg = ctrl.fields.register
    reg(
        "agents",
        Field(list, [], "Agent profiles: key, description, scope, provider, model, tools (read-only)"),
        lambda: [dict(a) for a in state.agents],
    )
    reg(
        "agent_problems",
        Field(list, [], "Folders under agents/ that are not valid profiles, with the reason (read-only)"),
        lambda: [dict(p) for p in state.agent_problems],
    )

    def set_active(value: Any) -> None:
        binding.set_active(str(value))

    reg(
        "active_agent",
        Field(str, "", "The agent normal chat runs as ('' = none); saved with the project"),
        lambda: state.active_agent,
        set_active,
    )

    def set_profile(value: Any) -> None:
        binding.set_token_profile(TokenProfiles(str(value), dict(state.token_custom)))

    reg(
        "token_profile",
        Field(str, "balanced", "Token profile: max_tokens per phase", choices=PROFILES),
        lambda: state.token_profile,
        set_profile,
    )
    reg(
        "token_limits",
        Field(dict, {}, "max_tokens each phase is sent with now (read-only)"),
        lambda: {p: binding.token_profiles().limit(p, state.max_tokens) for p in PHASES},
    )

    def save(call: ActionCall) -> None:
        data = _params("btn_agent_save", call.user_data)
        binding.save(str(data.get("key", "")), data, str(data.get("scope", "project")))

    def delete(call: ActionCall) -> None:
        data = _params("btn_agent_delete", call.user_data)
        binding.delete(str(data.get("key", "")), str(data.get("scope", "project")))

    ctrl.actions.register("btn_agents_reload", lambda call: binding.reload(), "Read the agent profiles again")
    ctrl.actions.register(
        "btn_agent_save",
        save,
        "Create or replace an agent profile: {key, scope?, system_prompt, description?, memory_categories?, "
        "workspace_slug?, provider?, model?, tools?, token_profile?}",
        Field(dict, {}),
    )
    ctrl.actions.register(
        "btn_agent_delete",
        delete,
        "Delete an agent profile (its folder moves to .slop_cache/deleted_agents): {key, scope?}",
        Field(dict, {}),
    )


def _params(action: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or not isinstance(value.get("key"), str):
        raise InvalidValue(f"{action}: expected an object with a 'key' string, got {str(value)[:80]}")
    scope = value.get("scope", "project")
    if scope not in SCOPES:
        raise InvalidValue(f"{action}: scope {scope!r} is not one of {', '.join(SCOPES)}")
    return value
