"""Child processes that must not outlive their caller: kill a whole process tree, pump its output.

The external CLIs we drive (the Gemini CLI, Aider) start their own children (node workers,
git, linters). Each is started with ``start_new_session=True`` so that it leads its own
process group; :func:`kill_tree` then takes the group down at once, plus any descendant
that left the group (``setsid``, double fork), and reaps the leader so no zombie is left.
:func:`pump_lines` moves a pipe's lines onto a queue so a reader can poll with a timeout.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
from collections.abc import Iterable
from typing import Any

__all__ = ["kill_pid_tree", "kill_tree", "pump_lines"]

REAP_TIMEOUT_S = 5.0


def kill_pid_tree(pid: int) -> None:
    """Kill the process group led by ``pid`` and every descendant of ``pid`` that left it, without
    reaping (for a process another owner started, e.g. the MCP SDK). A no-op once it is gone."""
    descendants: list[Any] = []
    try:
        import psutil

        descendants = psutil.Process(pid).children(recursive=True)
    except Exception:
        descendants = []  # already gone, or psutil cannot see it: the group kill still runs
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(pid, signal.SIGKILL)
    for child in descendants:
        try:
            child.kill()
        except Exception:
            continue  # it ended on its own


def kill_tree(proc: subprocess.Popen[Any]) -> None:
    """Kill ``proc``, its process group and every descendant that left the group; reap ``proc``.

    Safe to call more than once and on a process that has already ended.
    """
    kill_pid_tree(proc.pid)
    try:
        proc.wait(timeout=REAP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=REAP_TIMEOUT_S)


def pump_lines(stream: Iterable[str], out: queue.Queue[str | None]) -> None:
    """Put every line of ``stream`` on ``out``, then None (also when the pipe breaks under us)."""
    try:
        for line in stream:
            out.put(line)
    except (OSError, ValueError):
        pass  # the pipe was closed under us (the process was killed)
    finally:
        out.put(None)
