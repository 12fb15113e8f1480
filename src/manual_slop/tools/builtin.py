"""The built-in tools, declared in one place (names and parameters are a contract with the
model; docs/guide_tools.md lists them and a test keeps the two in step)."""

from __future__ import annotations

from typing import Any

from manual_slop.tools.registry import Tool

__all__ = ["builtin_tools"]


def builtin_tools(**options: Any) -> list[Tool]:
    """Every built-in tool, configured by ``options``."""
    if options:
        raise TypeError(f"unknown tool options: {', '.join(sorted(options))}")
    return []
