"""The one path policy and the one redactor of a project, built the same way by the app
(``AppController.path_policy``, ``AppController.redactor``), MMA and the command line.

The policy allows the project's base dir and tracked files and refuses the app's own files
(config, credentials, history, session logs, the Hook API's token folder); the project file
itself is readable but never written. The redactor knows every secret the app knows: the
credentials file's values, credential-like environment variables and the hook token.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from manual_slop.config import CREDENTIAL_ENV_VARS, AppPaths, Credentials
from manual_slop.hooks.token import runtime_dir
from manual_slop.redaction import Redactor, known_secrets
from manual_slop.tools.security import PathPolicy

__all__ = ["app_redactor", "project_path_policy"]


def project_path_policy(
    paths: AppPaths, base_dir: Path, tracked: Sequence[str] = (), exclude: Sequence[str] = ()
) -> PathPolicy:
    """The policy for every read and write on the model's (or a command's) behalf."""
    return PathPolicy.for_project(
        base_dir,
        tracked,
        exclude,
        log_dir=paths.log_dir,
        protected_files=[paths.config_file, paths.credentials_file, paths.history_file],
        write_protected=[paths.project_file],
        private_dirs=[(runtime_dir(), "the Hook API's token folder")],
    )


def app_redactor(credentials: Credentials, environ: Mapping[str, str], hook_token: str | None) -> Redactor:
    """The redactor of every output path: credential file values, credential-like environment
    variables and the hook token."""
    return Redactor(
        known_secrets(
            credentials.file_secrets(),
            environ,
            [*CREDENTIAL_ENV_VARS.values(), "GOOGLE_API_KEY"],
            hook_token,
        )
    )
