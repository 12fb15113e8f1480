"""The model's hands: declared tools, run safely, confined to the project, gated by the clutch.

- :mod:`~manual_slop.tools.registry` — ``Tool``, ``ToolRegistry``, ``ToolCall``/``ToolResult``,
  the approval hand-off (``ApprovalRequest``/``ApprovalResult``) and ``ExecutionContext``
- :mod:`~manual_slop.tools.security` — ``PathPolicy``: which paths a tool may read or write
- :mod:`~manual_slop.tools.breaker` — the per-tool circuit breaker
- :mod:`~manual_slop.tools.errors` — the exceptions handlers raise
"""

from __future__ import annotations

from manual_slop.tools.breaker import BreakerState, CircuitBreaker
from manual_slop.tools.errors import (
    AccessDenied,
    ToolDefinitionError,
    ToolError,
    ToolFailure,
    ToolInputError,
    ToolTimeout,
    ToolUnavailable,
)
from manual_slop.tools.registry import (
    ApprovalRequest,
    ApprovalResult,
    ExecutionContext,
    PreToolCallback,
    Tool,
    ToolCall,
    ToolRegistry,
    ToolResult,
    ToolRun,
    ToolStatus,
    default_registry,
)
from manual_slop.tools.security import PathPolicy

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
    "default_registry",
]
