"""Exceptions of the tools package.

Hierarchy::

    ToolError                    base of everything a tool handler may raise on purpose
    ├── ToolInputError           the arguments pass the schema but not the tool (file missing,
    │                            no match, bad regex, line range outside the file); the model
    │                            can fix the call — never trips the circuit breaker
    ├── AccessDenied             a path is blacklisted, outside the allowed paths or cannot be
    │                            resolved; becomes a ``denied`` result ``ACCESS DENIED: ...``
    ├── ToolUnavailable          something the tool needs is not installed (a tree-sitter
    │                            grammar, git, PowerShell); the message says what to install
    ├── ToolFailure              the tool's environment failed (network down, a subprocess
    │                            could not start); counts toward the circuit breaker
    │   └── ToolTimeout          a handler gave up at its deadline; may carry partial output
    └── ToolDefinitionError      (also a ValueError) a tool declaration is malformed or its
                                 name is already registered; raised at registration time

Handlers raise these; :class:`~manual_slop.tools.registry.ToolRegistry` turns them into
:class:`~manual_slop.tools.tool.ToolResult` values, so nothing the model causes ever
escapes ``execute``. Any other exception from a handler is treated as a bug in the tool:
it becomes an ``error`` result naming the exception and counts toward the circuit breaker.
"""

from __future__ import annotations

__all__ = [
    "AccessDenied",
    "ToolDefinitionError",
    "ToolError",
    "ToolFailure",
    "ToolInputError",
    "ToolTimeout",
    "ToolUnavailable",
]


class ToolError(Exception):
    """Base class: a tool could not do what it was asked; the message is shown to the model."""


class ToolInputError(ToolError):
    """The call is well-formed but cannot be carried out as asked; the model can correct it."""


class AccessDenied(ToolError):
    """A path the call names is not allowed (the message says which and why)."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path!r}: {reason}" if path else reason)


class ToolUnavailable(ToolError):
    """A dependency of the tool is missing on this machine."""


class ToolFailure(ToolError):
    """The tool's environment failed (network, subprocess); retrying later may work."""


class ToolTimeout(ToolFailure):
    """The handler stopped at its deadline; ``partial`` is what it had produced so far."""

    def __init__(self, message: str, partial: str = "") -> None:
        self.partial = partial
        super().__init__(message)


class ToolDefinitionError(ToolError, ValueError):
    """A tool declaration is invalid or its name is taken."""
