"""Our MCP server driven by programs nobody here wrote: the official SDK's client over stdio
against ``sloppy mcp serve`` (a real subprocess), the MCP Inspector CLI (npm) over HTTP, and the
real Gemini CLI with our server in its settings, its call passing our clutch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from manual_slop.hooks.api_client import ApiHookClient
from manual_slop.tools.registry import default_registry
from tests.fakes import GeminiFake
from tests.fakes.script import Call, Reply
from tests.helpers import app_env
from tests.integration.mcp_server.conftest import GEMINI, INSPECTOR, ROOT, Served, needs_node, run_async

KEY = "mcp-cli-key-7d1"


def _wait_for_file(path: Path, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.05)
    raise AssertionError(f"{path} was not written within {timeout:g} s")


def test_stdio_server_lists_gates_and_refuses(tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters

    project = tmp_path / "proj"
    project.mkdir()
    (project / "a.txt").write_text("alpha\n")
    (project / "p.toml").write_text('[files]\npaths = ["a.txt"]\n')
    port_file, token_file = tmp_path / "port", tmp_path / "token"
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            str(ROOT / "sloppy.py"), "mcp", "serve", "--project", str(project / "p.toml"),
            "--config", str(tmp_path / "config.toml"), "--port-file", str(port_file),
            "--token-file", str(token_file), "--log-dir", str(tmp_path / "logs"),
        ],
        env=app_env(),
        cwd=str(tmp_path),
    )  # fmt: skip
    decided: list[dict[str, Any]] = []

    def decide() -> None:
        port = int(_wait_for_file(port_file))
        client = ApiHookClient(f"http://127.0.0.1:{port}", token=_wait_for_file(token_file))
        try:
            event = client.wait_for_event("pending_added", timeout=30)
            decided.append(event["payload"])
            client.approve(event["payload"]["id"])
        finally:
            client.close()

    decider = threading.Thread(target=decide, name="test-decider")
    decider.start()

    async def session() -> Any:
        async with Client(params) as client:
            tools = (await client.list_tools()).tools
            outside = await client.call_tool("read_file", {"path": "/etc/passwd"})
            inside = await client.call_tool("read_file", {"path": "a.txt"})
            written = await client.call_tool("write_file", {"path": "b.txt", "content": "beta"})
            resources = [str(r.uri) for r in (await client.list_resources()).resources]
            return tools, outside, inside, written, resources

    tools, outside, inside, written, resources = run_async(session, timeout=90)
    decider.join(10)
    assert sorted(t.name for t in tools) == sorted(default_registry().names())
    assert all(t.input_schema.get("type") == "object" for t in tools)
    assert outside.is_error and "ACCESS DENIED" in outside.content[0].text
    assert "alpha" in inside.content[0].text
    assert not written.is_error, written.content
    assert (project / "b.txt").read_text() == "beta"
    assert decided and decided[0]["payload"]["tool"] == "write_file"
    assert resources == ["slop://context/a.txt", "slop://discussion/current"]


def _inspector(served: Served, *args: str) -> Any:
    node = needs_node(INSPECTOR, "make mcp-tools")
    argv = ["node", str(node), served.url, "--transport", "http"]
    argv += ["--header", f"Authorization: Bearer {served.app.token}", *args]
    # its build/ as the working folder: it finds its own package.json at a path relative to it
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=app_env(), cwd=node.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_the_mcp_inspector_cli_lists_and_calls_our_tools(served: Served) -> None:
    (served.base / "hello.txt").write_text("hello from the project\n")
    listed = _inspector(served, "--method", "tools/list")
    assert sorted(t["name"] for t in listed["tools"]) == sorted(default_registry().names())
    assert all("inputSchema" in t for t in listed["tools"])
    called = _inspector(
        served, "--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=hello.txt"
    )
    assert "hello from the project" in called["content"][0]["text"]
    refused = _inspector(
        served, "--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=/etc/passwd"
    )
    assert refused["isError"] is True and "ACCESS DENIED" in refused["content"][0]["text"]


def test_the_gemini_cli_calls_our_tool_through_our_clutch(served: Served, tmp_path: Path) -> None:
    cli = needs_node(GEMINI, "make gemini-cli")
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "telemetry": {"enabled": False},
        "privacy": {"usageStatisticsEnabled": False},
        "general": {"enableAutoUpdate": False, "maxAttempts": 1},
        "mcpServers": {"slop": {"httpUrl": served.url, "headers": served.headers, "trust": True}},
    }
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    hook = served.app.client()
    decided: list[dict[str, Any]] = []

    def decide() -> None:
        event = hook.wait_for_event("pending_added", timeout=60)
        decided.append(event["payload"])
        hook.approve(event["payload"]["id"])

    turns = [Reply(calls=[Call("mcp_slop_write_file", {"path": "from_gemini.txt", "content": "via MCP"})])]
    with GeminiFake([*turns, Reply("written")], api_key=KEY) as fake:
        env = {
            "PATH": os.environ["PATH"], "HOME": str(home), "GEMINI_API_KEY": KEY,
            "GOOGLE_GEMINI_BASE_URL": fake.base_url, "GEMINI_CLI_TRUST_WORKSPACE": "true",
            "GEMINI_CLI_NO_RELAUNCH": "1",
        }  # fmt: skip
        decider = threading.Thread(target=decide, name="test-decider")
        decider.start()
        done = subprocess.run(
            [str(cli), "-m", "gemini-2.5-flash", "-o", "stream-json", "--approval-mode", "yolo", "-p", "go"],
            env=env, cwd=str(served.base), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        decider.join(10)
        calls = fake.model_calls()
    assert done.returncode == 0, done.stderr[-2000:]
    assert decided and decided[0]["payload"]["tool"] == "write_file"  # it asked in our clutch
    assert (served.base / "from_gemini.txt").read_text() == "via MCP"
    answered = json.dumps(calls[-1].body)
    assert "functionResponse" in answered and "mcp_slop_write_file" in answered


def test_standalone_http_serves_with_the_token_and_stops_on_sigterm(tmp_path: Path) -> None:
    import signal

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    token_file = tmp_path / "token"
    argv = [
        sys.executable, str(ROOT / "sloppy.py"), "mcp", "serve", "--http", "127.0.0.1:0",
        "--config", str(tmp_path / "config.toml"), "--token-file", str(token_file),
        "--log-dir", str(tmp_path / "logs"),
    ]  # fmt: skip
    process = subprocess.Popen(argv, cwd=tmp_path, env=app_env(), stderr=subprocess.PIPE, text=True)
    try:
        url = ""
        deadline = time.monotonic() + 30
        while not url and time.monotonic() < deadline:
            line = process.stderr.readline()  # type: ignore[union-attr]
            if "MCP server listening on " in line:
                url = line.split("MCP server listening on ", 1)[1].strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
        token = _wait_for_file(token_file)

        async def listing(bearer: str) -> Any:
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {bearer}"}, timeout=20)
            async with Client(streamable_http_client(url, http_client=http)) as client:
                return [t.name for t in (await client.list_tools()).tools]

        assert "read_file" in run_async(lambda: listing(token))
        with httpx2.Client(timeout=5) as http:
            assert http.post(url, json={}, headers={"Authorization": "Bearer wrong"}).status_code == 401
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(5)
        process.stderr.close()  # type: ignore[union-attr]


def test_bad_arguments_exit_2_with_a_message(tmp_path: Path) -> None:
    for args, expected in (
        (["--http", "nonsense"], "HOST:PORT"),
        (["--http", "127.0.0.1:99999"], "0-65535"),
        (["--project", str(tmp_path / "missing.toml")], "does not exist"),
    ):
        done = subprocess.run(
            [sys.executable, str(ROOT / "sloppy.py"), "mcp", "serve", *args],
            cwd=tmp_path, env=app_env(), capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        assert done.returncode == 2, (args, done.stderr)
        assert expected in done.stderr and done.stdout == ""
