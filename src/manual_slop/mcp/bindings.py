"""External MCP servers in the app: ``ctrl.mcp``, its fields and actions, and its wiring.

``register(ctrl)`` (in ``bindings.FEATURE_REGISTRARS``) reads ``[mcp.servers]`` of
``config.toml`` and the project (a project entry replaces the global one of its name), reports
every bad entry as a notification naming file, server and field, and -- only when a server is
configured, since the SDK costs a second to import -- makes the
:class:`~manual_slop.mcp.manager.McpManager` that puts the servers' tools into the AI client's
registry. It then hooks the app's life: before every send the servers start (lazily, bounded),
another project re-reads the table, and shutdown stops every server with no child left.

Surface: the read-only field ``mcp_servers``; the actions ``btn_mcp_restart``,
``btn_mcp_enable`` and ``btn_mcp_disable`` (user_data: the server's name), the latter two
persisting ``enabled`` in the file that defines the server. ``McpBinding.view`` is the copy
the MCP panel draws, replaced on the main thread whenever a server changes.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from manual_slop.automation import ActionCall, InvalidValue
from manual_slop.mcp.config import SERVER_NAME, ServerConfig, parse_servers
from manual_slop.schema import Field, Problem, get_path

if TYPE_CHECKING:
    from manual_slop.controller import AppController
    from manual_slop.mcp.manager import McpManager
    from manual_slop.tools.registry import ToolRegistry

__all__ = ["McpBinding", "register"]

log = logging.getLogger(__name__)

NAME_FIELD = Field(str, "", pattern=SERVER_NAME.pattern, pattern_doc="an MCP server's name")


class McpBinding:
    """The configured servers of the open project and the manager that runs them."""

    def __init__(self, ctrl: AppController) -> None:
        self.ctrl = ctrl
        self.manager: McpManager | None = None
        self.configs: dict[str, ServerConfig] = {}
        self.view: dict[str, Any] = {"servers": [], "problems": []}  # main thread only

    # -- main thread ------------------------------------------------------------------------------
    def load(self) -> list[Problem]:
        """(Re)read the servers of both files and hand them to the manager; the problems found."""
        documents = self.ctrl.documents
        configs, problems = parse_servers(
            get_path(documents.config, "mcp.servers", {}),
            get_path(documents.project, "mcp.servers", {}),
            documents.paths.config_file.name,
            documents.paths.project_file.name,
        )
        self.configs = configs
        secrets = [v for c in configs.values() for v in (*c.env.values(), *c.headers.values())]
        self.ctrl.redactor.add(secrets)  # configured env and header values never show anywhere
        for problem in problems:
            self.ctrl.notify("error", str(problem))
        if self.manager is not None:
            self.manager.configure(configs, problems)
        elif configs:
            from manual_slop.mcp.manager import McpManager  # the SDK: only when a server is configured

            self.manager = McpManager(
                configs,
                self._registry,
                on_change=self._changed,
                log_dir=self.ctrl.session_log.root,
                problems=problems,
            )
        self.refresh()
        if not configs and problems:
            self.view = {"servers": [], "problems": [str(p) for p in problems]}
        return problems

    def refresh(self) -> None:
        """Copy the manager's snapshot into :attr:`view` (redacted)."""
        if self.manager is not None:
            self.view = self.ctrl.redactor.redact_obj(self.manager.snapshot())

    def servers(self) -> list[dict[str, Any]]:
        return [dict(s) for s in self.view["servers"]]

    def restart(self, name: str) -> None:
        manager = self._manager_for(name)
        if not self.configs[name].enabled:
            raise InvalidValue(f"MCP server {name!r} is disabled; enable it first")
        manager.restart(name)

    def set_enabled(self, name: str, enabled: bool) -> None:
        """Switch a server on or off, and save the switch in the file that defines it."""
        manager = self._manager_for(name)
        config = self.configs[name]
        self.ctrl.documents.save_key_now(config.scope, f"mcp.servers.{name}.enabled", enabled)
        from dataclasses import replace

        self.configs[name] = replace(config, enabled=enabled)
        manager.set_enabled(name, enabled)
        self.refresh()

    def close(self) -> None:
        if self.manager is not None:
            self.manager.close()

    # -- any thread -------------------------------------------------------------------------------
    def prepare(self, timeout: float | None = None) -> None:
        """Before a send (request thread): start the servers whose tools were never listed."""
        if self.manager is not None:
            self.manager.prepare() if timeout is None else self.manager.prepare(timeout)

    def _changed(self) -> None:
        self.ctrl.post_gui_task({"action": "custom_callback", "callback": self.refresh})

    def _registry(self) -> ToolRegistry | None:
        registry = getattr(self.ctrl.backend, "registry", None)
        return registry() if callable(registry) else None

    def _manager_for(self, name: str) -> McpManager:
        if self.manager is None or name not in self.configs:
            known = ", ".join(sorted(self.configs)) or "none are configured"
            raise InvalidValue(f"no MCP server named {name!r} ({known})")
        return self.manager


def register(ctrl: AppController) -> None:
    binding = McpBinding(ctrl)
    ctrl.mcp = binding  # type: ignore[attr-defined]
    binding.load()
    ctrl.on_project_opened(binding.load)
    ctrl.on_shutdown(binding.close)
    ctrl.flow.before_send(binding.prepare)
    ctrl.fields.register(
        "mcp_servers",
        Field(list, [], "External MCP servers: name, state, pid, tools, last error (read-only)"),
        binding.servers,
    )

    def named(call: ActionCall) -> str:
        if not call.user_data:
            raise InvalidValue("this action needs the server's name as user_data")
        return str(call.user_data)

    ctrl.actions.register(
        "btn_mcp_restart",
        lambda call: binding.restart(named(call)),
        "Restart an external MCP server (user_data: its name); a failed one is tried again",
        user_data=NAME_FIELD,
    )
    ctrl.actions.register(
        "btn_mcp_enable",
        lambda call: binding.set_enabled(named(call), True),
        "Enable an external MCP server and save it (user_data: its name); it starts with the next send",
        user_data=NAME_FIELD,
    )
    ctrl.actions.register(
        "btn_mcp_disable",
        lambda call: binding.set_enabled(named(call), False),
        "Disable an external MCP server and save it (user_data: its name): stopped, its tools withdrawn",
        user_data=NAME_FIELD,
    )
