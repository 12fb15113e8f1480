"""docs/guide_mcp.md, "Our tools as an MCP server": the option, endpoint and module tables are the
code's."""

from __future__ import annotations

from pathlib import Path

from manual_slop.commands.mcp import build_parser
from manual_slop.hooks.mcp_serve_api import mcp_serve_routes
from tests.helpers import markdown_tables

ROOT = Path(__file__).resolve().parents[3]
GUIDE = ROOT / "docs" / "guide_mcp.md"
SECTION = "## Our tools as an MCP server"


def tables() -> list[list[list[str]]]:
    return markdown_tables(GUIDE, SECTION, lambda text: text.replace("`", ""))


def test_the_option_table_is_the_serve_command() -> None:
    parser = build_parser()
    [serve] = [a for a in parser._subparsers._group_actions if a.dest == "action"]  # type: ignore[union-attr]
    options = [
        action.option_strings[0]
        for action in serve.choices["serve"]._actions
        if action.option_strings and action.option_strings[0] != "-h"
    ]
    documented = [row[0].split()[0] for row in tables()[1]]
    assert documented == options


def test_the_endpoint_table_is_the_routes() -> None:
    routes = mcp_serve_routes(None, lambda fn: fn())  # type: ignore[arg-type]
    documented = [row[0] for row in tables()[3]]
    assert documented == [f"{r.method} {r.path}" for r in routes]


def test_the_module_table_names_files_that_exist() -> None:
    modules = [row[0] for row in tables()[4]]
    assert modules == ["mcp/server.py", "mcp/transports.py", "mcp/serve_binding.py", "commands/mcp.py"]
    for module in modules:
        assert (ROOT / "src" / "manual_slop" / module).is_file(), module
