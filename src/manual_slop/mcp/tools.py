"""External MCP tools as registry :class:`~manual_slop.tools.tool.Tool`\\ s, and their results as ours.

A server's tool ``get-sum`` becomes ``<server>__get_sum`` (lower case, ``[a-z0-9_]``, at most 64
characters); its input schema is the tool's parameters (validated by the registry before every
call, as for any tool). Every such tool is ``untrusted`` (its results reach the model wrapped as
data) and mutating -- the call waits in the Execution Clutch -- unless the server's ``trust`` is
``read_only_auto`` and the tool is annotated ``readOnlyHint: true``. An HITL rule naming the tool
decides as for any tool. Results: text blocks as they are, other blocks described in a line,
structured content as JSON; an error result (``isError``) is an error the model can act on.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

from mcp import types

from manual_slop.mcp.config import ServerConfig
from manual_slop.schema import Problem
from manual_slop.tools.errors import ToolDefinitionError
from manual_slop.tools.tool import Tool, ToolResult, ToolRun
from manual_slop.tools.untrusted import wrap_untrusted

__all__ = ["SEPARATOR", "build_tools", "exposed_name", "result_of"]

SEPARATOR = "__"
MAX_NAME = 64
MAX_DESCRIPTION = 2_000

# (server, tool, args, seconds) -> the server's result; raises McpClientError
Caller = Callable[[str, str, dict[str, Any], float], types.CallToolResult]


def exposed_name(server: str, tool: str) -> str:
    """``<server>__<tool>`` in the registry's alphabet; a long name keeps a digest of the original."""
    clean = re.sub(r"[^a-z0-9_]", "_", tool.lower()).strip("_") or "tool"
    name = f"{server}{SEPARATOR}{clean}"
    if len(name) > MAX_NAME:
        digest = hashlib.sha1(tool.encode("utf-8")).hexdigest()[:8]
        name = f"{name[: MAX_NAME - 9]}_{digest}"
    return name


def build_tools(
    config: ServerConfig, listed: tuple[types.Tool, ...], call: Caller
) -> tuple[list[Tool], list[Problem]]:
    """The registry tools of one server's listing, filtered by ``tools_allow`` / ``tools_deny``;
    a tool that cannot be offered (a clashing name, an unusable schema) is a problem, not a crash."""
    tools: list[Tool] = []
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for listing in listed:
        if not config.offers(listing.name):
            continue
        name = exposed_name(config.name, listing.name)
        where = f"mcp.servers.{config.name}"
        if name in seen:
            problems.append(Problem("mcp", where, f"tools {seen[name]!r} and {listing.name!r} both become "
                                    f"{name}; {listing.name!r} is not offered"))  # fmt: skip
            continue
        seen[name] = listing.name
        try:
            tools.append(_tool(config, listing, name, call))
        except ToolDefinitionError as exc:
            problems.append(Problem("mcp", where, f"tool {listing.name!r} is not offered: {exc}"))
    return tools, problems


def _tool(config: ServerConfig, listing: types.Tool, name: str, call: Caller) -> Tool:
    annotations = listing.annotations
    read_only = annotations.read_only_hint if annotations is not None else None
    schema = dict(listing.input_schema or {})
    schema.setdefault("type", "object")
    about = (listing.description or listing.title or listing.name).strip()
    description = f"[MCP server '{config.name}', tool '{listing.name}'] {about}"[:MAX_DESCRIPTION]
    server, original = config.name, listing.name

    def handler(args: dict[str, Any], run: ToolRun) -> ToolResult:
        result = call(server, original, args, max(0.1, run.remaining()))
        return result_of(name, result)

    def preview(args: dict[str, Any], run: ToolRun) -> str:
        hint = {True: "read-only", False: "may change things"}.get(read_only, "not annotated")  # type: ignore[arg-type]
        shown = json.dumps(args, indent=2, ensure_ascii=False, default=str)
        return f"MCP server '{server}' ({config.transport}), tool '{original}' ({hint})\n\n{shown}"

    return Tool(
        name=name,
        description=description,
        parameters=schema,
        handler=handler,
        mutating=not config.runs_unasked(read_only),
        timeout_s=config.timeout_s,
        preview=preview,
        untrusted=True,
        source=server,
    )


def result_of(name: str, result: types.CallToolResult) -> ToolResult:
    """Our result for an MCP tool's result; an error's text is wrapped as untrusted here (the
    registry wraps successful results)."""
    parts = [_block_text(block) for block in result.content]
    if result.structured_content is not None and not any(
        isinstance(b, types.TextContent) for b in result.content
    ):
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    text = "\n".join(p for p in parts if p) or "(the tool returned no content)"
    if result.is_error:
        return ToolResult.error(f"Error reported by the tool:\n{wrap_untrusted(name, text)}")
    return ToolResult.success(text)


def _block_text(block: Any) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent | types.AudioContent):
        kind = "image" if isinstance(block, types.ImageContent) else "audio"
        return f"[{kind} {block.mime_type}, {len(block.data) * 3 // 4:,} bytes, not shown]"
    if isinstance(block, types.ResourceLink):
        return f"[resource link {block.uri}{': ' + block.description if block.description else ''}]"
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        text = getattr(resource, "text", None)
        if isinstance(text, str):
            return f"[resource {resource.uri}]\n{text}"
        return f"[resource {resource.uri}, {resource.mime_type or 'binary'}, not shown]"
    return f"[{getattr(block, 'type', type(block).__name__)} content, not shown]"
