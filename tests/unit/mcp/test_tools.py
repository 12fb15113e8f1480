"""An MCP server's listing as registry tools (names, schemas, who asks) and its results as ours."""

from __future__ import annotations

from mcp import types

from manual_slop.mcp.config import parse_servers
from manual_slop.mcp.tools import build_tools, exposed_name, result_of
from manual_slop.tools.registry import ToolRegistry
from manual_slop.tools.tool import ExecutionContext, ToolCall

READ_ONLY = types.ToolAnnotations(read_only_hint=True)
SCHEMA = {"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]}


def listing(*tools: tuple[str, types.ToolAnnotations | None]) -> tuple[types.Tool, ...]:
    return tuple(
        types.Tool(name=n, description=f"the {n} tool", input_schema=SCHEMA, annotations=a) for n, a in tools
    )


def test_names_are_namespaced_in_the_registry_alphabet() -> None:
    assert exposed_name("ev", "get-Sum") == "ev__get_sum"
    long = exposed_name("server", "x" * 80)
    assert len(long) == 64 and long.startswith("server__x")
    assert exposed_name("server", "x" * 80) != exposed_name("server", "x" * 81)


def test_tools_are_filtered_untrusted_and_ask_unless_trusted_read_only() -> None:
    servers, _ = parse_servers(
        {"ev": {"command": "x", "trust": "read_only_auto", "tools_deny": ["secret*"]}}, {}
    )
    listed = listing(("add", READ_ONLY), ("write", None), ("secret_dump", READ_ONLY), ("get-sum", READ_ONLY),
                     ("get_sum", READ_ONLY))  # fmt: skip
    tools, problems = build_tools(servers["ev"], listed, lambda *a: None)  # type: ignore[arg-type, return-value]
    by_name = {t.name: t for t in tools}
    assert sorted(by_name) == ["ev__add", "ev__get_sum", "ev__write"]
    assert not by_name["ev__add"].mutating and by_name["ev__write"].mutating
    assert all(t.untrusted and t.timeout_s == 60.0 for t in tools)
    assert "both become ev__get_sum" in problems[0].message  # a clash is reported, not a crash


def test_calls_are_validated_against_the_servers_schema_before_they_are_sent() -> None:
    servers, _ = parse_servers({"ev": {"command": "x", "trust": "read_only_auto"}}, {})
    sent: list[tuple] = []

    def call(server: str, tool: str, args: dict, timeout: float) -> types.CallToolResult:
        sent.append((server, tool, args))
        return types.CallToolResult(content=[types.TextContent(type="text", text=str(args["a"] * 2))])

    tools, _ = build_tools(servers["ev"], listing(("add", READ_ONLY)), call)
    registry = ToolRegistry(tools)
    ctx = ExecutionContext.for_directory(".")
    bad = registry.execute(ToolCall.new("ev__add", {"a": "two"}), ctx)
    assert "Parameter validation error" in bad.content and sent == []
    good = registry.execute(ToolCall.new("ev__add", {"a": 21}), ctx)
    assert sent == [("ev", "add", {"a": 21})]
    assert good.ok and '<untrusted_content source="ev__add">\n42\n</untrusted_content>' in good.content


def test_results_become_text_and_errors_stay_marked_untrusted() -> None:
    mixed = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="line"),
            types.ImageContent(type="image", data="AAAA", mime_type="image/png"),
            types.ResourceLink(type="resource_link", uri="file:///x", name="x"),
        ]
    )
    text = result_of("ev__t", mixed).content
    assert text.splitlines() == ["line", "[image image/png, 3 bytes, not shown]", "[resource link file:///x]"]
    structured = types.CallToolResult(content=[], structured_content={"sum": 3})
    assert result_of("ev__t", structured).content == '{"sum": 3}'
    error = result_of(
        "ev__t", types.CallToolResult(content=[types.TextContent(type="text", text="no")], is_error=True)
    )
    assert not error.ok and '<untrusted_content source="ev__t">\nno\n</untrusted_content>' in error.content
