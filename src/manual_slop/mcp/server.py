"""Our tools, context and agent profiles served to any MCP client, on the official SDK's
low-level :class:`mcp.server.lowlevel.Server`.

What a client sees (:func:`build_server`):

- **tools**: every tool of the app's registry (the ones our own agents get; external MCP
  servers' tools are not passed on), with its JSON schema, its description and the MCP
  annotations ``readOnlyHint``/``destructiveHint`` from :attr:`Tool.mutating`. A call runs
  through :meth:`ToolRegistry.execute` with the same context a chat send builds
  (:func:`~manual_slop.tools.approval.build_execution_context`): one path policy, the
  redactor, the HITL rules and the Execution Clutch of this app. A mutating call therefore
  waits for the same dialog the window shows (headless: ``/api/pending``). A refused,
  rejected, denied, failed or timed-out call is an MCP error result (``isError``) whose text
  says why; the tool's own status is in ``_meta.status``.
- **resources**: ``slop://context/<path>`` for each context file, as its current view
  (full, outline, summary, slices … as the Context panel sets it, masks and redaction
  applied), and ``slop://discussion/current``, the active discussion.
- **prompts**: the agent profiles (their system prompt), one prompt each.

Handlers never block the transport's event loop: tool calls and file reads run on worker
threads (``anyio.to_thread``), and main-thread state is read through ``call_on_main``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote, unquote

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from manual_slop import __version__
from manual_slop.tools.approval import build_execution_context
from manual_slop.tools.tool import Tool, ToolCall, ToolResult, ToolStatus

if TYPE_CHECKING:
    from manual_slop.controller import AppController
    from manual_slop.tools.registry import ToolRegistry

__all__ = [
    "CONTEXT_URI",
    "DISCUSSION_URI",
    "MCP_TIER",
    "SERVER_NAME",
    "build_server",
    "call_result",
    "served_tools",
]

SERVER_NAME = "manual-slop"
MCP_TIER = "MCP"  # the tier label of calls made by MCP clients (Tool Calls view, logs, rules)
CONTEXT_URI = "slop://context/"
DISCUSSION_URI = "slop://discussion/current"
MAIN_TIMEOUT_S = 5.0  # main-thread reads (project, discussion, profiles)
INVALID_PARAMS = -32602
RESOURCE_NOT_FOUND = -32002

T = TypeVar("T")


def served_tools(registry: ToolRegistry) -> list[Tool]:
    """The registry's tools a client may call: ours, not external MCP servers' (those are the
    user's own connections; passing them on would make this server a proxy nobody asked for)."""
    return [tool for tool in registry.list() if not tool.source]


def mcp_tool(tool: Tool) -> types.Tool:
    return types.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.parameters,
        annotations=types.ToolAnnotations(read_only_hint=not tool.mutating, destructive_hint=tool.mutating),
    )


def call_result(result: ToolResult) -> types.CallToolResult:
    """A tool result as MCP sees it: anything but success is an error result saying why."""
    text = result.content or result.error_message or str(result.status)
    if not result.ok and result.error_message and result.error_message not in text:
        text = f"{text}\n{result.error_message}"
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        is_error=result.status is not ToolStatus.SUCCESS,
        meta={"status": str(result.status)},
    )


class McpHost:
    """The handlers, bound to one controller. Public so tests can drive them in-process."""

    def __init__(self, ctrl: AppController) -> None:
        self.ctrl = ctrl
        self._own: ToolRegistry | None = None

    # -- helpers -------------------------------------------------------------------------
    def registry(self) -> ToolRegistry:
        """The AI client's registry (what our agents get); a controller without one (scripts,
        tests) serves the built-in tools."""
        backend = self.ctrl.backend
        if backend is not None:
            return backend.registry()
        if self._own is None:
            from manual_slop.tools.registry import default_registry

            self._own = default_registry()
        return self._own

    def _on_main(self, fn: Callable[[], T]) -> T:
        ctrl = self.ctrl
        return fn() if ctrl.on_main_thread() else ctrl.call_on_main(fn, MAIN_TIMEOUT_S)

    async def _in_thread(self, fn: Callable[[], T]) -> T:
        return await anyio.to_thread.run_sync(fn, abandon_on_cancel=True)

    # -- tools ---------------------------------------------------------------------------
    async def list_tools(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[mcp_tool(t) for t in served_tools(self.registry())])

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        registry = self.registry()
        names = {t.name for t in served_tools(registry)}
        if params.name not in names:
            raise MCPError(
                INVALID_PARAMS, f"unknown tool {params.name!r} (tools: {', '.join(sorted(names))})"
            )
        abort = threading.Event()

        def run() -> ToolResult:
            context = build_execution_context(self.ctrl, tier=MCP_TIER, abort=abort, timeout=MAIN_TIMEOUT_S)
            return registry.execute(ToolCall.new(params.name, params.arguments or {}), context)

        try:
            result = await self._in_thread(run)
        except BaseException:
            abort.set()  # the client went away: a dialog still open for this call is answered "rejected"
            raise
        return call_result(result)

    # -- resources -----------------------------------------------------------------------
    async def list_resources(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        def read() -> tuple[list[str], str]:
            state = self.ctrl.state
            return list(state.project_files), state.active_discussion

        files, discussion = self._on_main(read)
        resources = [
            types.Resource(
                name=name,
                uri=CONTEXT_URI + quote(name),
                description="a context file, as its current view",
                mime_type="text/markdown",
            )
            for name in files
        ]
        resources.append(
            types.Resource(
                name=f"discussion: {discussion}",
                uri=DISCUSSION_URI,
                description="the active discussion's entries",
                mime_type="text/markdown",
            )
        )
        return types.ListResourcesResult(resources=resources)

    async def read_resource(
        self, ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        if uri == DISCUSSION_URI:
            text = await self._in_thread(self._discussion_text)
        elif uri.startswith(CONTEXT_URI):
            name = unquote(uri[len(CONTEXT_URI) :])
            text = await self._in_thread(lambda: self._file_view(name))
        else:
            raise MCPError(RESOURCE_NOT_FOUND, f"no resource {uri!r} (see resources/list)")
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="text/markdown", text=text)]
        )

    def _discussion_text(self) -> str:
        def read() -> tuple[str, list[dict[str, Any]]]:
            state = self.ctrl.state
            return state.active_discussion, [dict(e) for e in state.discussion_entries()]

        name, entries = self._on_main(read)
        blocks = [f"# Discussion: {name}"]
        blocks += [f"## {e.get('role', '?')}\n\n{e.get('content', '')}" for e in entries]
        return self.ctrl.redactor.redact("\n\n".join(blocks) + "\n")

    def _file_view(self, name: str) -> str:
        """One context file rendered in its view, read now (never a file outside the context)."""
        from manual_slop.context.aggregate import read_files
        from manual_slop.context.views import render_block

        service = self.ctrl.context
        request = self._on_main(service.request)
        if name not in request.paths:
            raise MCPError(RESOURCE_NOT_FOUND, f"{name!r} is not a context file (see resources/list)")
        single = _only(request, name)
        read = read_files(single)
        # every file read came from this one entry, whatever its form ('./a.py', 'sub/../a.py', a folder)
        matches = list(read.items)
        if not matches:
            problems = "; ".join(read.problems) or "no file matched"
            raise MCPError(RESOURCE_NOT_FOUND, f"{name!r} cannot be read: {problems}")
        blocks = [render_block(item, item.mode, cache=service.cache, masks=read.masks) for item in matches]
        return self.ctrl.redactor.redact("".join(blocks))

    # -- prompts -------------------------------------------------------------------------
    def _profiles(self) -> list[Any]:
        binding = getattr(self.ctrl, "agents", None)
        if binding is None:
            return []
        return self._on_main(lambda: sorted(binding.catalog.agents.values(), key=lambda a: a.key))

    async def list_prompts(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        profiles = await self._in_thread(self._profiles)
        prompts = [
            types.Prompt(name=p.key, description=p.description or f"the {p.key} agent's system prompt")
            for p in profiles
        ]
        return types.ListPromptsResult(prompts=prompts)

    async def get_prompt(self, ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        profiles = {p.key: p for p in await self._in_thread(self._profiles)}
        profile = profiles.get(params.name)
        if profile is None:
            known = ", ".join(sorted(profiles)) or "none"
            raise MCPError(INVALID_PARAMS, f"no agent profile {params.name!r} (profiles: {known})")
        text = self.ctrl.redactor.redact(profile.system_prompt)
        return types.GetPromptResult(
            description=profile.description or None,
            messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))],
        )


def _only(request: Any, name: str) -> Any:
    """``request`` narrowed to one of its files (the others are not read)."""
    import dataclasses

    return dataclasses.replace(request, paths=(name,), screenshots=())


def build_server(ctrl: AppController) -> Server[Any]:
    """A low-level MCP server whose handlers run against ``ctrl`` (any transport)."""
    host = McpHost(ctrl)
    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=(
            "Manual Slop's tools for the open project. Every path is checked by the app's path "
            "policy; changes wait for the user's approval in the app."
        ),
        on_list_tools=host.list_tools,
        on_call_tool=host.call_tool,
        on_list_resources=host.list_resources,
        on_read_resource=host.read_resource,
        on_list_prompts=host.list_prompts,
        on_get_prompt=host.get_prompt,
    )
