"""docs/guide_mcp.md, "External MCP servers": its tables are the code's (fields, states,
endpoints, modules) and its example configuration is valid."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from manual_slop.hooks.mcp_api import mcp_routes
from manual_slop.mcp.client import ServerState
from manual_slop.mcp.config import FIELDS, parse_servers
from tests.helpers import markdown_tables

ROOT = Path(__file__).resolve().parents[3]
GUIDE = ROOT / "docs" / "guide_mcp.md"
SECTION = "## External MCP servers"


def table(heading: str) -> list[list[str]]:
    [rows] = markdown_tables(GUIDE, heading, lambda text: text.replace("`", ""))
    return rows


def test_the_field_table_is_the_config_checks() -> None:
    assert [tuple(row) for row in table("### Fields of `[mcp.servers.<name>]`")] == [
        (name, *spec) for name, spec in FIELDS.items()
    ]


def test_the_state_table_is_the_state_enum() -> None:
    assert [row[0] for row in table("### States")] == list(ServerState)


def test_the_endpoint_table_is_the_routes() -> None:
    routes = mcp_routes(None, lambda fn: fn())  # type: ignore[arg-type]
    assert [row[:2] for row in table("### Endpoints and actions")] == [[r.method, r.path] for r in routes]


def test_the_module_table_names_files_that_exist() -> None:
    for row in table("### Modules"):
        assert (ROOT / "src" / "manual_slop" / row[0]).is_file(), row[0]


def test_the_example_configuration_is_valid() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    section = text[text.index(SECTION) :]
    example = re.search(r"```toml\n(.*?)```", section, re.S)
    assert example is not None
    servers, problems = parse_servers(tomllib.loads(example.group(1))["mcp"]["servers"], {})
    assert problems == [] and sorted(servers) == ["fs", "git", "search"]
