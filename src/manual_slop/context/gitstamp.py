"""Reading the project's git HEAD for "Update Commit" (a subprocess with a timeout).

:func:`read_head` runs ``git rev-parse HEAD`` in the project's base dir and returns
the commit id, or raises :class:`~manual_slop.context.errors.GitError` with a message
that says what went wrong (git missing, not a repository, no commit yet, timeout).
It blocks for up to ``timeout`` seconds: call it off the main thread.
"""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from manual_slop.context.errors import GitError

__all__ = ["GIT_TIMEOUT_S", "HeadResult", "read_head"]

GIT_TIMEOUT_S = 5.0
_SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


@dataclass(frozen=True, slots=True)
class HeadResult:
    """The commit and what the CLI call looked like (for ``clicalls.log``)."""

    commit: str
    command: list[str]
    cwd: str
    latency_ms: float


def read_head(repo_dir: Path, timeout: float = GIT_TIMEOUT_S) -> HeadResult:
    """``git rev-parse HEAD`` in ``repo_dir``."""
    command = ["git", "rev-parse", "HEAD"]
    if not Path(repo_dir).is_dir():
        raise GitError(f"the project's base dir {repo_dir} does not exist")
    started = time.perf_counter()
    try:
        done = subprocess.run(
            command,
            cwd=repo_dir,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except FileNotFoundError as exc:
        raise GitError("git is not installed (no 'git' on PATH)") from exc
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"git rev-parse HEAD did not answer within {timeout:g} s in {repo_dir}") from exc
    latency = (time.perf_counter() - started) * 1000.0
    output = done.stdout.strip()
    if done.returncode != 0 or not _SHA.fullmatch(output):
        detail = (done.stderr.strip() or output or f"exit code {done.returncode}").splitlines()[0]
        if "not a git repository" in detail:
            raise GitError(f"{repo_dir} is not inside a git repository")
        if "unknown revision" in detail or "ambiguous argument 'HEAD'" in detail:
            raise GitError(f"the git repository at {repo_dir} has no commit yet")
        raise GitError(f"git rev-parse HEAD failed in {repo_dir}: {detail}")
    return HeadResult(output, command, str(repo_dir), latency)
