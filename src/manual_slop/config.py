"""The app's TOML files: global config, project, discussion history and credentials.

Four files, one rule set:

- ``config.toml`` (global): provider and parameters, GUI windows, hook server,
  approval policy, projects.
- ``<project>.toml``: name, base dir, tracked files, screenshots, system prompt,
  discussion roles, approval rules.
- ``<project>_history.toml``: the discussions (never readable by AI tools).
- ``credentials.toml``: API keys; ``ANTHROPIC_API_KEY`` and friends override it.

Loading never fails because of the file's content: a file that does not parse is
moved aside as ``NAME.corrupt-<ts>``; a value of the wrong type is replaced by its
default after the original file is copied aside as ``NAME.invalid-<ts>``. Either
way the caller gets a :class:`~manual_slop.schema.Problem` to show the user.
Every save is atomic (:mod:`manual_slop.atomic_io`).
"""

from __future__ import annotations

import os
import shutil
import time
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from manual_slop.atomic_io import atomic_write_bytes, move_aside, sweep_stale_temps
from manual_slop.schema import Field, Problem, Schema, normalize
from manual_slop.themes import ACCENTS, THEME_NAMES
from manual_slop.token_profiles import PROFILES

__all__ = [
    "CONTEXT_STRATEGIES",
    "CREDENTIAL_ENV_VARS",
    "DEFAULT_MASK_PATTERNS",
    "DEFAULT_MODELS",
    "DEFAULT_WINDOWS",
    "GLOBAL_SCHEMA",
    "HISTORY_SCHEMA",
    "MEMORY_KEYS",
    "PROJECT_SCHEMA",
    "PROVIDER_NAMES",
    "SHELL_PROGRAMS",
    "AppPaths",
    "ConfigError",
    "Credentials",
    "LoadResult",
    "Secret",
    "TomlFile",
    "dump_toml",
    "history_path_for",
]

PROVIDER_NAMES: tuple[str, ...] = (
    "local",
    "gemini",
    "anthropic",
    "deepseek",
    "minimax",
    "gemini_cli",
    "openai_compatible",
)

DEFAULT_MODELS: dict[str, str] = {
    "local": "SmolLM2-135M-Instruct",
    "gemini": "gemini-2.5-flash-lite",
    "anthropic": "claude-sonnet-4-6",
    "deepseek": "deepseek-chat",
    "minimax": "MiniMax-M2",
    "gemini_cli": "gemini-2.5-flash",
    "openai_compatible": "",
}

CREDENTIAL_ENV_VARS: dict[str, str] = {
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "gemini_cli": "GEMINI_API_KEY",  # the CLI authenticates with a Gemini API key too
    "deepseek": "DEEPSEEK_API_KEY",
    "minimax": "MINIMAX_API_KEY",
    "openai_compatible": "OPENAI_API_KEY",
}

DEFAULT_WINDOWS: dict[str, bool] = {
    "Projects": True,
    "Files & Media": True,
    "Context": True,
    "AI Settings": True,
    "Discussion": True,
    "Message": True,
    "Response": True,
    "Comms Log": True,
    "Tool Calls": True,
    "MMA Dashboard": True,
    "Task DAG": False,
    "Tier Streams": False,
    "Usage": False,
    "Diagnostics": False,
    "Logs": False,
    "Memory": False,
    "File View": False,
    "Agents": False,
    "Skills": False,
    "Prompt Inspector": False,
    "Approval Rules": False,
    "MCP": False,
    "Theme": False,
    "Cache": False,
    "Session Replay": False,
}

APPROVAL_POLICIES: tuple[str, ...] = ("manual", "allow_list", "auto")
SHELL_PROGRAMS: tuple[str, ...] = ("auto", "bash", "pwsh", "powershell")

# context aggregation (manual_slop.context): strategies and the default secret-line patterns
CONTEXT_STRATEGIES: tuple[str, ...] = ("full", "summarize", "auto")
DEFAULT_MASK_PATTERNS: tuple[str, ...] = (r"(?i)(api[_-]?key|secret|passw(or)?d|token)\s*[:=]",)


# [mcp.servers.<name>] tables, each checked on its own by manual_slop.mcp.config (one bad entry
# is left out with a message; the others stay), so the schema only asks for a table
MCP_SERVERS_DOC = "External MCP servers by name (see docs/guide_mcp.md)"


# [usage.prices."<model>"] tables, each checked by manual_slop.usage.prices.parse_overrides
USAGE_PRICES_DOC = "Dollars per million tokens by model: input, output, cache_read, cache_write"


def _global_schema() -> dict[str, Field]:
    schema: dict[str, Field] = {
        "ai.provider": Field(str, "local", "Active provider", choices=PROVIDER_NAMES),
        "ai.model": Field(str, DEFAULT_MODELS["local"], "Active model of the active provider"),
        "ai.temperature": Field(float, 0.0, "Sampling temperature", minimum=0.0, maximum=2.0),
        "ai.top_p": Field(float, 1.0, "Nucleus sampling mass", minimum=0.0, maximum=1.0),
        "ai.max_tokens": Field(int, 8192, "Maximum output tokens", minimum=1, maximum=1_000_000),
        "ai.history_trunc_limit": Field(
            int, 8000, "Characters kept of old tool outputs", minimum=0, maximum=10_000_000
        ),
        "ai.fallback": Field(list, [], "Providers tried in order when the active one fails", items=str),
        "ai.guard_repeat_warn": Field(
            int, 2, "The identical tool call that carries a warning (0 = never)", minimum=0, maximum=1000
        ),
        "ai.guard_repeat_refuse": Field(
            int, 3, "The identical tool call that is not run (0 = never)", minimum=0, maximum=1000
        ),
        "approval.policy": Field(str, "manual", "Execution Clutch policy", choices=APPROVAL_POLICIES),
        "approval.timeout_s": Field(
            float, 3600.0, "How long an action waits for a decision before it is rejected", minimum=1.0
        ),
        "shell.program": Field(str, "auto", "Interpreter of run_shell", choices=SHELL_PROGRAMS),
        "shell.timeout_s": Field(
            float, 120.0, "How long run_shell may run before its process group is killed", minimum=1.0
        ),
        "hook.enabled": Field(bool, False, "Start the Hook API in GUI mode"),
        "hook.host": Field(str, "127.0.0.1", "Hook API bind address"),
        "hook.port": Field(int, 8999, "Hook API port (0 picks a free one)", minimum=0, maximum=65535),
        "hook.token": Field(str, "", "Bearer token of the Hook API (empty: a new one at every start)"),
        "hook.require_token": Field(
            bool, True, "Require the bearer token (false is allowed on a loopback address only)"
        ),
        "mcp.serve_http": Field(
            str, "", "Serve the app's tools over MCP at HOST:PORT from the start ('' = not served)"
        ),
        "hook.allowed_hosts": Field(
            list, [], "Host names besides 127.0.0.1, localhost and [::1] the Hook API answers to", items=str
        ),
        "gui.theme": Field(
            str, "dark", "Colour theme (nerv: high-contrast black and amber)", choices=THEME_NAMES
        ),
        "gui.accent": Field(
            str, "default", "Accent colour of active widgets (default: the theme's)", choices=tuple(ACCENTS)
        ),
        "gui.font_scale": Field(float, 1.0, "Font scale (HiDPI: 1.5 or 2)", minimum=0.5, maximum=3.0),
        "gui.show_windows": Field(dict, dict(DEFAULT_WINDOWS), "Visible panels", values=bool),
        "projects.active": Field(str, "manual_slop.toml", "Project file opened at start"),
        "projects.recent": Field(list, [], "Recently opened project files", items=str),
        "tokens.profile": Field(str, "balanced", "Token profile: max_tokens per phase", choices=PROFILES),
        "tokens.custom": Field(dict, {}, "Limits of the custom token profile by phase", values=int),
        "mcp.servers": Field(dict, {}, MCP_SERVERS_DOC),
        "logs.prune_max_kb": Field(
            int,
            64,
            "Start-up pruning removes old sessions smaller than this (0 = never)",
            minimum=0,
            maximum=10_000_000,
        ),
        "logs.prune_after_hours": Field(
            float, 24.0, "Sessions younger than this are never pruned", minimum=0.0, maximum=100_000.0
        ),
        "usage.prices": Field(dict, {}, USAGE_PRICES_DOC, values=dict),
        "usage.budget_usd": Field(
            float, 0.0, "Dollars the session may spend before MMA pauses and asks (0 = none)", minimum=0.0
        ),
        "usage.track_budget_usd": Field(
            float, 0.0, "Dollars one track may spend before it pauses and asks (0 = no budget)", minimum=0.0
        ),
    }
    for name in PROVIDER_NAMES:
        schema[f"providers.{name}.base_url"] = Field(str, "", f"{name} endpoint ('' = provider default)")
        schema[f"providers.{name}.model"] = Field(str, DEFAULT_MODELS[name], f"Last model used with {name}")
        schema[f"providers.{name}.context_window"] = Field(
            int, 0, f"Tokens {name}'s model holds (0 = as the provider or the app's table says)", minimum=0
        )
    schema["providers.local.model_path"] = Field(
        str, "", "GGUF file of the local model ('' = bundled SmolLM2)"
    )
    schema["providers.local.max_tokens"] = Field(
        int, 512, "Longest answer of the local model, in tokens (ai.max_tokens when smaller)", minimum=16
    )
    schema["providers.gemini_cli.binary"] = Field(str, "gemini", "The gemini CLI executable (name or path)")
    schema["providers.gemini_cli.approval_mode"] = Field(
        str,
        "yolo",
        "Tools the gemini CLI offers (every call still waits in the Execution Clutch)",
        choices=("yolo", "auto_edit", "plan", "default"),
    )
    return schema


GLOBAL_SCHEMA: Schema = _global_schema()

PROJECT_SCHEMA: Schema = {
    "project.name": Field(str, "", "Project name ('' = file name)"),
    "project.system_prompt": Field(str, "", "Project system prompt"),
    "files.base_dir": Field(str, ".", "Root of the tracked files, relative to the project file"),
    "files.paths": Field(list, [], "Tracked files and globs, relative to base_dir", items=str),
    "files.exclude": Field(list, [], "Globs excluded from the tracked files", items=str),
    "files.output_dir": Field(str, "md_gen", "Where MD Only writes, relative to base_dir"),
    "screenshots.paths": Field(list, [], "Screenshots attached to requests", items=str),
    "discussion.roles": Field(list, ["User", "AI", "Vendor API", "System"], "Discussion roles", items=str),
    "discussion.auto_add": Field(bool, True, "Append sent messages and responses to the discussion"),
    "approval.rules": Field(list, [], "HITL rules (see docs/guide_governance.md)", items=dict),
    "context.strategy": Field(
        str, "auto", "Aggregation strategy for files in full mode", choices=CONTEXT_STRATEGIES
    ),
    "context.token_budget": Field(
        int, 100_000, "auto: the files section stays within this many tokens", minimum=256, maximum=10_000_000
    ),
    "context.full_threshold": Field(
        int, 4_000, "auto: files up to this many tokens are sent in full", minimum=1, maximum=10_000_000
    ),
    "context.mask_patterns": Field(
        list, list(DEFAULT_MASK_PATTERNS), "Regexes: matching lines of masked files are hidden", items=str
    ),
    "context.image_max_edge": Field(
        int, 1568, "Screenshots are downscaled to this longest edge (pixels)", minimum=64, maximum=8000
    ),
    "context.subagent_summaries": Field(bool, False, "summarize: the provider summarizes very large files"),
    "context.views": Field(dict, {}, "Per-file views by path: {mode, slices?, annotation?}", values=dict),
    "context.presets": Field(dict, {}, "Named sets of files, excludes and views", values=dict),
    "mma.tier1_model": Field(str, "", "Tier 1 (epic -> tracks) model ('' = the active model)"),
    "mma.tier2_model": Field(str, "", "Tier 2 (track -> tickets, replans) model ('' = the active model)"),
    "mma.tier3_models": Field(
        list, [], "Tier 3 models by attempt, escalating on retries ([] = the provider's default ladder)",
        items=str,
    ),
    "mma.tier4_model": Field(str, "", "Tier 4 (QA summaries, patches) model ('' = the active model)"),
    "mma.max_workers": Field(int, 4, "Tier 3 workers running at once", minimum=1, maximum=16),
    "mma.backend": Field(
        str, "threads", "Where Tier 3 attempts run: app threads, or Ray tasks", choices=("threads", "ray")
    ),
    "mma.ray_address": Field(
        str, "", "Ray cluster: '' = a local one started on demand, 'auto', or 'ray://host:10001'"
    ),
    "mma.ray_num_cpus": Field(float, 1.0, "CPUs each ticket's Ray task asks for", minimum=0.0, maximum=256.0),
    "mma.ray_max_retries": Field(
        int, 2, "Ray retries of a ticket whose node died (each counts as a retry)", minimum=0, maximum=10
    ),
    "mma.ray_runtime_env": Field(
        dict, {}, "Ray runtime_env of every ticket's task (pip, working_dir, env_vars …; keys are added)"
    ),
    "mma.max_replans": Field(int, 3, "Tier 2 replans allowed per track", minimum=0, maximum=3),
    "mma.tier4_patches": Field(bool, True, "Offer Tier 4 patches for failed worker attempts"),
    "mma.worktree_approvals": Field(
        str,
        "ask",
        "Mutating tools in a ticket's scratch tree: ask each, or patch_only (the patch is approved)",
        choices=("ask", "patch_only"),
    ),
    "memory.history_window": Field(
        int, 1, "Newest exchanges of a conversation never summarized by compaction", minimum=1, maximum=1000
    ),
    "memory.budget_tokens": Field(
        int,
        0,
        "Memory tokens per request (0 = the provider's room after system, context and tools)",
        minimum=0,
        maximum=10_000_000,
    ),
    "memory.split": Field(
        list, [0.5, 0.3, 0.2], "Shares of the memory budget: working, episodic, long-term", items=float
    ),
    "memory.window_minutes": Field(
        float, 30.0, "Notes written this recently load into every request", minimum=0.0, maximum=1e7
    ),
    "memory.relevance_threshold": Field(
        float,
        0.35,
        "Notes and recalled events this relevant to the message load by themselves",
        minimum=0.0,
        maximum=1.0,
    ),
    "memory.profile": Field(bool, True, "Put the user's profile lines into every system prompt"),
    "memory.learn_profile": Field(
        bool, False, "Learn profile lines with a sub-call after completed exchanges (costs a call)"
    ),
    "memory.profile_interval_s": Field(
        float, 600.0, "At most one profile-learning sub-call per this many seconds", minimum=0.0
    ),
    "rag.enabled": Field(bool, False, "Add the project index's top passages to each send"),
    "rag.top_k": Field(int, 5, "Passages added per send", minimum=1, maximum=50),
    "agents.active": Field(str, "", "The agent profile chat runs as ('' = none)"),
    "skills.disabled": Field(
        list, [], "Skills left out of the system prompt and get_skill, by name (others are on)", items=str
    ),
    "plan.max_subtasks": Field(int, 12, "Most subtasks a /plan may have", minimum=1, maximum=100),
    "plan.judge": Field(
        str, "off", "Who scores a finished plan: a provider, or off", choices=("off", *PROVIDER_NAMES)
    ),
    "plan.engine_timeout_s": Field(
        float, 600.0, "How long an external engine (aider) may run before it is killed", minimum=5.0
    ),
    "mcp.servers": Field(dict, {}, MCP_SERVERS_DOC + "; an entry here replaces config.toml's of that name"),
}
# The project keys of the memory feature ([memory] and [rag]): AppState.memory_settings by full key.
MEMORY_KEYS: tuple[str, ...] = tuple(key for key in PROJECT_SCHEMA if key.startswith(("memory.", "rag.")))

HISTORY_SCHEMA: Schema = {
    "active": Field(str, "main", "Discussion shown at start"),
    "discussions": Field(dict, {}, "Discussions by name", values=dict),
}


class ConfigError(Exception):
    """A config path or value the app cannot use; the message names file and key."""


def history_path_for(project_file: Path) -> Path:
    """``foo.toml`` → ``foo_history.toml`` beside it."""
    return project_file.with_name(f"{project_file.stem}_history.toml")


@dataclass(frozen=True, slots=True)
class AppPaths:
    """Where every file of a running app lives; resolved once at start-up."""

    config_file: Path
    project_file: Path
    log_dir: Path

    @classmethod
    def resolve(
        cls,
        config_file: Path,
        project_file: Path | None,
        log_dir: Path | None,
        config: Mapping[str, Any],
    ) -> AppPaths:
        """Absolute paths; the project defaults to ``projects.active``, logs to ``logs/`` by the config."""
        config_file = config_file.expanduser().resolve()
        if project_file is None:
            active = Path(str(config.get("projects", {}).get("active") or "manual_slop.toml")).expanduser()
            project_file = active if active.is_absolute() else config_file.parent / active
        log_dir = log_dir if log_dir is not None else config_file.parent / "logs"
        return cls(config_file, project_file.expanduser().resolve(), log_dir.expanduser().resolve())

    @property
    def credentials_file(self) -> Path:
        return self.config_file.with_name("credentials.toml")

    @property
    def history_file(self) -> Path:
        return history_path_for(self.project_file)


@dataclass(slots=True)
class LoadResult:
    """A loaded document: the repaired data, what was repaired, and whether the file existed."""

    data: dict[str, Any]
    problems: list[Problem] = field(default_factory=list)
    existed: bool = False


def dump_toml(data: Mapping[str, Any]) -> bytes:
    """Serialize to TOML, leaving out ``None`` values (TOML has no null)."""
    import tomli_w  # only when a file is saved: not at start-up

    return tomli_w.dumps(_drop_none(data), multiline_strings=True).encode("utf-8")


def _drop_none(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_drop_none(v) for v in value if v is not None]
    return value


class TomlFile:
    """One TOML file with a schema: tolerant load, atomic save."""

    def __init__(self, path: Path, schema: Schema) -> None:
        self.path = path
        self.schema = schema

    @property
    def label(self) -> str:
        return self.path.name

    def foreign_tables(self) -> list[str]:
        """Top-level tables of the file that its schema does not know (``[]`` when the file is
        missing or does not parse): a file with any is another program's (``pyproject.toml``,
        ``.cargo/config.toml``), which the app must neither repair nor overwrite."""
        try:
            raw = tomllib.loads(self.path.read_bytes().decode("utf-8"))
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            return []
        known = {key.split(".", 1)[0] for key in self.schema}
        return sorted(key for key in raw if key not in known)

    def load(self) -> LoadResult:
        """Read and repair the file; a missing file gives the defaults."""
        sweep_stale_temps(self.path)
        if not self.path.exists():
            data, _ = normalize({}, self.schema, self.label)
            return LoadResult(data)
        try:
            raw = tomllib.loads(self.path.read_bytes().decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            moved = move_aside(self.path, "corrupt")
            data, _ = normalize({}, self.schema, self.label)
            problem = Problem(
                self.label,
                "",
                f"could not be parsed ({exc}); moved aside to {moved.name} and started from defaults",
                severity="error",
                extra={"moved_to": str(moved)},
            )
            return LoadResult(data, [problem], existed=True)
        data, problems = normalize(raw, self.schema, self.label)
        if any(p.severity != "info" for p in problems):
            backup = self.path.with_name(f"{self.path.name}.invalid-{time.strftime('%Y%m%d-%H%M%S')}")
            shutil.copy2(self.path, backup)
            problems.append(
                Problem(self.label, "", f"the original file was copied to {backup.name} before repair")
            )
        return LoadResult(data, problems, existed=True)

    def save(self, data: Mapping[str, Any]) -> None:
        """Write ``data`` atomically."""
        atomic_write_bytes(self.path, dump_toml(data))


class Secret:
    """An API key that never shows itself in ``str``, ``repr``, logs or f-strings."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return "***"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))

    def __bool__(self) -> bool:
        return bool(self._value)


@dataclass(frozen=True, slots=True)
class _KeyEntry:
    secret: Secret
    source: str  # "env:NAME" or "file"


class Credentials:
    """API keys by provider, from ``credentials.toml`` with environment overrides."""

    def __init__(
        self, entries: Mapping[str, _KeyEntry] | None = None, file_strings: Sequence[tuple[str, str]] = ()
    ) -> None:
        self._entries = dict(entries or {})
        self._file_strings = tuple(file_strings)

    @classmethod
    def load(cls, path: Path, environ: Mapping[str, str] | None = None) -> tuple[Credentials, list[Problem]]:
        """Read keys from ``path`` (missing file = no keys), then apply environment overrides."""
        environ = os.environ if environ is None else environ
        problems: list[Problem] = []
        entries: dict[str, _KeyEntry] = {}
        result = TomlFile(path, {}).load()
        problems.extend(p for p in result.problems if p.severity != "info")
        for provider, table in result.data.items():
            if not isinstance(table, Mapping):
                problems.append(Problem(path.name, provider, "expected a table with api_key"))
                continue
            key = table.get("api_key")
            if isinstance(key, str) and key:
                entries[provider] = _KeyEntry(Secret(key), "file")
            elif key is not None and not isinstance(key, str):
                problems.append(Problem(path.name, f"{provider}.api_key", "expected string"))
        for provider, variable in CREDENTIAL_ENV_VARS.items():
            value = environ.get(variable, "")
            if value:
                entries[provider] = _KeyEntry(Secret(value), f"env:{variable}")
        return cls(entries, list(_strings(result.data))), problems

    def api_key(self, provider: str) -> Secret | None:
        entry = self._entries.get(provider)
        return entry.secret if entry else None

    def source(self, provider: str) -> str | None:
        """Where the key came from (``env:NAME`` or ``file``), never the key itself."""
        entry = self._entries.get(provider)
        return entry.source if entry else None

    def configured_providers(self) -> list[str]:
        return sorted(self._entries)

    def file_secrets(self) -> list[tuple[str, str]]:
        """Every string in ``credentials.toml`` as ``(dotted key, value)``, whichever table it is in
        and whether or not the environment overrides it: all of it is secret, for the redactor only."""
        return list(self._file_strings)

    def __repr__(self) -> str:
        return f"Credentials(providers={self.configured_providers()})"


def _strings(data: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    """Every string leaf of a TOML document with its dotted key."""
    if isinstance(data, str):
        yield prefix or "value", data
    elif isinstance(data, Mapping):
        for key, value in data.items():
            yield from _strings(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _strings(value, f"{prefix}[{index}]")
