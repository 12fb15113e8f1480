"""All GUI-visible application state in one object, written only on the main thread.

:class:`AppState` is built from the three TOML documents at start-up and written
back into them by the dual flush (:meth:`AppState.apply_to_config`,
:meth:`AppState.apply_to_project`, :meth:`AppState.apply_to_history`). Keys of
those documents that the state does not own are left untouched.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from manual_slop.cache_ledger import CacheLedger
from manual_slop.config import DEFAULT_MASK_PATTERNS, DEFAULT_MODELS, MEMORY_KEYS, PROVIDER_NAMES
from manual_slop.log_budget import LogBudget
from manual_slop.schema import get_path, set_path

__all__ = [
    "COMMS_VIEW_BYTES",
    "LOG_VIEW_LIMIT",
    "PROJECT_FIELDS",
    "TOOL_VIEW_BYTES",
    "AppState",
    "Notification",
]

LOG_VIEW_LIMIT = 50_000  # comms / tool-call entries kept in memory for the views
# ... and their bytes (log_budget.approx_size): an entry may hold 20,000-character fields, so a
# count alone let the views hold gigabytes. The session log on disk keeps every entry.
COMMS_VIEW_BYTES = 16 * 1024 * 1024
TOOL_VIEW_BYTES = 8 * 1024 * 1024

# The fields that come from the project and history files (replaced when they are re-read).
PROJECT_FIELDS: tuple[str, ...] = (
    "project_name",
    "system_prompt",
    "files_base_dir",
    "project_files",
    "files_exclude",
    "output_dir",
    "screenshots",
    "discussion_roles",
    "auto_add",
    "discussions",
    "active_discussion",
    "context_strategy",
    "context_token_budget",
    "context_full_threshold",
    "image_max_edge",
    "mask_patterns",
    "subagent_summaries",
    "file_views",
    "context_presets",
    "mma_settings",
    "memory_settings",
    "active_agent",
    "plan_settings",
    "skills_disabled",
)


@dataclass(frozen=True, slots=True)
class Notification:
    """A message for the user (start-up warnings, errors); shown until dismissed."""

    level: str  # "info" | "warning" | "error"
    message: str
    ts: float

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "message": self.message, "ts": self.ts}


@dataclass(slots=True)
class AppState:
    """The world as the user sees it. Only the main thread writes it."""

    # AI settings
    current_provider: str = "local"
    provider_models: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_MODELS))
    provider_base_urls: dict[str, str] = field(default_factory=lambda: dict.fromkeys(PROVIDER_NAMES, ""))
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 8192
    history_trunc_limit: int = 8000
    approval_policy: str = "manual"
    approval_timeout_s: float = 3600.0
    shell_program: str = "auto"
    shell_timeout_s: float = 120.0
    # project
    project_name: str = ""
    system_prompt: str = ""
    files_base_dir: str = "."
    project_files: list[str] = field(default_factory=list)
    files_exclude: list[str] = field(default_factory=list)
    output_dir: str = "md_gen"
    screenshots: list[str] = field(default_factory=list)
    discussion_roles: list[str] = field(default_factory=lambda: ["User", "AI", "Vendor API", "System"])
    auto_add: bool = True
    # discussions: name -> table with at least "history": list of entries
    discussions: dict[str, dict[str, Any]] = field(default_factory=dict)
    active_discussion: str = "main"
    # context aggregation (manual_slop.context); the first seven are saved in the project file
    context_strategy: str = "auto"
    context_token_budget: int = 100_000
    context_full_threshold: int = 4_000
    image_max_edge: int = 1568  # screenshots are downscaled to this longest edge (context.images)
    mask_patterns: list[str] = field(default_factory=lambda: list(DEFAULT_MASK_PATTERNS))
    subagent_summaries: bool = False
    file_views: dict[str, dict[str, Any]] = field(default_factory=dict)  # path -> {mode, slices?, …}
    context_presets: dict[str, dict[str, Any]] = field(default_factory=dict)
    context_status: str = "idle"
    context_files: list[dict[str, Any]] = field(default_factory=list)  # last compile, per file
    # last compile: the screenshots' thumbnails by name (context.images.Thumbnail; for the GUI only)
    image_thumbnails: dict[str, Any] = field(default_factory=dict)
    context_tokens: int = 0
    context_preview: str = ""
    context_fit: dict[str, Any] = field(default_factory=dict)  # the last send's fit (context.fit)
    last_md_path: str = ""
    discussion_status: str = "idle"
    # GUI
    theme: str = "dark"
    accent: str = "default"
    font_scale: float = 1.0
    show_windows: dict[str, bool] = field(default_factory=dict)
    # tab bar -> tab chosen over automation (select_tab); the window applies and removes it
    tab_requests: dict[str, str] = field(default_factory=dict)
    # message / response
    ai_input: str = ""
    ai_response: str = ""
    ai_status: str = "idle"
    ai_answered_by: str = ""  # "provider / model" of the last answer (a fallback says so)
    active_request_id: str | None = None
    available_models: list[str] = field(default_factory=list)  # of the active provider (btn_fetch_models)
    model_lists: dict[str, list[str]] = field(default_factory=dict)  # provider -> its last fetched list
    # MMA
    mma_epic_input: str = ""
    mma_status: str = "idle"
    active_tier: str | None = None
    mma_progress: str = ""  # what a planning thread is doing ('' = none): "building context", …
    proposed_tracks: list[dict[str, Any]] = field(default_factory=list)
    proposal_round: int = 0  # +1 each time Tier 1 proposes (the Track Proposals modal opens)
    active_track: dict[str, Any] | None = None
    mma_tickets: list[dict[str, Any]] = field(default_factory=list)
    mma_ray_workers: list[dict[str, Any]] = field(default_factory=list)  # Ray attempts' heartbeats
    tier_usage: dict[str, Any] = field(default_factory=dict)
    mma_settings: dict[str, Any] = field(default_factory=dict)  # the project's [mma] table
    memory_settings: dict[str, Any] = field(default_factory=dict)  # "memory.x" / "rag.y" -> value
    rag_status: dict[str, Any] = field(default_factory=dict)  # the index job (memory.bindings)
    # the Memory panel (memory.views): a search over index, conversations and notes; the lists
    memory_query: str = ""
    memory_results: list[dict[str, Any]] = field(default_factory=list)
    memory_search_status: str = "idle"
    memory_notes: list[dict[str, Any]] = field(default_factory=list)
    memory_profile_lines: list[dict[str, Any]] = field(default_factory=list)
    file_view: dict[str, Any] = field(default_factory=dict)  # the File View panel (file_view)
    # agent profiles and token profiles (agents.bindings)
    agents: list[dict[str, Any]] = field(default_factory=list)
    agent_problems: list[dict[str, Any]] = field(default_factory=list)
    active_agent: str = ""
    token_profile: str = "balanced"
    token_custom: dict[str, int] = field(default_factory=dict)
    plan_settings: dict[str, Any] = field(default_factory=dict)  # the project's [plan] table
    # skills (skills.bindings): the catalog's summaries, refused folders, names switched off
    skills: list[dict[str, Any]] = field(default_factory=list)
    skill_problems: list[dict[str, Any]] = field(default_factory=list)
    skills_disabled: list[str] = field(default_factory=list)
    plans: list[dict[str, Any]] = field(default_factory=list)  # summaries of the project's plans
    # logs and telemetry
    comms_log: list[dict[str, Any]] = field(default_factory=list)
    # the views' byte budgets; their ``dropped`` counts the oldest entries let go
    comms_budget: LogBudget = field(default_factory=lambda: LogBudget(COMMS_VIEW_BYTES, LOG_VIEW_LIMIT))
    tool_calls_budget: LogBudget = field(default_factory=lambda: LogBudget(TOOL_VIEW_BYTES, LOG_VIEW_LIMIT))
    cache_ledger: CacheLedger = field(default_factory=CacheLedger)  # fed with comms_log (Cache panel)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    api_metrics: dict[str, Any] = field(default_factory=dict)
    notifications: list[Notification] = field(default_factory=list)
    pending_dialogs: list[dict[str, Any]] = field(default_factory=list)  # mirror of the clutch, oldest first

    # -- derived --------------------------------------------------------------------
    @property
    def current_model(self) -> str:
        return self.provider_models.get(self.current_provider, "")

    @current_model.setter
    def current_model(self, model: str) -> None:
        self.provider_models[self.current_provider] = model

    @property
    def provider_base_url(self) -> str:
        return self.provider_base_urls.get(self.current_provider, "")

    @provider_base_url.setter
    def provider_base_url(self, url: str) -> None:
        self.provider_base_urls[self.current_provider] = url

    def role(self, index: int, fallback: str) -> str:
        """The ``index``-th discussion role (0: the user's, 1: the AI's), or ``fallback``."""
        return self.discussion_roles[index] if len(self.discussion_roles) > index else fallback

    def discussion_entries(self, name: str | None = None) -> list[dict[str, Any]]:
        """Entries of a discussion (the active one by default), created empty if missing."""
        table = self.discussions.setdefault(name or self.active_discussion, {})
        history = table.get("history")
        if not isinstance(history, list):
            history = table["history"] = []
        return history

    def add_comms(self, new: list[dict[str, Any]], sizes: list[int] | None = None) -> None:
        """Append comms entries (``sizes``: their approx_size, if measured); the oldest beyond
        the view's budget are dropped."""
        self.comms_budget.extend(self.comms_log, new, sizes)

    def add_tool_calls(self, new: list[dict[str, Any]], sizes: list[int] | None = None) -> None:
        """Append tool-call entries (``sizes`` as for :meth:`add_comms`); the oldest beyond the
        view's budget are dropped."""
        self.tool_calls_budget.extend(self.tool_calls, new, sizes)

    # -- loading ---------------------------------------------------------------------
    @classmethod
    def from_documents(
        cls, config: dict[str, Any], project: dict[str, Any], history: dict[str, Any], project_stem: str
    ) -> AppState:
        """Build the state from normalized config, project and history documents."""
        state = cls()
        state.current_provider = get_path(config, "ai.provider")
        for name in PROVIDER_NAMES:
            state.provider_models[name] = get_path(config, f"providers.{name}.model", DEFAULT_MODELS[name])
            state.provider_base_urls[name] = get_path(config, f"providers.{name}.base_url", "")
        state.provider_models[state.current_provider] = get_path(config, "ai.model")
        state.temperature = get_path(config, "ai.temperature")
        state.top_p = get_path(config, "ai.top_p")
        state.max_tokens = get_path(config, "ai.max_tokens")
        state.history_trunc_limit = get_path(config, "ai.history_trunc_limit")
        state.approval_policy = get_path(config, "approval.policy")
        state.approval_timeout_s = get_path(config, "approval.timeout_s")
        state.shell_program = get_path(config, "shell.program")
        state.shell_timeout_s = get_path(config, "shell.timeout_s")
        state.theme = get_path(config, "gui.theme")
        state.accent = get_path(config, "gui.accent")
        state.font_scale = get_path(config, "gui.font_scale")
        state.show_windows = dict(get_path(config, "gui.show_windows"))
        state.token_profile = get_path(config, "tokens.profile")
        state.token_custom = dict(get_path(config, "tokens.custom"))

        state.project_name = get_path(project, "project.name") or project_stem
        state.system_prompt = get_path(project, "project.system_prompt")
        state.files_base_dir = get_path(project, "files.base_dir")
        state.project_files = list(get_path(project, "files.paths"))
        state.files_exclude = list(get_path(project, "files.exclude"))
        state.output_dir = get_path(project, "files.output_dir")
        state.screenshots = list(get_path(project, "screenshots.paths"))
        state.discussion_roles = list(get_path(project, "discussion.roles"))
        state.auto_add = get_path(project, "discussion.auto_add")
        state.context_strategy = get_path(project, "context.strategy")
        state.context_token_budget = get_path(project, "context.token_budget")
        state.context_full_threshold = get_path(project, "context.full_threshold")
        state.image_max_edge = get_path(project, "context.image_max_edge")
        state.mask_patterns = list(get_path(project, "context.mask_patterns"))
        state.subagent_summaries = get_path(project, "context.subagent_summaries")
        state.file_views = copy.deepcopy(get_path(project, "context.views"))
        state.context_presets = copy.deepcopy(get_path(project, "context.presets"))
        state.mma_settings = copy.deepcopy(get_path(project, "mma", {}))
        state.memory_settings = {key: copy.deepcopy(get_path(project, key)) for key in MEMORY_KEYS}
        state.active_agent = get_path(project, "agents.active")
        state.plan_settings = copy.deepcopy(get_path(project, "plan", {}))
        state.skills_disabled = list(get_path(project, "skills.disabled"))

        state.discussions = copy.deepcopy(get_path(history, "discussions"))
        state.active_discussion = get_path(history, "active") or "main"
        state.discussion_entries()  # the active discussion always exists
        return state

    def adopt_project(self, fresh: AppState) -> None:
        """Take every project-owned field from ``fresh`` (after the project files were re-read)."""
        for name in PROJECT_FIELDS:
            setattr(self, name, getattr(fresh, name))

    # -- dual flush ------------------------------------------------------------------
    def apply_to_config(self, config: dict[str, Any]) -> dict[str, Any]:
        """A copy of ``config`` with the state's global settings written in."""
        out = copy.deepcopy(config)
        set_path(out, "ai.provider", self.current_provider)
        set_path(out, "ai.model", self.current_model)
        set_path(out, "ai.temperature", self.temperature)
        set_path(out, "ai.top_p", self.top_p)
        set_path(out, "ai.max_tokens", self.max_tokens)
        set_path(out, "ai.history_trunc_limit", self.history_trunc_limit)
        for name in PROVIDER_NAMES:
            set_path(out, f"providers.{name}.model", self.provider_models.get(name, ""))
            set_path(out, f"providers.{name}.base_url", self.provider_base_urls.get(name, ""))
        set_path(out, "approval.policy", self.approval_policy)
        set_path(out, "approval.timeout_s", self.approval_timeout_s)
        set_path(out, "shell.program", self.shell_program)
        set_path(out, "shell.timeout_s", self.shell_timeout_s)
        set_path(out, "gui.theme", self.theme)
        set_path(out, "gui.accent", self.accent)
        set_path(out, "gui.font_scale", self.font_scale)
        set_path(out, "gui.show_windows", dict(self.show_windows))
        set_path(out, "tokens.profile", self.token_profile)
        set_path(out, "tokens.custom", dict(self.token_custom))
        return out

    def apply_to_project(self, project: dict[str, Any]) -> dict[str, Any]:
        """A copy of ``project`` with the state's project settings written in."""
        out = copy.deepcopy(project)
        set_path(out, "project.name", self.project_name)
        set_path(out, "project.system_prompt", self.system_prompt)
        set_path(out, "files.base_dir", self.files_base_dir)
        set_path(out, "files.paths", list(self.project_files))
        set_path(out, "files.exclude", list(self.files_exclude))
        set_path(out, "files.output_dir", self.output_dir)
        set_path(out, "screenshots.paths", list(self.screenshots))
        set_path(out, "discussion.roles", list(self.discussion_roles))
        set_path(out, "discussion.auto_add", self.auto_add)
        set_path(out, "context.strategy", self.context_strategy)
        set_path(out, "context.token_budget", self.context_token_budget)
        set_path(out, "context.full_threshold", self.context_full_threshold)
        set_path(out, "context.image_max_edge", self.image_max_edge)
        set_path(out, "context.mask_patterns", list(self.mask_patterns))
        set_path(out, "context.subagent_summaries", self.subagent_summaries)
        set_path(out, "context.views", copy.deepcopy(self.file_views))
        set_path(out, "context.presets", copy.deepcopy(self.context_presets))
        for key, value in self.mma_settings.items():
            set_path(out, f"mma.{key}", copy.deepcopy(value))
        for key, value in self.memory_settings.items():
            set_path(out, key, copy.deepcopy(value))
        set_path(out, "agents.active", self.active_agent)
        for key, value in self.plan_settings.items():
            set_path(out, f"plan.{key}", copy.deepcopy(value))
        set_path(out, "skills.disabled", sorted(self.skills_disabled))
        return out

    def apply_to_history(self, history: dict[str, Any]) -> dict[str, Any]:
        """A copy of ``history`` with the discussions written in."""
        out = copy.deepcopy(history)
        out["active"] = self.active_discussion
        out["discussions"] = copy.deepcopy(self.discussions)
        return out
