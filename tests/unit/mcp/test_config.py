"""``[mcp.servers.<name>]``: checked entry by entry (a bad one is left out, named with its field),
project over global, tool filters, trust, and the child's minimal environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from manual_slop.mcp.config import Trust, child_environment, parse_servers

FS = {"command": "mcp-server-filesystem", "args": ["/data"]}


def problems_of(table: dict) -> list[str]:
    return [str(p) for p in parse_servers(table, {})[1]]


def test_a_stdio_and_an_http_server_are_read_with_their_defaults() -> None:
    servers, problems = parse_servers(
        {
            "fs": FS,
            "web": {
                "url": "https://mcp.example.com/mcp",
                "headers": {"Authorization": "Bearer s3cret-token"},
            },
        },
        {},
    )
    assert problems == []
    fs, web = servers["fs"], servers["web"]
    assert (fs.transport, fs.command, fs.args, fs.enabled, fs.trust, fs.timeout_s) == (
        "stdio", "mcp-server-filesystem", ("/data",), True, Trust.ASK, 60.0
    )  # fmt: skip
    assert web.transport == "http" and web.scope == "global"
    described = str(web.describe())
    assert "s3cret-token" not in described and "Authorization" in described  # keys, never values


def test_a_project_entry_replaces_the_global_one_of_its_name() -> None:
    servers, _ = parse_servers(
        {"fs": FS, "git": {"command": "g"}}, {"fs": {"command": "other", "enabled": False}}
    )
    assert servers["fs"].command == "other" and not servers["fs"].enabled and servers["fs"].scope == "project"
    assert servers["git"].scope == "global"


@pytest.mark.parametrize(
    ("entry", "key", "message"),
    [
        ({"command": "x", "colour": "red"}, "mcp.servers.bad.colour", "unknown field"),
        ({"command": "x", "args": "-v"}, "mcp.servers.bad.args", "expected list of strings, got str"),
        ({"command": "x", "trust": "always"}, "mcp.servers.bad.trust", "expected 'ask' or 'read_only_auto'"),
        ({"command": "x", "timeout_s": 0}, "mcp.servers.bad.timeout_s", "expected number between 1 and 3600"),
        ({"command": "x", "enabled": "yes"}, "mcp.servers.bad.enabled", "expected boolean"),
        ({"command": "x", "url": "http://h/mcp"}, "mcp.servers.bad", "not both"),
        ({"args": ["a"]}, "mcp.servers.bad", "give either command (stdio) or url"),
        ({"url": "ftp://h"}, "mcp.servers.bad.url", "expected an http:// or https:// URL"),
        ({"url": "http://h/mcp", "env": {"A": "b"}}, "mcp.servers.bad.env", "only for stdio servers"),
        ({"command": "x", "headers": {"A": "b"}}, "mcp.servers.bad.headers", "only for HTTP servers"),
        ("npx server", "mcp.servers.bad", "expected a table"),
    ],
)
def test_a_bad_entry_is_left_out_with_a_message_naming_server_and_field(
    entry, key: str, message: str
) -> None:
    servers, problems = parse_servers({"bad": entry, "fs": FS}, {}, "config.toml")
    assert list(servers) == ["fs"]  # the good entry stays
    assert len(problems) == 1, problems
    text = str(problems[0])
    assert text.startswith(f"config.toml: {key}: ") and message in text and "server 'bad' left out" in text


def test_names_must_fit_the_tool_namespace_and_secrets_are_never_quoted() -> None:
    assert "server names are 1-24 of a-z" in problems_of({"My-Server": FS})[0]
    assert problems_of({"a__b": FS})  # "__" separates server and tool
    problem = problems_of({"fs": {"command": "x", "env": {"TOKEN": 12345678901234}}})[0]
    assert "mcp.servers.fs.env" in problem and "12345678901234" not in problem
    assert "expected a table of servers" in str(parse_servers("oops", {}, "config.toml")[1][0])


def test_tool_filters_take_names_and_globs_and_deny_wins() -> None:
    servers, _ = parse_servers(
        {"fs": {**FS, "tools_allow": ["read_*", "list_directory"], "tools_deny": ["read_media*"]}}, {}
    )
    fs = servers["fs"]
    assert [t for t in ("read_file", "read_media_file", "list_directory", "write_file") if fs.offers(t)] == [
        "read_file",
        "list_directory",
    ]
    everything, _ = parse_servers({"fs": FS}, {})
    assert everything["fs"].offers("anything")


def test_only_read_only_auto_and_an_explicit_read_only_hint_skip_the_dialog() -> None:
    servers, _ = parse_servers({"a": {**FS, "trust": "read_only_auto"}, "b": FS}, {})
    auto, ask = servers["a"], servers["b"]
    assert auto.runs_unasked(True) and not auto.runs_unasked(False) and not auto.runs_unasked(None)
    assert not ask.runs_unasked(True)


def test_the_child_environment_is_minimal_and_never_carries_provider_keys() -> None:
    environ = {
        "PATH": "/bin",
        "LANG": "en_US.UTF-8",
        "ANTHROPIC_API_KEY": "sk-ant-secret",
        "GEMINI_API_KEY": "g-secret",
        "MY_SERVICE_TOKEN": "t-secret",
        "EDITOR": "vim",
    }
    env = child_environment({"ROOT": "/data"}, environ)
    assert env == {"LANG": "en_US.UTF-8", "ROOT": "/data"}  # the SDK adds PATH, HOME, USER itself
    assert child_environment({}, {})["LANG"] == "C.UTF-8"


def test_bad_entries_are_notifications_at_start_and_the_app_runs(make_controller, app_dir: Path) -> None:
    (app_dir / "config.toml").write_text('[mcp.servers.fs]\ncommand = "x"\nargs = "-v"\n')
    ctrl = make_controller()
    messages = [n.message for n in ctrl.state.notifications]
    assert any("mcp.servers.fs.args" in m and "server 'fs' left out" in m for m in messages), messages
    assert ctrl.fields.get("mcp_servers") == [] and ctrl.mcp.manager is None  # nothing to run
    with pytest.raises(Exception, match="no MCP server named 'fs'"):
        ctrl.actions.invoke("btn_mcp_restart", "fs")
