"""Every dockable panel: its window title (the key in ``[gui.show_windows]``), where it
docks by default, and the function that draws it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from manual_slop.gui.panels.agents import render_agents
from manual_slop.gui.panels.ai_settings import render_ai_settings
from manual_slop.gui.panels.approval_rules import render_approval_rules
from manual_slop.gui.panels.cache import render_cache
from manual_slop.gui.panels.comms_log import render_comms_log
from manual_slop.gui.panels.context import render_context
from manual_slop.gui.panels.diagnostics import render_diagnostics
from manual_slop.gui.panels.discussion import render_discussion
from manual_slop.gui.panels.file_view import render_file_view
from manual_slop.gui.panels.files import render_files
from manual_slop.gui.panels.logs import render_logs
from manual_slop.gui.panels.mcp import render_mcp
from manual_slop.gui.panels.memory import render_memory
from manual_slop.gui.panels.message import render_message
from manual_slop.gui.panels.mma_dashboard import render_mma_dashboard
from manual_slop.gui.panels.projects import render_projects
from manual_slop.gui.panels.prompt_inspector import render_prompt_inspector
from manual_slop.gui.panels.response import render_response
from manual_slop.gui.panels.session_replay import render_session_replay
from manual_slop.gui.panels.skills import render_skills
from manual_slop.gui.panels.task_dag import render_task_dag
from manual_slop.gui.panels.theme import render_theme
from manual_slop.gui.panels.tier_streams import render_tier_streams
from manual_slop.gui.panels.tool_calls import render_tool_calls
from manual_slop.gui.panels.usage import render_usage

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["PANELS", "Panel"]


@dataclass(frozen=True, slots=True)
class Panel:
    title: str
    key: str  # short name for perf scopes and tests
    render: Callable[[Ui], None]
    dock_space: str


PANELS: tuple[Panel, ...] = (
    Panel("Projects", "projects", render_projects, "LeftSpace"),
    Panel("Files & Media", "files", render_files, "LeftSpace"),
    Panel("Context", "context", render_context, "LeftSpace"),
    Panel("AI Settings", "ai_settings", render_ai_settings, "RightSpace"),
    Panel("Discussion", "discussion", render_discussion, "MainDockSpace"),
    Panel("Response", "response", render_response, "MainDockSpace"),
    Panel("MMA Dashboard", "mma_dashboard", render_mma_dashboard, "MainDockSpace"),
    Panel("Task DAG", "task_dag", render_task_dag, "MainDockSpace"),
    Panel("Message", "message", render_message, "MessageSpace"),
    Panel("Comms Log", "comms_log", render_comms_log, "BottomSpace"),
    Panel("Tool Calls", "tool_calls", render_tool_calls, "BottomSpace"),
    Panel("Usage", "usage", render_usage, "RightSpace"),
    Panel("Diagnostics", "diagnostics", render_diagnostics, "RightSpace"),
    Panel("Tier Streams", "tier_streams", render_tier_streams, "BottomSpace"),
    Panel("Logs", "logs", render_logs, "BottomSpace"),
    Panel("Memory", "memory", render_memory, "MainDockSpace"),
    Panel("File View", "file_view", render_file_view, "MainDockSpace"),
    Panel("Agents", "agents", render_agents, "MainDockSpace"),
    Panel("Skills", "skills", render_skills, "MainDockSpace"),
    Panel("Prompt Inspector", "prompt_inspector", render_prompt_inspector, "MainDockSpace"),
    Panel("Approval Rules", "approval_rules", render_approval_rules, "MainDockSpace"),
    Panel("MCP", "mcp", render_mcp, "MainDockSpace"),
    Panel("Theme", "theme", render_theme, "RightSpace"),
    Panel("Cache", "cache", render_cache, "RightSpace"),
    Panel("Session Replay", "session_replay", render_session_replay, "MainDockSpace"),
)
