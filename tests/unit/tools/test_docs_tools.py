"""docs/guide_tools.md must describe the registry as it is."""

from __future__ import annotations

import re
from pathlib import Path

import manual_slop.tools as tools_package
from manual_slop.tools import Tool, default_registry

DOC = Path(__file__).resolve().parents[3] / "docs" / "guide_tools.md"


def signature(tool: Tool) -> str:
    properties = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", []))
    return ", ".join(
        f"{name}{'' if name in required else '?'}: {spec['type']}" for name, spec in properties.items()
    )


def documented_rows() -> dict[str, list[str]]:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## The tools") : text.index("## How a call runs")]
    rows = {}
    for line in section.splitlines():
        match = re.match(r"\|\s*`([a-z_]+)`\s*\|", line)
        if match:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows[match.group(1)] = cells
    return rows


def test_the_tool_table_matches_the_registry() -> None:
    registry = default_registry(with_powershell=True)
    rows = documented_rows()
    assert list(rows) == registry.names()
    for tool in registry.list():
        _, params, mutates, timeout, description = rows[tool.name]
        assert params == (f"`{signature(tool)}`" if signature(tool) else "(none)"), tool.name
        assert mutates == ("yes" if tool.mutating else "no"), tool.name
        assert timeout == f"{tool.timeout_s:g} s", tool.name
        assert description, tool.name


def test_the_module_table_lists_every_module() -> None:
    text = DOC.read_text(encoding="utf-8")
    package = Path(tools_package.__file__).parent
    for module in package.glob("*.py"):
        if module.name != "__init__.py":
            assert f"`{module.name}`" in text, module.name


def test_the_public_surface_is_pinned() -> None:
    assert tools_package.__all__ == sorted(tools_package.__all__)
    assert set(tools_package.__all__) >= {
        "ApprovalRequest", "ApprovalResult", "ExecutionContext", "PathPolicy", "PreToolCallback", "Tool",
        "ToolCall", "ToolRegistry", "ToolResult", "ToolStatus", "default_registry", "build_execution_context",
        "make_pre_tool_callback",
    }  # fmt: skip
    for name in tools_package.__all__:
        assert hasattr(tools_package, name), name


def test_the_secret_file_rules_table_matches_the_policy() -> None:
    from manual_slop.tools.security import SECRET_FILE_RULES

    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("| rule | names") : text.index("keeps this table equal to `SECRET_FILE_RULES`")]
    documented = {}
    for line in section.splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3:
            documented[cells[0].strip("`")] = (tuple(re.findall(r"`([^`]+)`", cells[1])), cells[2])
    assert documented == {rule.name: (rule.patterns, rule.reason) for rule in SECRET_FILE_RULES}
