"""MCP: this app's own MCP server (Serve over HTTP / Stop, its URL), and the external MCP
servers (``[mcp.servers]``) -- state, pid, restarts, last error, the tools each offers (and
whether a call asks), the entries left out of the configuration -- with Restart and
Enable/Disable buttons.

The panel only reads ``ctrl.mcp.view`` (replaced on the main thread whenever a server changes)
and clicks the ``btn_mcp_restart`` / ``btn_mcp_enable`` / ``btn_mcp_disable`` actions, the same
as ``/api/mcp/servers/{name}/…``; a refusal is a toast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from imgui_bundle import imgui

from manual_slop.gui.widgets import COLORS, status_color, text_wrapped_colored

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["render_mcp"]

STATE_COLORS = {"running": "ok", "starting": "in_progress", "failed": "error", "stopped": "muted"}
EMPTY = (
    "No external MCP servers. Add [mcp.servers.<name>] with command/args (stdio) or url (HTTP) to "
    "config.toml or the project file; their tools join the registry as <name>__<tool>."
)


def render_mcp(ui: Ui) -> None:
    _served(ui)
    binding = getattr(ui.ctrl, "mcp", None)
    view: dict[str, Any] = binding.view if binding is not None else {"servers": [], "problems": []}
    servers, problems = view["servers"], view["problems"]
    imgui.separator_text(f"Servers ({len(servers)})")
    if not servers:
        text_wrapped_colored(COLORS["muted"], EMPTY)
    for server in servers:
        _server(ui, server)
    if problems:
        imgui.separator_text(f"Entries left out ({len(problems)})")
        for problem in problems:
            text_wrapped_colored(COLORS["error"], str(problem))


def _served(ui: Ui) -> None:
    """This app's tools for MCP clients, sharing its clutch (``btn_mcp_serve_start`` / ``_stop``)."""
    serving = getattr(ui.ctrl, "mcp_serve", None)
    if serving is None:
        return
    view = serving.view
    imgui.separator_text("This app as an MCP server")
    if view.get("running"):
        imgui.text_colored(COLORS["ok"], "serving")
        imgui.same_line()
        imgui.text(str(view["url"]))
        imgui.same_line()
        if imgui.small_button("Stop serving"):
            ui.act.click("btn_mcp_serve_stop")
        imgui.text_disabled("clients send the Hook API's token as a bearer token; their changes ask here")
    else:
        if imgui.small_button("Serve over HTTP"):
            ui.act.click("btn_mcp_serve_start", "")
        imgui.same_line()
        imgui.text_disabled("or run `sloppy mcp serve` (stdio) for a client that starts its own")
    if view.get("error"):
        text_wrapped_colored(COLORS["error"], f"MCP server: {view['error']}")


def _server(ui: Ui, server: dict[str, Any]) -> None:
    name, state = str(server["name"]), str(server["state"])
    imgui.push_id(name)
    color = COLORS.get(STATE_COLORS.get(state, ""), status_color(state))
    opened = imgui.tree_node_ex(f"{name}##server", imgui.TreeNodeFlags_.default_open)
    imgui.same_line()
    imgui.text_colored(color, state if server["enabled"] else "disabled")
    imgui.same_line()
    pid = f"pid {server['pid']}" if server.get("pid") else "no process"
    imgui.text_disabled(
        f"{server['transport']} · {pid} · {len(server['tools'])} tools · {server['restarts']} restarts"
    )
    imgui.same_line()
    if imgui.small_button("Restart"):
        ui.act.click("btn_mcp_restart", name)
    imgui.same_line()
    toggle = ("Disable", "btn_mcp_disable") if server["enabled"] else ("Enable", "btn_mcp_enable")
    if imgui.small_button(toggle[0]):
        ui.act.click(toggle[1], name)
    if opened:
        imgui.text_disabled(f"{server['target']}  (trust {server['trust']}, {server['scope']})")
        if server["last_error"]:
            text_wrapped_colored(COLORS["error"], f"last error: {server['last_error']}")
        for note in server.get("problems", []):
            text_wrapped_colored(COLORS["warn"], note)
        _tools(server["tools"])
        imgui.tree_pop()
    imgui.pop_id()


def _tools(tools: list[dict[str, Any]]) -> None:
    if not tools:
        imgui.text_disabled("no tools listed yet (the server starts with the next send)")
        return
    flags = imgui.TableFlags_.row_bg | imgui.TableFlags_.borders_inner_v
    if not imgui.begin_table("##tools", 3, flags):
        return
    imgui.table_setup_column("tool", imgui.TableColumnFlags_.width_stretch, 1.2)
    imgui.table_setup_column("server's name", imgui.TableColumnFlags_.width_stretch, 1.0)
    imgui.table_setup_column(
        "a call", imgui.TableColumnFlags_.width_fixed, imgui.calc_text_size("runs unasked").x
    )
    imgui.table_headers_row()
    for tool in tools:
        imgui.table_next_row()
        imgui.table_next_column()
        imgui.text(str(tool["name"]))
        imgui.table_next_column()
        imgui.text_disabled(str(tool["tool"]))
        imgui.table_next_column()
        imgui.text_colored(
            COLORS["warn" if tool["asks"] else "ok"], "asks" if tool["asks"] else "runs unasked"
        )
    imgui.end_table()
