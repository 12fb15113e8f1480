"""``get_git_diff``: uncommitted changes of the project (or of one path), from git.

git runs in the project's base dir with the scrubbed environment of the shell runner,
without pager, colour, external diff drivers or textconv filters, and limited to the base
dir (``-- .``) or the checked path. Protected files (histories, credentials, config, the
logs folder) are excluded with pathspecs, so their content never reaches the model
through a diff. Untracked files are listed after the diff, since ``git diff`` omits them.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

from manual_slop.tools.errors import ToolFailure, ToolInputError, ToolTimeout, ToolUnavailable
from manual_slop.tools.shell import scrubbed_environment
from manual_slop.tools.tool import Tool, ToolRun

__all__ = ["git_tools"]

_EXCLUDES = (
    ":(exclude,icase,glob)**/config.toml",
    ":(exclude,icase,glob)**/credentials.toml",
    ":(exclude,icase,glob)**/*history.toml",
    ":(exclude,glob)**/logs/sessions/**",
)
UNTRACKED_LIMIT = 100


def _git(run: ToolRun, *args: str) -> subprocess.CompletedProcess[str]:
    git = shutil.which("git")
    if git is None:
        raise ToolUnavailable("git is not installed on this machine")
    try:
        return subprocess.run(
            [git, "--no-pager", "-c", "core.fsmonitor=false", "-c", "core.quotepath=false", *args],
            cwd=run.base_dir,
            env=scrubbed_environment(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=max(0.1, run.remaining() - 0.1),
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ToolTimeout("git did not answer in time") from None
    except OSError as exc:
        raise ToolFailure(f"could not run git: {exc}") from None


def get_git_diff(args: dict[str, Any], run: ToolRun) -> str:
    inside = _git(run, "rev-parse", "--is-inside-work-tree")
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        raise ToolInputError(f"the project folder {run.base_dir} is not inside a git repository")
    target: Path | None = run.paths.get("path")
    pathspec = [str(target) if target is not None else ".", *_EXCLUDES]
    staged = bool(args.get("staged", False))
    diff_args = ["diff", "--no-color", "--no-ext-diff", "--no-textconv"]
    if staged:
        diff_args.append("--cached")
    result = _git(run, *diff_args, "--", *pathspec)
    if result.returncode != 0:
        raise ToolInputError(
            f"git diff failed: {result.stderr.strip() or 'exit code ' + str(result.returncode)}"
        )
    where = run.display(target) if target is not None else "the project"
    text = result.stdout.strip("\n") or f"no {'staged' if staged else 'unstaged'} changes in {where}"
    if not staged:
        untracked = _git(run, "ls-files", "--others", "--exclude-standard", "--", *pathspec)
        names = [n for n in untracked.stdout.splitlines() if n]
        if names:
            listing = "\n".join(f"  {n}" for n in names[:UNTRACKED_LIMIT])
            more = f"\n  ... ({len(names) - UNTRACKED_LIMIT} more)" if len(names) > UNTRACKED_LIMIT else ""
            text += f"\n\nuntracked files (not in the diff):\n{listing}{more}"
    return text


def git_tools() -> list[Tool]:
    return [
        Tool(
            "get_git_diff",
            "Show uncommitted changes as a unified diff from git: unstaged changes by default, staged "
            "ones with staged=true; for the whole project or one file or folder (path). Untracked files "
            "are listed after the diff.",
            {
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": "File or folder (default: the project)",
                    },
                    "staged": {
                        "type": "boolean",
                        "default": False,
                        "description": "Show staged changes instead",
                    },
                },
                "required": [],
                "additionalProperties": False,
            },
            get_git_diff,
            path_params=("path",),
        )
    ]
