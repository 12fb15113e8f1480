"""The model's hands: declared tools, run safely, confined to the project, gated by the clutch.

- :mod:`~manual_slop.tools.tool` — ``Tool``, ``ToolRun``, ``ToolCall``/``ToolResult``, the approval
  hand-off (``ApprovalRequest``/``ApprovalResult``) and ``ExecutionContext``
- :mod:`~manual_slop.tools.registry` — ``ToolRegistry`` (the pipeline of one call), ``default_registry``
- :mod:`~manual_slop.tools.security` — ``PathPolicy``: which paths a tool may read or write
- :mod:`~manual_slop.tools.breaker` — the per-tool circuit breaker
- :mod:`~manual_slop.tools.errors` — the exceptions handlers raise
- :mod:`~manual_slop.tools.approval` — the app side: approvals through the Execution Clutch and
  the per-send ``ExecutionContext``
- the tools: :mod:`~manual_slop.tools.files`, :mod:`~manual_slop.tools.edits`,
  :mod:`~manual_slop.tools.python_ast`, :mod:`~manual_slop.tools.outline`,
  :mod:`~manual_slop.tools.summary`, :mod:`~manual_slop.tools.git`,
  :mod:`~manual_slop.tools.memory`, :mod:`~manual_slop.tools.web`,
  :mod:`~manual_slop.tools.shell`, assembled by :mod:`~manual_slop.tools.builtin`
"""

from __future__ import annotations

from manual_slop.tools.approval import build_execution_context, make_pre_tool_callback
from manual_slop.tools.breaker import BreakerState, CircuitBreaker
from manual_slop.tools.builtin import builtin_tools
from manual_slop.tools.errors import (
    AccessDenied,
    ToolDefinitionError,
    ToolError,
    ToolFailure,
    ToolInputError,
    ToolTimeout,
    ToolUnavailable,
)
from manual_slop.tools.registry import ToolRegistry, default_registry
from manual_slop.tools.security import PathPolicy
from manual_slop.tools.tool import (
    ApprovalRequest,
    ApprovalResult,
    ExecutionContext,
    PreToolCallback,
    Tool,
    ToolCall,
    ToolResult,
    ToolRun,
    ToolStatus,
)
from manual_slop.tools.web import WebSettings

__all__ = [
    "AccessDenied",
    "ApprovalRequest",
    "ApprovalResult",
    "BreakerState",
    "CircuitBreaker",
    "ExecutionContext",
    "PathPolicy",
    "PreToolCallback",
    "Tool",
    "ToolCall",
    "ToolDefinitionError",
    "ToolError",
    "ToolFailure",
    "ToolInputError",
    "ToolRegistry",
    "ToolResult",
    "ToolRun",
    "ToolStatus",
    "ToolTimeout",
    "ToolUnavailable",
    "WebSettings",
    "build_execution_context",
    "builtin_tools",
    "default_registry",
    "make_pre_tool_callback",
]
