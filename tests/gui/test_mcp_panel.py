"""The MCP panel in the real window with the real filesystem server: its state and tools are
shown, an entry left out of the configuration is listed, Disable / Enable switch the server
(saved in config.toml; its tools leave and rejoin the registry), and Serve over HTTP / Stop
serving start and stop this app's own MCP server."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import tomli_w

from manual_slop.ai import AIClient
from tests.gui.conftest import frames_until

FILESYSTEM = Path(__file__).resolve().parents[2] / ".tools/mcp-npm/node_modules/.bin/mcp-server-filesystem"


@pytest.mark.heavy(12)
def test_the_mcp_panel_shows_a_server_and_switches_it_off_and_on(
    make_controller, run_gui, app_dir: Path, artifacts: Path
) -> None:
    if shutil.which("node") is None:
        pytest.skip("Node.js is not installed, so the npm MCP filesystem server cannot run")
    assert FILESYSTEM.exists(), "run `make mcp-tools` (`make test` does)"
    servers = {"fs": {"command": str(FILESYSTEM), "args": [str(app_dir)], "trust": "read_only_auto"},
               "bad": {"command": "x", "trust": "always"}}  # fmt: skip
    (app_dir / "config.toml").write_text(tomli_w.dumps({"mcp": {"servers": servers}}))
    ctrl = make_controller(backend=AIClient())
    ctrl.mcp.prepare()
    registry = ctrl.backend.registry()
    assert "fs__read_text_file" in registry.names()

    def fs() -> dict:
        return ctrl.mcp.view["servers"][0]

    def test(ctx, app) -> None:
        ctx.yield_(5)
        app.focus("MCP")
        frames_until(ctx, lambda: fs()["state"] == "running")
        ctx.yield_(3)
        ctx.item_open("//MCP/**/fs##server")
        ctx.yield_(2)
        from imgui_bundle.immapp import testing

        testing.capture(ctx, str(artifacts / "panel_mcp.png"))
        ctx.item_click("//MCP/**/Disable")
        frames_until(ctx, lambda: not fs()["enabled"] and fs()["state"] == "stopped")
        assert not any(n.startswith("fs__") for n in registry.names())
        ctx.item_click("//MCP/**/Enable")
        frames_until(ctx, lambda: fs()["enabled"])
        ctx.item_click("//MCP/**/Serve over HTTP")  # this app's own tools, for MCP clients
        frames_until(ctx, lambda: ctrl.mcp_serve.view["running"])
        served.append(ctrl.mcp_serve.view["url"])
        ctx.item_click("//MCP/**/Stop serving")
        frames_until(ctx, lambda: not ctrl.mcp_serve.view["running"])

    served: list[str] = []
    run_gui(ctrl, test)
    assert served and served[0].startswith("http://127.0.0.1:") and served[0].endswith("/mcp")
    assert "enabled = true" in (app_dir / "config.toml").read_text()
    assert any("mcp.servers.bad.trust" in p for p in ctrl.mcp.view["problems"])
    ctrl.mcp.prepare()  # the next send starts it again
    assert "fs__read_text_file" in registry.names()
