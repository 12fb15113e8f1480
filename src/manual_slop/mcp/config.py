"""``[mcp.servers.<name>]``: the external MCP servers a user configured, checked entry by entry.

A server is reached over stdio (``command``, ``args``, ``env``, ``cwd``) or streamable HTTP
(``url``, ``headers``). ``enabled`` (default true), ``tools_allow`` / ``tools_deny`` (tool names
or globs), ``trust`` (``ask``: every call waits in the Execution Clutch; ``read_only_auto``: tools
the server annotates ``readOnlyHint: true`` run without a dialog) and ``timeout_s`` (per call)
complete an entry. The project's table overrides the global one entry by entry (same name).

A bad entry never stops the app: :func:`parse_servers` leaves it out and returns a
:class:`~manual_slop.schema.Problem` naming the file, the server and the field. Nothing here
imports the SDK (it costs more than a second): only configured servers pay for it.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from manual_slop.schema import Problem, describe_value
from manual_slop.tools.shell import scrubbed_environment

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "FIELDS",
    "SERVER_NAME",
    "ServerConfig",
    "Trust",
    "child_environment",
    "parse_servers",
]

DEFAULT_TIMEOUT_S = 60.0
MAX_TIMEOUT_S = 3600.0
SERVER_NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")  # no "__": that separates server and tool
MAX_NAME = 24
SECRET_FIELDS = ("env", "headers")
# what a child inherits from the app besides its configured env (the SDK adds HOME, PATH, USER, ...)
INHERITED = ("LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TEMP", "TMP", "SYSTEMROOT", "NODE_PATH")


class Trust(StrEnum):
    ASK = "ask"
    READ_ONLY_AUTO = "read_only_auto"


# field -> (expected, description): the table in docs/guide_mcp.md is checked against it
FIELDS: dict[str, tuple[str, str]] = {
    "command": ("string", "stdio: the program to start (a name on PATH or a path)"),
    "args": ("list of strings", "stdio: its arguments"),
    "env": ("table of strings", "stdio: variables added to the child's minimal environment (never logged)"),
    "cwd": ("string", "stdio: its working directory (default: the app's)"),
    "url": ("string", "streamable HTTP: the endpoint (http:// or https://); instead of command"),
    "headers": ("table of strings", "streamable HTTP: headers sent with every request (never logged)"),
    "enabled": ("boolean", "false: never started, its tools not offered (default true)"),
    "tools_allow": ("list of strings", "tool names or globs offered (default: all)"),
    "tools_deny": ("list of strings", "tool names or globs never offered (wins over tools_allow)"),
    "trust": ("'ask' or 'read_only_auto'", "ask: every call waits for approval; read_only_auto: tools "
              "annotated readOnlyHint run without a dialog (default ask)"),
    "timeout_s": ("number between 1 and 3600", "how long one call may take (default 60)"),
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """One checked ``[mcp.servers.<name>]`` entry; ``scope`` is ``project`` or ``global``."""

    name: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    cwd: str = ""
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    enabled: bool = True
    tools_allow: tuple[str, ...] = ()
    tools_deny: tuple[str, ...] = ()
    trust: Trust = Trust.ASK
    timeout_s: float = DEFAULT_TIMEOUT_S
    scope: str = "global"

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"

    def offers(self, tool: str) -> bool:
        """Whether ``tool`` (the server's own name) passes ``tools_allow`` / ``tools_deny``."""
        if any(fnmatch.fnmatchcase(tool, pattern) for pattern in self.tools_deny):
            return False
        return not self.tools_allow or any(fnmatch.fnmatchcase(tool, p) for p in self.tools_allow)

    def runs_unasked(self, read_only_hint: bool | None) -> bool:
        """Whether a call of a tool with this annotation skips the approval dialog."""
        return self.trust is Trust.READ_ONLY_AUTO and read_only_hint is True

    def identity(self) -> tuple[Any, ...]:
        """What the running connection depends on: a change here means a restart."""
        return (self.command, self.args, tuple(sorted(self.env.items())), self.cwd, self.url,
                tuple(sorted(self.headers.items())), self.timeout_s)  # fmt: skip

    def describe(self) -> dict[str, Any]:
        """The entry for the API and the panel: no env or header values, ever."""
        return {
            "name": self.name,
            "transport": self.transport,
            "target": self.url or " ".join([self.command, *self.args]),
            "env_keys": sorted(self.env),
            "header_keys": sorted(self.headers),
            "enabled": self.enabled,
            "trust": str(self.trust),
            "tools_allow": list(self.tools_allow),
            "tools_deny": list(self.tools_deny),
            "timeout_s": self.timeout_s,
            "scope": self.scope,
        }


def parse_servers(
    global_table: Any, project_table: Any, global_file: str = "config.toml", project_file: str = "project"
) -> tuple[dict[str, ServerConfig], list[Problem]]:
    """The servers of both files (a project entry replaces the global one of the same name),
    and a problem for every entry that had to be left out or a value that had to be ignored."""
    problems: list[Problem] = []
    servers: dict[str, ServerConfig] = {}
    for table, label, scope in (
        (global_table, global_file, "global"),
        (project_table, project_file, "project"),
    ):
        if table is None or table == {}:
            continue
        if not isinstance(table, Mapping):
            problems.append(
                Problem(label, "mcp.servers", f"expected a table of servers, got {describe_value(table)}")
            )
            continue
        for name, entry in table.items():
            parsed = _server(str(name), entry, scope, label, problems)
            if parsed is not None:
                servers[parsed.name] = parsed
    return servers, problems


def _server(name: str, entry: Any, scope: str, label: str, problems: list[Problem]) -> ServerConfig | None:
    key = f"mcp.servers.{name}"

    def refuse(where: str, message: str) -> None:
        where = f"{key}.{where}" if where else key
        problems.append(Problem(label, where, f"{message}; server {name!r} left out", severity="error"))

    if not SERVER_NAME.fullmatch(name) or len(name) > MAX_NAME:
        refuse(
            "", f"server names are 1-{MAX_NAME} of a-z, 0-9 and single underscores, starting with a letter"
        )
        return None
    if not isinstance(entry, Mapping):
        refuse("", f"expected a table, got {describe_value(entry)}")
        return None
    unknown = sorted(set(entry) - set(FIELDS))
    if unknown:
        refuse(unknown[0], f"unknown field (known: {', '.join(FIELDS)})")
        return None
    values: dict[str, Any] = {}
    for field_name, check in _CHECKS.items():
        if field_name not in entry:
            continue
        try:
            values[field_name] = check(entry[field_name])
        except ValueError:
            value = entry[field_name]
            # env and header values may be secrets: only their shape is described
            got = f"a {type(value).__name__}" if field_name in SECRET_FIELDS else describe_value(value)
            refuse(field_name, f"expected {FIELDS[field_name][0]}, got {got}")
            return None
    command, url = values.get("command", ""), values.get("url", "")
    if bool(command) == bool(url):
        refuse("", "give either command (stdio) or url (streamable HTTP)" if not command
               else "give command (stdio) or url (streamable HTTP), not both")  # fmt: skip
        return None
    stdio_only = [f for f in ("args", "env", "cwd") if f in values]
    if url and stdio_only:
        refuse(stdio_only[0], "only for stdio servers (this one has a url)")
        return None
    if command and "headers" in values:
        refuse("headers", "only for HTTP servers (this one has a command)")
        return None
    if url and not re.fullmatch(r"https?://[^\s/]+(/\S*)?", url):
        refuse("url", f"expected an http:// or https:// URL, got {url[:80]!r}")
        return None
    values["args"] = tuple(values.get("args", ()))
    for globs in ("tools_allow", "tools_deny"):
        values[globs] = tuple(values.get(globs, ()))
    return ServerConfig(name=name, scope=scope, **values)


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("")
    return value


def _strings(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("")
    return list(value)


def _string_table(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        raise ValueError("")  # the message never quotes a value: it may be a secret
    return {str(k): v for k, v in value.items()}


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("")
    return value


def _trust(value: Any) -> Trust:
    try:
        return Trust(value)
    except ValueError:
        raise ValueError("") from None


def _timeout(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 1.0 <= value <= MAX_TIMEOUT_S:
        raise ValueError("")
    return float(value)


_CHECKS = {
    "command": _string,
    "args": _strings,
    "env": _string_table,
    "cwd": _string,
    "url": _string,
    "headers": _string_table,
    "enabled": _bool,
    "tools_allow": _strings,
    "tools_deny": _strings,
    "trust": _trust,
    "timeout_s": _timeout,
}


def child_environment(
    configured: Mapping[str, str], environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """What a stdio server gets besides the SDK's own minimal set (HOME, PATH, USER, SHELL, TERM,
    LOGNAME): the locale and temp folder, never a credential variable (the shell tool's scrub),
    then its configured ``env``."""
    scrubbed = scrubbed_environment(os.environ if environ is None else environ)
    env = {key: scrubbed[key] for key in INHERITED if key in scrubbed}
    env.setdefault("LANG", "C.UTF-8")
    env.update(configured)
    return env
