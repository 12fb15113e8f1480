"""The project a command works on, opened read-only and without a controller.

It is found as the app finds it — ``--project``, else ``projects.active`` of ``--config``
(default ``./config.toml``; a relative entry is relative to the config's folder) — and
carries what the app would use for it: the base dir and tracked files, the app's path
policy and redactor (:mod:`manual_slop.project_access`, as ``AppController`` builds them).

Nothing here writes: the config and project files are parsed, never repaired, moved aside
or created. A file that does not parse is a usage error that names it.
"""

from __future__ import annotations

import argparse
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from manual_slop.commands.args import UsageError, check_toml_file
from manual_slop.config import GLOBAL_SCHEMA, PROJECT_SCHEMA, AppPaths, Credentials
from manual_slop.hooks.token import resolve_hook_auth
from manual_slop.project_access import app_redactor, project_path_policy
from manual_slop.redaction import Redactor
from manual_slop.schema import Schema, get_path, normalize
from manual_slop.tools.security import PathPolicy

__all__ = ["ProjectContext", "add_project_options", "open_project"]

DEFAULT_CONFIG = Path("config.toml")


@dataclass(frozen=True, slots=True)
class ProjectContext:
    """One project as a command sees it (the app's rules, nothing running)."""

    paths: AppPaths
    base_dir: Path
    tracked: tuple[str, ...]
    exclude: tuple[str, ...]
    policy: PathPolicy
    redactor: Redactor
    settings: Mapping[str, Any]  # the project file's data, schema defaults filled in
    warnings: tuple[str, ...]  # what was wrong in the files (already redacted)

    @property
    def project_file(self) -> Path:
        return self.paths.project_file


def add_project_options(parser: argparse.ArgumentParser) -> None:
    """``--project`` and ``--config``, as the app takes them."""
    parser.add_argument(
        "--project", type=Path, metavar="PATH", help="project file (default: projects.active of the config)"
    )
    parser.add_argument(
        "--config", type=Path, metavar="PATH", help="global config file (default ./config.toml)"
    )


def open_project(
    config: Path | None, project: Path | None, environ: Mapping[str, str] | None = None
) -> ProjectContext:
    """The project named by ``--project`` / ``--config``; raises UsageError naming the problem."""
    environ = os.environ if environ is None else environ
    warnings: list[str] = []
    config_file = (config or DEFAULT_CONFIG).expanduser()
    if config_file.exists():
        check_toml_file(config_file, "--config", GLOBAL_SCHEMA)
    elif config is not None:  # a missing ./config.toml means the defaults; a named one, a typo
        raise UsageError(f"--config {config_file}: does not exist")
    config_data = _read(config_file, GLOBAL_SCHEMA, "--config", warnings)
    paths = AppPaths.resolve(config_file, project, None, config_data)
    if project is not None:
        if not project.expanduser().exists():
            raise UsageError(f"--project {project}: does not exist")
        check_toml_file(project, "--project", PROJECT_SCHEMA)
        flag = "--project"
    else:
        active = get_path(config_data, "projects.active")
        named_by = (
            f"projects.active of {config_file}" if active else f"the default ({config_file} names none)"
        )
        if not paths.project_file.exists():
            raise UsageError(
                f"no project: {paths.project_file} does not exist ({named_by}); pass --project PATH"
            )
        check_toml_file(paths.project_file, "project", PROJECT_SCHEMA)
        flag = "project"
    data = _read(paths.project_file, PROJECT_SCHEMA, flag, warnings)
    base_dir = (paths.project_file.parent / str(get_path(data, "files.base_dir"))).resolve()
    if not base_dir.is_dir():
        raise UsageError(f"{paths.project_file}: files.base_dir {base_dir} is not a folder")
    tracked = tuple(get_path(data, "files.paths"))
    exclude = tuple(get_path(data, "files.exclude"))
    credentials, problems = Credentials.load(paths.credentials_file, environ)
    warnings += [str(p) for p in problems]
    hook = resolve_hook_auth(
        environ,
        str(get_path(config_data, "hook.token") or ""),
        bool(get_path(config_data, "hook.require_token")),
    )
    redactor = app_redactor(credentials, environ, hook.token)
    return ProjectContext(
        paths,
        base_dir,
        tracked,
        exclude,
        project_path_policy(paths, base_dir, tracked, exclude),
        redactor,
        data,
        tuple(redactor.redact(w) for w in warnings),
    )


def _read(path: Path, schema: Schema, flag: str, warnings: list[str]) -> dict[str, Any]:
    """The file's settings with the schema's defaults (a missing file: the defaults); never
    repairs the file on disk. Repairs that matter are added to ``warnings``."""
    if not path.exists():
        return normalize({}, schema, path.name)[0]
    try:
        raw = tomllib.loads(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise UsageError(f"{flag} {path}: cannot be read ({exc.strerror or exc})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{flag} {path}: cannot be parsed ({exc}); fix it, or open it in the app") from None
    data, problems = normalize(raw, schema, path.name)
    warnings += [f"{p} (this run only; the file is left as it is)" for p in problems if p.severity != "info"]
    return data
