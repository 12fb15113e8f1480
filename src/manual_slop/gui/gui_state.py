"""The window's own state: what is typed but not yet applied, filters, selections, toasts.

Nothing here is application state (that is ``controller.state``); it is the view's
memory between frames, held in one explicit object instead of module globals or
function attributes.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from manual_slop.gui.text_view import LongText
from manual_slop.gui.thumbnails import ThumbnailTextures

__all__ = ["GuiState", "LogFilter", "Toast"]

TOAST_SECONDS = 6.0


@dataclass(slots=True)
class Toast:
    level: str
    message: str
    shown_at: float


@dataclass(slots=True)
class LogFilter:
    """Filter of a log view plus the cached indices that pass it."""

    text: str = ""
    tier: str = ""  # "" = every tier
    kind: str = ""  # "" = every kind
    selected: int | None = None  # index into the full log
    cached_key: tuple[Any, ...] = ()
    cached_rows: list[int] = field(default_factory=list)
    user_count: int = 0  # entries already filtered into cached_rows
    cells: dict[int, tuple[str, ...]] = field(default_factory=dict)  # entry index -> cell texts
    detail: tuple[Any, str] = (None, "")  # (selected entry, its pretty JSON)


@dataclass(slots=True)
class GuiState:
    """Per-window view state (main thread only)."""

    toasts: list[Toast] = field(default_factory=list)
    edit_buffers: dict[str, str] = field(default_factory=dict)  # field -> text being typed
    palette_open: bool = False
    appearance: tuple[Any, ...] = ()  # (theme, accent, font_scale) last applied to the style
    palette_query: str = ""
    palette_selected: int = 0
    comms_filter: LogFilter = field(default_factory=LogFilter)
    tool_filter: LogFilter = field(default_factory=LogFilter)
    # dialog id -> edit buffers of the modal showing it (dropped when the dialog goes)
    modal_buffers: dict[str, dict[str, Any]] = field(default_factory=dict)
    open_modal_id: str | None = None
    discussion_edit: dict[int, bool] = field(default_factory=dict)  # entry index -> editing
    entry_buffers: dict[int, str] = field(default_factory=dict)  # entry index -> text being edited
    takes_shown: str = ""  # the take the tab bar showed last frame
    tab_choices: dict[str, str] = field(default_factory=dict)  # tab bar -> tab to select (select_tab)
    new_entry_role: str = "User"
    new_entry_text: str = ""
    new_discussion_name: str = ""
    logs_stream: str = "comms"
    session_delete: str | None = None  # the session waiting for the user's delete confirmation
    replay_shown: tuple[str, str] | None = None  # (session id, banner) the replay view drew last
    logs_filters: dict[str, LogFilter] = field(default_factory=lambda: defaultdict(LogFilter))
    project_path_input: str = ""
    proposal_choice: list[bool] = field(default_factory=list)  # which proposed tracks to accept
    proposal_modal: bool = False  # the Track Proposals modal is wanted open
    proposal_round: int = 0  # the state's proposal_round the modal last opened for
    proposal_edits: dict[str, dict[str, str]] = field(default_factory=dict)  # proposal id -> typed text
    ticket_edits: dict[str, dict[str, str]] = field(default_factory=dict)  # ticket id -> typed text
    dag_editor: Any = None  # the node editor context of the Task DAG
    dag_ids: dict[str, int] = field(default_factory=dict)  # ticket id -> node id base
    dag_shape: tuple[Any, ...] = ()  # the ticket graph the nodes were last laid out for
    dag_fit: bool = True  # zoom to fit at the next frame
    dag_link_ids: dict[tuple[str, str], int] = field(default_factory=dict)  # (dep, ticket) -> link id
    dag_links: dict[int, tuple[str, str]] = field(default_factory=dict)  # link id -> (dep, ticket)
    dag_created: tuple[str, str] | None = None  # a link applied at release, until the editor confirms it
    agent_draft: Any = None  # manual_slop.gui.panels.agents.AgentDraft: the profile being edited
    thumbnails: ThumbnailTextures = field(default_factory=ThumbnailTextures)  # screenshots' textures
    agent_delete: tuple[str, str] | None = None  # (key, scope) waiting for the user's confirmation
    agent_tools: list[str] | None = None  # the tool names a profile may list (read once)
    rule_draft: Any = None  # manual_slop.gui.panels.approval_rules.RuleDraft: the rule being edited
    rule_delete: str | None = None  # the approval rule waiting for the user's confirmation
    rule_probe: Any = None  # manual_slop.gui.panels.approval_rules.RuleProbe: "which rule decides?"
    plan_cache: Any = None  # manual_slop.gui.plan_view.PlanCache: the shown plan's file, read off-frame
    inspector: Any = None  # manual_slop.gui.panels.prompt_inspector.InspectorState: runs read off-frame
    base_dir_cache: tuple[Any, str] = ((), "")  # (project file, base dir) -> resolved path
    context_text: LongText = field(default_factory=LongText)  # lines of the context preview
    file_view_text: LongText = field(default_factory=LongText)  # lines of the File View's file
    tier_texts: dict[str, LongText] = field(default_factory=dict)
    tier_index: dict[str, list[int]] = field(default_factory=dict)  # tier -> comms indices
    tier_seen: tuple[Any, int] = (None, 0)  # (first seq, entries indexed) of the comms log
    usage: Any = None  # manual_slop.gui.panels.usage.UsageView, built lazily
    last_response: str = ""  # the response the Response tab was last brought forward for
    fps_history: list[float] = field(default_factory=list)
    frame_ms_history: list[float] = field(default_factory=list)
    cpu_history: list[float] = field(default_factory=list)

    def toast(self, level: str, message: str) -> None:
        self.toasts.append(Toast(level, message, time.monotonic()))
        del self.toasts[:-5]  # keep the newest five

    def live_toasts(self) -> list[Toast]:
        now = time.monotonic()
        self.toasts = [t for t in self.toasts if now - t.shown_at < TOAST_SECONDS]
        return self.toasts
