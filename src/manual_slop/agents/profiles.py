"""Agent profiles: ``agents/<key>/`` folders of plain files, loaded by one loader.

A profile folder holds ``system_prompt.md`` (required), ``description.txt``,
``memory_categories.txt`` (one category per line), ``workspace_slug.txt`` and an optional
``agent.toml`` (``provider``, ``model``, ``tools``, ``token_profile``). The key is the folder's
name. Profiles come from the project's ``agents/`` and from the user's (beside
``config.toml``); a project profile hides a user profile of the same key. A folder that is not
a valid profile is listed as a :class:`ProfileProblem` with the reason; it never stops the
others from loading.

Writes are atomic per file; a deleted profile's folder is moved aside into the project cache
(``.slop_cache/deleted_agents/``), never destroyed.
"""

from __future__ import annotations

import re
import shutil
import time
import tomllib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from manual_slop.atomic_io import atomic_write_text
from manual_slop.config import PROVIDER_NAMES
from manual_slop.memory.notes import NoteError, check_category

__all__ = [
    "KEY_PATTERN",
    "MAX_FILE_BYTES",
    "SCOPES",
    "AgentCatalog",
    "AgentProfile",
    "ProfileError",
    "ProfileProblem",
    "check_key",
    "delete_profile",
    "load_catalog",
    "load_profile",
    "profile_from_dict",
    "save_profile",
]

KEY_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}"
MAX_FILE_BYTES = 256 * 1024  # a system prompt longer than this is a mistake, not a prompt
SCOPES: tuple[str, ...] = ("project", "user")
DELETED_DIR = Path(".slop_cache") / "deleted_agents"

_FILES = ("system_prompt.md", "description.txt", "memory_categories.txt", "workspace_slug.txt")
_TOML_KEYS = {"provider": str, "model": str, "tools": list, "token_profile": str}


class ProfileError(ValueError):
    """A profile the loader or a writer refuses; the message names the problem."""


@dataclass(frozen=True, slots=True)
class AgentProfile:
    """One agent: the prompt it runs with, what it remembers, which tools and model it uses."""

    key: str
    system_prompt: str
    description: str = ""
    memory_categories: tuple[str, ...] = ()
    workspace_slug: str = ""
    provider: str = ""  # '' = the active provider
    model: str = ""  # '' = the provider's model
    tools: tuple[str, ...] | None = None  # None = every tool
    token_profile: str = ""  # '' = the active token profile
    scope: str = "project"
    path: str = ""

    def summary(self) -> dict[str, Any]:
        """The profile without its prompt (lists, the planner's context)."""
        return {
            "key": self.key,
            "description": self.description,
            "scope": self.scope,
            "provider": self.provider or None,
            "model": self.model or None,
            "tools": list(self.tools) if self.tools is not None else None,
            "token_profile": self.token_profile or None,
            "memory_categories": list(self.memory_categories),
            "workspace_slug": self.workspace_slug,
        }

    def to_dict(self) -> dict[str, Any]:
        return {**self.summary(), "system_prompt": self.system_prompt, "path": self.path}


@dataclass(frozen=True, slots=True)
class ProfileProblem:
    """A folder under ``agents/`` that is not a valid profile, and why."""

    key: str
    scope: str
    path: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"key": self.key, "scope": self.scope, "path": self.path, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class AgentCatalog:
    """Every profile found (project over user) and every folder refused."""

    agents: Mapping[str, AgentProfile] = field(default_factory=dict)
    problems: tuple[ProfileProblem, ...] = ()

    def keys(self) -> list[str]:
        return sorted(self.agents)

    def get(self, key: str) -> AgentProfile | None:
        return self.agents.get(key)


def check_key(key: object) -> str:
    if not isinstance(key, str) or not re.fullmatch(KEY_PATTERN, key):
        raise ProfileError(
            f"agent key {str(key)[:70]!r}: 1-64 letters, digits, '_' or '-', starting with a letter or digit"
        )
    return key


# -- reading ------------------------------------------------------------------------------------
def load_catalog(project_dir: Path | None, user_dir: Path | None) -> AgentCatalog:
    """Profiles under ``<project_dir>/agents`` and ``<user_dir>/agents`` (project wins)."""
    agents: dict[str, AgentProfile] = {}
    problems: list[ProfileProblem] = []
    if user_dir is not None and project_dir is not None and _same_folder(user_dir, project_dir):
        user_dir = None  # the project lives beside config.toml: one agents/ folder, read once
    for scope, root in (("user", user_dir), ("project", project_dir)):
        if root is None:
            continue
        folder = root / "agents"
        try:
            children = sorted(folder.iterdir()) if folder.is_dir() else []
        except OSError as exc:
            problems.append(ProfileProblem("", scope, str(folder), f"the folder cannot be listed: {exc}"))
            continue
        for child in children:
            if child.name.startswith(".") or not child.is_dir():
                continue  # hidden folders and loose files are not profiles
            try:
                agents[child.name] = load_profile(child, scope)
            except ProfileError as exc:
                problems.append(ProfileProblem(child.name, scope, str(child), str(exc)))
    return AgentCatalog(agents, tuple(problems))


def _same_folder(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def load_profile(folder: Path, scope: str = "project") -> AgentProfile:
    """The profile in ``folder``; ProfileError with the reason when it is not one."""
    key = check_key(folder.name)
    texts = {name: _read(folder / name) for name in _FILES}
    prompt = texts["system_prompt.md"]
    if prompt is None or not prompt.strip():
        raise ProfileError(f"agent {key}: system_prompt.md is missing or empty")
    options = _read_toml(folder / "agent.toml", key)
    data: dict[str, Any] = {
        "system_prompt": prompt,
        "description": (texts["description.txt"] or "").strip(),
        "memory_categories": (texts["memory_categories.txt"] or "").splitlines(),
        "workspace_slug": (texts["workspace_slug.txt"] or "").strip(),
        **options,
    }
    return profile_from_dict(key, data, scope=scope, path=str(folder))


def profile_from_dict(
    key: str,
    data: Mapping[str, Any],
    *,
    scope: str = "project",
    path: str = "",
    known_tools: Collection[str] | None = None,
    known_token_profiles: Collection[str] | None = None,
) -> AgentProfile:
    """A profile from plain values (a folder's files, a PUT body); ProfileError names the field."""
    key = check_key(key)
    prompt = _text(data, "system_prompt", key)
    if not prompt.strip():
        raise ProfileError(f"agent {key}: system_prompt must not be empty")
    categories: list[str] = []
    for line in _list(data, "memory_categories", key):
        if line.strip():
            try:
                categories.append(check_category(line))
            except NoteError as exc:
                raise ProfileError(f"agent {key}: memory_categories: {exc}") from None
    provider = _text(data, "provider", key).strip()
    if provider and provider not in PROVIDER_NAMES:
        raise ProfileError(f"agent {key}: provider {provider!r} is not one of {', '.join(PROVIDER_NAMES)}")
    raw_tools = data.get("tools")
    tools: tuple[str, ...] | None = None
    if raw_tools is not None:
        tools = tuple(_list(data, "tools", key))
        unknown = sorted(set(tools) - set(known_tools)) if known_tools is not None else []
        if unknown:
            raise ProfileError(f"agent {key}: tools names unknown tool(s): {', '.join(unknown)}")
    token_profile = _text(data, "token_profile", key).strip()
    if token_profile and known_token_profiles is not None and token_profile not in known_token_profiles:
        raise ProfileError(
            f"agent {key}: token_profile {token_profile!r} is not one of {', '.join(known_token_profiles)}"
        )
    slug = _text(data, "workspace_slug", key).strip()
    if "\n" in slug or len(slug) > 200:
        raise ProfileError(f"agent {key}: workspace_slug must be one line of at most 200 characters")
    return AgentProfile(
        key=key,
        system_prompt=prompt,
        description=" ".join(_text(data, "description", key).split()),
        memory_categories=tuple(dict.fromkeys(categories)),
        workspace_slug=slug,
        provider=provider,
        model=_text(data, "model", key).strip(),
        tools=tools,
        token_profile=token_profile,
        scope=scope,
        path=path,
    )


def _read(path: Path) -> str | None:
    try:
        if not path.is_file():
            return None
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ProfileError(f"{path.name} is larger than {MAX_FILE_BYTES // 1024} KB")
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ProfileError(f"{path.name} is not UTF-8 text") from None
    except OSError as exc:
        raise ProfileError(f"{path.name} cannot be read: {exc.strerror or exc}") from None


def _read_toml(path: Path, key: str) -> dict[str, Any]:
    text = _read(path)
    if text is None:
        return {}
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"agent {key}: agent.toml is not valid TOML: {exc}") from None
    unknown = sorted(set(data) - set(_TOML_KEYS))
    if unknown:
        raise ProfileError(
            f"agent {key}: agent.toml has unknown key(s) {', '.join(unknown)} "
            f"(known: {', '.join(_TOML_KEYS)})"
        )
    return data


def _text(data: Mapping[str, Any], name: str, key: str) -> str:
    value = data.get(name, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ProfileError(f"agent {key}: {name} must be text, got {type(value).__name__}")
    return value


def _list(data: Mapping[str, Any], name: str, key: str) -> list[str]:
    value = data.get(name) or []
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ProfileError(f"agent {key}: {name} must be a list of strings")
    return list(value)


# -- writing ------------------------------------------------------------------------------------
def save_profile(root: Path, profile: AgentProfile) -> Path:
    """Write ``profile`` under ``<root>/agents/<key>/`` (each file atomically); its folder."""
    folder = root / "agents" / check_key(profile.key)
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / "system_prompt.md", profile.system_prompt)
    atomic_write_text(folder / "description.txt", profile.description + "\n")
    atomic_write_text(folder / "memory_categories.txt", "".join(f"{c}\n" for c in profile.memory_categories))
    atomic_write_text(folder / "workspace_slug.txt", profile.workspace_slug + "\n")
    toml = _toml_text(profile)
    if toml:
        atomic_write_text(folder / "agent.toml", toml)
    elif (folder / "agent.toml").exists():
        (folder / "agent.toml").unlink()
    return folder


def _toml_text(profile: AgentProfile) -> str:
    lines = [
        f"{name} = {_toml_string(value)}"
        for name, value in (
            ("provider", profile.provider),
            ("model", profile.model),
            ("token_profile", profile.token_profile),
        )
        if value
    ]
    if profile.tools is not None:
        lines.append("tools = [" + ", ".join(_toml_string(t) for t in profile.tools) + "]")
    return "".join(f"{line}\n" for line in lines)


def _toml_string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in escaped) + '"'


def delete_profile(root: Path, key: str, cache_root: Path) -> Path:
    """Move ``<root>/agents/<key>`` into ``<cache_root>/.slop_cache/deleted_agents``; where it went."""
    folder = root / "agents" / check_key(key)
    if not folder.is_dir():
        raise ProfileError(f"agent {key}: no profile folder at {folder}")
    target_dir = cache_root / DELETED_DIR
    target_dir.mkdir(parents=True, exist_ok=True)
    target = target_dir / f"{key}-{time.strftime('%Y%m%d-%H%M%S')}"
    suffix = 1
    while target.exists():
        suffix += 1
        target = target_dir / f"{key}-{time.strftime('%Y%m%d-%H%M%S')}-{suffix}"
    shutil.move(str(folder), str(target))
    return target


def problems_text(problems: Sequence[ProfileProblem]) -> str:
    return "\n".join(f"{p.scope} agent {p.key or p.path}: {p.reason}" for p in problems)
