"""A server over streamable HTTP: the reference everything server started in its
``streamableHttp`` mode; its tools join the registry through the SDK's HTTP client, configured
headers are sent but never shown, and a call runs through the registry's pipeline."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

from manual_slop.mcp.config import parse_servers
from manual_slop.mcp.manager import McpManager
from manual_slop.process_tree import kill_tree
from manual_slop.tools.registry import ToolRegistry
from manual_slop.tools.tool import ApprovalResult, ExecutionContext, ToolCall
from tests.integration.mcp.conftest import EVERYTHING

HEADER_VALUE = "Bearer header-secret-0123456789"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_server(mcp_programs: None) -> Iterator[str]:
    port = free_port()
    env = {"PATH": os.environ.get("PATH", ""), "PORT": str(port), "HOME": os.environ.get("HOME", "/tmp")}
    proc = subprocess.Popen(
        [str(EVERYTHING), "streamableHttp"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, "the HTTP server did not start"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        kill_tree(proc)


def test_an_http_server_s_tools_run_through_the_registry(http_server: str) -> None:
    servers, problems = parse_servers(
        {"web": {"url": http_server, "headers": {"Authorization": HEADER_VALUE}, "tools_allow": ["echo"]}}, {}
    )
    assert problems == []
    registry = ToolRegistry()
    manager = McpManager(servers, lambda: registry)
    try:
        manager.prepare(15)
        assert registry.names() == ["web__echo"]
        asked: list[str] = []

        def approve(request):
            asked.append(request.preview)
            return ApprovalResult(True, dict(request.call.args))

        ctx = ExecutionContext.for_directory(".", pre_tool_callback=approve)
        result = registry.execute(ToolCall.new("web__echo", {"message": "over http"}), ctx)
        assert result.ok, result.content
        assert '<untrusted_content source="web__echo">\nEcho: over http\n' in result.content
        assert "MCP server 'web' (http), tool 'echo' (read-only)" in asked[0]
        [server] = manager.snapshot()["servers"]
        assert (server["state"], server["transport"], server["pid"]) == ("running", "http", None)
        assert server["header_keys"] == ["Authorization"] and HEADER_VALUE not in str(server)
    finally:
        manager.close()
