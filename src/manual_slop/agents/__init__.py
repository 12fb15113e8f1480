"""Agent profiles: ``agents/<key>/`` folders (prompt, description, memory categories,
workspace, optional ``agent.toml``) read by one loader, and the active agent that shapes
chat requests and plan subtasks. See docs/guide_plan.md."""

from __future__ import annotations

from manual_slop.agents.profiles import (
    AgentCatalog,
    AgentProfile,
    ProfileError,
    ProfileProblem,
    load_catalog,
    load_profile,
    profile_from_dict,
    save_profile,
)

__all__ = [
    "AgentCatalog",
    "AgentProfile",
    "ProfileError",
    "ProfileProblem",
    "load_catalog",
    "load_profile",
    "profile_from_dict",
    "save_profile",
]
