"""The three TOML documents an app has open: global config, project and its history.

:class:`Documents` loads them (config first: it names the project), keeps the parsed
data that the state is written back into (so unknown keys survive), switches to another
project file, records recent projects, and performs the dual flush. It holds no
GUI-visible state; the controller calls it on the main thread.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from manual_slop.config import GLOBAL_SCHEMA, HISTORY_SCHEMA, PROJECT_SCHEMA, AppPaths, LoadResult, TomlFile
from manual_slop.governance.rules import Rule, parse_rules
from manual_slop.schema import Problem, get_path, set_path
from manual_slop.state import AppState

__all__ = ["RECENT_PROJECTS_LIMIT", "Documents"]

RECENT_PROJECTS_LIMIT = 10


class Documents:
    """Config, project and history files with their last loaded or saved data."""

    def __init__(
        self,
        config_file: Path,
        project_file: Path | None,
        log_dir: Path | None,
        config: LoadResult | None = None,
    ) -> None:
        """``config``: the global config when it was loaded already (a headless start reads it first)."""
        self.problems: list[Problem] = []
        self._config_file = TomlFile(config_file, GLOBAL_SCHEMA)
        loaded = config if config is not None else self._config_file.load()
        self.config, self.config_existed = loaded.data, loaded.existed
        self.problems += loaded.problems
        self.paths = AppPaths.resolve(config_file, project_file, log_dir, self.config)
        self.project: dict[str, Any] = {}
        self.history: dict[str, Any] = {}
        self.problems += self._open_project_files()

    def _open_project_files(self) -> list[Problem]:
        self._project_file = TomlFile(self.paths.project_file, PROJECT_SCHEMA)
        self._history_file = TomlFile(self.paths.history_file, HISTORY_SCHEMA)
        return self.reload_project()

    def reload_project(self) -> list[Problem]:
        """Re-read the project and history files; returns what was wrong with them."""
        project = self._project_file.load()
        history = self._history_file.load()
        self.project, self.history = project.data, history.data
        return project.problems + history.problems

    def switch_project(self, project_file: Path) -> list[Problem]:
        """Point at another project file and read it (the caller flushed the old one)."""
        self.paths = AppPaths(self.paths.config_file, project_file, self.paths.log_dir)
        return self._open_project_files()

    def state(self) -> AppState:
        """A fresh AppState from the documents."""
        return AppState.from_documents(self.config, self.project, self.history, self.paths.project_file.stem)

    def approval_rules(self, problems: list[Problem]) -> list[Rule]:
        """The project's HITL rules (``[[approval.rules]]``, both formats); malformed ones are
        reported in ``problems`` and skipped."""
        rules, found = parse_rules(get_path(self.project, "approval.rules", []))
        name = self.paths.project_file.name
        problems += [Problem(name, "approval.rules", f"{problem}; rule ignored") for problem in found]
        return rules

    def save_approval_rules(self, entries: list[dict[str, Any]]) -> None:
        """Write ``entries`` as the project's ``approval.rules`` now: only that key changes in the
        project file (written atomically); other unsaved edits wait for the next flush."""
        project = copy.deepcopy(self.project)
        set_path(project, "approval.rules", entries)
        self._project_file.save(project)
        self.project = project

    def save_key_now(self, scope: str, dotted: str, value: Any) -> None:
        """Write one key into the project file (``scope`` ``project``) or ``config.toml`` (``global``)
        now, atomically; other unsaved edits wait for the next flush (e.g. an MCP server's
        ``enabled`` switch, in the file that defines the server)."""
        if scope not in ("project", "global"):
            raise ValueError(f"scope {scope!r}: expected 'project' or 'global'")
        target = self._project_file if scope == "project" else self._config_file
        document = copy.deepcopy(self.project if scope == "project" else self.config)
        set_path(document, dotted, value)
        target.save(document)
        if scope == "project":
            self.project = document
        else:
            self.config = document

    def remember_project(self) -> None:
        """Make the open project ``projects.active`` and the newest of ``projects.recent``."""
        project = self.paths.project_file
        try:
            shown = str(project.relative_to(self.paths.config_file.parent.resolve()))
        except ValueError:
            shown = str(project)
        recent = [shown] + [p for p in get_path(self.config, "projects.recent", []) if p != shown]
        set_path(self.config, "projects.active", shown)
        set_path(self.config, "projects.recent", recent[:RECENT_PROJECTS_LIMIT])

    def recent_projects(self) -> list[str]:
        return list(get_path(self.config, "projects.recent", []))

    def setting(self, dotted: str) -> Any:
        """A global-config value as loaded and normalized (e.g. ``"hook.port"``)."""
        return get_path(self.config, dotted)

    def flush(self, state: AppState) -> None:
        """Dual flush: project and history, then the global config; each write atomic."""
        project = state.apply_to_project(self.project)
        history = state.apply_to_history(self.history)
        config = state.apply_to_config(self.config)
        self._project_file.save(project)
        self._history_file.save(history)
        self._config_file.save(config)
        self.project, self.history, self.config = project, history, config

    @staticmethod
    def create_project(target: Path) -> None:
        """Write a project file with defaults, named after the file."""
        defaults = TomlFile(target, PROJECT_SCHEMA).load().data
        set_path(defaults, "project.name", target.stem)
        TomlFile(target, PROJECT_SCHEMA).save(defaults)
