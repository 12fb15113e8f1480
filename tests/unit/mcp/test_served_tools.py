"""What our MCP server offers: our tools, never an external MCP server's (no proxying)."""

from __future__ import annotations

from manual_slop.mcp.server import call_result, mcp_tool, served_tools
from manual_slop.tools import Tool, ToolResult, default_registry


def test_external_servers_tools_are_not_served_on() -> None:
    registry = default_registry()
    borrowed = Tool(
        name="fs__read_text_file",
        description="[MCP server 'fs'] read",
        parameters={"type": "object", "properties": {}},
        handler=lambda args, run: ToolResult.success("x"),
        source="fs",
    )
    registry.register(borrowed)
    names = [tool.name for tool in served_tools(registry)]
    assert "fs__read_text_file" not in names
    assert "read_file" in names and len(names) == len(registry) - 1


def test_every_outcome_but_success_is_an_error_result_that_says_why() -> None:
    ok = call_result(ToolResult.success("fine"))
    assert not ok.is_error and ok.content[0].text == "fine" and ok.meta == {"status": "success"}
    for result in (
        ToolResult.rejected("not now"),
        ToolResult.denied("ACCESS DENIED: outside the project"),
        ToolResult.error("", "boom"),
        ToolResult.timeout("partial"),
    ):
        converted = call_result(result)
        assert converted.is_error and converted.meta["status"] == str(result.status)
        assert converted.content[0].text.strip()
    assert "boom" in call_result(ToolResult.error("", "boom")).content[0].text


def test_the_python_setters_are_destructive_and_the_new_readers_read_only() -> None:
    registry = default_registry()
    for name in ("py_set_signature", "py_set_var_declaration"):
        hints = mcp_tool(registry.get(name)).annotations
        assert hints.destructive_hint is True and hints.read_only_hint is False, name
    readers = ("py_get_var_declaration", "py_get_class_summary", "py_get_hierarchy", "get_skeleton")
    for name in (*readers, "get_ui_performance"):
        hints = mcp_tool(registry.get(name)).annotations
        assert hints.read_only_hint is True and hints.destructive_hint is False, name
