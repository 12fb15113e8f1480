"""Fixtures for tool tests: a temporary project, the built-in registry, a recording approver."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from manual_slop.tools import (
    ApprovalRequest,
    ApprovalResult,
    ExecutionContext,
    ToolCall,
    ToolRegistry,
    ToolResult,
    default_registry,
)


class Approver:
    """Approves (or rejects) every request and remembers what it was shown."""

    def __init__(self, approve: bool = True) -> None:
        self.approve = approve
        self.requests: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> ApprovalResult:
        self.requests.append(request)
        return ApprovalResult(self.approve, dict(request.call.args), "" if self.approve else "no")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    base = tmp_path / "project"
    base.mkdir()
    return base


@pytest.fixture
def approver() -> Approver:
    return Approver()


@pytest.fixture
def ctx(project: Path, approver: Approver) -> ExecutionContext:
    return ExecutionContext.for_directory(project, pre_tool_callback=approver)


@pytest.fixture
def registry() -> ToolRegistry:
    return default_registry(with_powershell=False)


Runner = Callable[..., ToolResult]


@pytest.fixture
def run(registry: ToolRegistry, ctx: ExecutionContext) -> Runner:
    def runner(tool: str, **args: Any) -> ToolResult:
        return registry.execute(ToolCall.new(tool, args), ctx)

    return runner
