"""The shell runner behind ``run_shell`` (and ``run_powershell`` where PowerShell exists).

- **Program**: ``[shell] program`` in config.toml — ``auto`` (bash on POSIX, PowerShell on
  Windows), ``bash``, ``pwsh`` or ``powershell``. bash runs as ``bash --noprofile --norc -c``,
  PowerShell as ``-NoProfile -NonInteractive -Command``.
- **Where**: the project's base dir; stdin is empty, so a command waiting for input ends.
- **Environment**: the app's, minus every credential — the provider key variables
  (``config.CREDENTIAL_ENV_VARS``), ``SLOP_HOOK_TOKEN``, and any name containing ``API_KEY``,
  ``APIKEY``, ``TOKEN``, ``SECRET``, ``PASSWORD``, ``PASSWD``, ``CREDENTIAL``,
  ``ACCESS_KEY`` or ``PRIVATE_KEY``.
- **Audit**: the script is saved under the session's ``scripts/`` folder before it starts;
  if it cannot be saved it does not run.
- **Limits**: the script runs in its own process group (its own session on POSIX). At the
  deadline, or when the registry gives up on the call, the whole group is killed and the
  output so far is returned as a ``timeout`` result. Background processes still holding
  the output pipes after the shell exits are stopped too. Each stream keeps its first 1 MiB.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from manual_slop.config import CREDENTIAL_ENV_VARS, SHELL_PROGRAMS
from manual_slop.redaction import CREDENTIAL_NAME
from manual_slop.tools.errors import ToolFailure, ToolInputError, ToolTimeout, ToolUnavailable
from manual_slop.tools.tool import Tool, ToolRun

__all__ = [
    "SHELL_PROGRAMS",
    "SHELL_TIMEOUT_S",
    "ShellOutcome",
    "ShellProgram",
    "powershell_available",
    "resolve_program",
    "run_script",
    "scrubbed_environment",
    "shell_tools",
]

SHELL_TIMEOUT_S = 120.0
CAPTURE_LIMIT = 1_048_576  # bytes kept per stream
MAX_SCRIPT_CHARS = 100_000
DRAIN_AFTER_EXIT_S = 0.5  # how long background children may hold the pipes after the shell exits
_EXTRA_SECRETS = frozenset({"SLOP_HOOK_TOKEN"})


def scrubbed_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of the environment without credential variables, set up for non-interactive use."""
    source = os.environ if environ is None else environ
    banned = {*CREDENTIAL_ENV_VARS.values(), *_EXTRA_SECRETS}
    env = {k: v for k, v in source.items() if k not in banned and not CREDENTIAL_NAME.search(k)}
    env.update({"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"})
    return env


@dataclass(frozen=True, slots=True)
class ShellProgram:
    """An interpreter and how to hand it a script."""

    name: str  # "bash" | "pwsh" | "powershell"
    executable: str
    suffix: str  # of the saved script

    def argv(self, script: str) -> list[str]:
        if self.name == "bash":
            return [self.executable, "--noprofile", "--norc", "-c", script]
        flags = ["-NoProfile", "-NonInteractive"]
        if sys.platform == "win32":
            flags += ["-ExecutionPolicy", "Bypass"]
        return [self.executable, *flags, "-Command", script]


def _which(*names: str) -> str | None:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return None


def powershell_available() -> bool:
    return _which("pwsh", "powershell") is not None


def resolve_program(choice: str = "auto") -> ShellProgram:
    """The interpreter for a ``[shell] program`` value; ToolUnavailable when it is not installed."""
    choice = (choice or "auto").lower()
    if choice not in SHELL_PROGRAMS:
        raise ToolUnavailable(
            f"unknown shell program {choice!r}; [shell] program accepts {', '.join(SHELL_PROGRAMS)}"
        )
    if choice == "auto":
        choice = "powershell" if sys.platform == "win32" else "bash"
    if choice == "bash":
        found = _which("bash")
        if found is None:
            raise ToolUnavailable(
                "bash is not installed; set [shell] program in config.toml to a shell that is"
            )
        return ShellProgram("bash", found, ".sh")
    found = _which("pwsh") if choice == "pwsh" else _which("powershell", "pwsh")
    if found is None:
        raise ToolUnavailable(
            f'{choice} is not installed; install PowerShell or set [shell] program = "bash"'
        )
    return ShellProgram(choice, found, ".ps1")


@dataclass(frozen=True, slots=True)
class ShellOutcome:
    stdout: str
    stderr: str
    exit_code: int | None
    timed_out: bool
    duration_s: float
    dropped: int  # bytes beyond CAPTURE_LIMIT that were discarded
    stopped_background: bool

    def render(self) -> str:
        code = "none (killed)" if self.exit_code is None else str(self.exit_code)
        parts = [f"exit code: {code}", "--- stdout ---", self.stdout.rstrip("\n") or "(empty)"]
        parts += ["--- stderr ---", self.stderr.rstrip("\n") or "(empty)"]
        if self.dropped:
            parts.append(
                f"[{self.dropped:,} bytes of output beyond {CAPTURE_LIMIT:,} per stream were dropped]"
            )
        if self.stopped_background:
            parts.append("[background processes still holding the output were stopped]")
        return "\n".join(parts)


class _Capture:
    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.size = 0
        self.dropped = 0

    def add(self, data: bytes) -> None:
        room = CAPTURE_LIMIT - self.size
        if room > 0:
            self.chunks.append(data[:room])
            self.size += min(room, len(data))
        self.dropped += max(0, len(data) - max(room, 0))

    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", "replace")


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        subprocess.run(["taskkill", "/T", "/F", "/PID", str(proc.pid)], capture_output=True, check=False)
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def run_script(
    program: ShellProgram,
    script: str,
    cwd: Path,
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cancelled: threading.Event | None = None,
) -> ShellOutcome:
    """Run ``script`` and collect its output; kills the process group at ``timeout`` or when
    ``cancelled`` is set."""
    started = time.monotonic()
    deadline = started + timeout
    kwargs: dict[str, Any] = {}
    if sys.platform == "win32":  # pragma: no cover
        kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP
    else:
        kwargs["start_new_session"] = True
    try:
        proc = subprocess.Popen(
            program.argv(script),
            cwd=cwd,
            env=dict(scrubbed_environment() if env is None else env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            **kwargs,
        )
    except OSError as exc:
        raise ToolFailure(f"could not start {program.name}: {exc.strerror or exc}") from None
    if sys.platform == "win32":  # pragma: no cover
        return _run_windows(proc, started, deadline, cancelled)
    out, err = _Capture(), _Capture()
    timed_out = stopped_background = False
    exited_at: float | None = None
    give_up_at = float("inf")
    assert proc.stdout is not None and proc.stderr is not None
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ, out)
    selector.register(proc.stderr, selectors.EVENT_READ, err)
    try:
        while selector.get_map():
            now = time.monotonic()
            if not timed_out and (now >= deadline or (cancelled is not None and cancelled.is_set())):
                timed_out = True
                _kill_group(proc)
                deadline = now + 0.2  # collect what is already in the pipes, then stop
            elif timed_out and now >= deadline:
                break
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            lingering = exited_at is not None and now - exited_at > DRAIN_AFTER_EXIT_S
            if lingering and not timed_out and not stopped_background:
                stopped_background = True  # children still hold the pipes: stop them
                _kill_group(proc)
                give_up_at = now + 1.0
            if stopped_background and now >= give_up_at:
                break  # something outside the group holds the pipes; stop listening
            for key, _ in selector.select(timeout=0.05):
                data = os.read(key.fd, 65536)
                if data:
                    key.data.add(data)
                else:
                    selector.unregister(key.fileobj)
    except BaseException:
        _kill_group(proc)
        raise
    finally:
        selector.close()
        proc.stdout.close()
        proc.stderr.close()
    # The pipes can close a moment before the shell is reaped, and a shell may close them
    # and keep running: wait for it within the deadline, and kill the group only then.
    while proc.poll() is None and not timed_out:
        if time.monotonic() >= deadline or (cancelled is not None and cancelled.is_set()):
            timed_out = True
            _kill_group(proc)
            break
        time.sleep(0.01)
    if proc.poll() is None:
        _kill_group(proc)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=2.0)
    return ShellOutcome(
        out.text(),
        err.text(),
        None if timed_out else proc.returncode,
        timed_out,
        time.monotonic() - started,
        out.dropped + err.dropped,
        stopped_background,
    )


def _run_windows(  # pragma: no cover - exercised on Windows only
    proc: subprocess.Popen[bytes], started: float, deadline: float, cancelled: threading.Event | None
) -> ShellOutcome:
    timed_out = False
    while True:
        try:
            stdout, stderr = proc.communicate(timeout=0.1)
            break
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline or (cancelled is not None and cancelled.is_set()):
                timed_out = True
                _kill_group(proc)
                stdout, stderr = proc.communicate(timeout=5)
                break
    out, err = _Capture(), _Capture()
    out.add(stdout or b"")
    err.add(stderr or b"")
    return ShellOutcome(
        out.text(), err.text(), None if timed_out else proc.returncode, timed_out,
        time.monotonic() - started, out.dropped + err.dropped, False,
    )  # fmt: skip


def _make_handler(forced: str | None) -> Any:
    def handler(args: dict[str, Any], run: ToolRun) -> str:
        script: str = args["script"]
        if not script.strip():
            raise ToolInputError("script is empty")
        program = resolve_program(forced or run.ctx.shell_program)
        if run.ctx.save_script is not None:
            try:
                run.ctx.save_script(script, program.suffix)
            except OSError as exc:
                raise ToolFailure(
                    f"the script was not run: it could not be saved for the audit trail ({exc})"
                ) from None
        outcome = run_script(
            program, script, run.base_dir, timeout=max(0.0, run.remaining() - 0.05), cancelled=run.cancelled
        )
        if outcome.timed_out:
            raise ToolTimeout(
                f"the script ran out of time after {outcome.duration_s:.1f} s; "
                "its whole process group was killed",
                partial=outcome.render(),
            )
        return outcome.render()

    return handler


def _schema(shell: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "script": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_SCRIPT_CHARS,
                "description": f"The {shell} script to run",
            }
        },
        "required": ["script"],
        "additionalProperties": False,
    }


def shell_tools(timeout_s: float = SHELL_TIMEOUT_S, *, with_powershell: bool | None = None) -> list[Tool]:
    """``run_shell``, plus ``run_powershell`` when PowerShell is installed (or ``with_powershell``)."""
    tools = [
        Tool(
            "run_shell",
            "Run a shell script in the project's base dir (bash on Linux and macOS, PowerShell on "
            "Windows or when configured) and return its exit code, stdout and stderr. The user sees "
            "the script and must approve it (and may edit it). No API keys are in the environment; "
            f"stdin is empty; it is killed after {timeout_s:g} s. Prefer the file tools for reading "
            "and editing files.",
            _schema("shell"),
            _make_handler(None),
            mutating=True,
            timeout_s=timeout_s,
            preview=lambda args, run: args["script"],
        )
    ]
    if powershell_available() if with_powershell is None else with_powershell:
        tools.append(
            Tool(
                "run_powershell",
                "Run a PowerShell script in the project's base dir and return its exit code, stdout and "
                "stderr. The user sees the script and must approve it. Same rules as run_shell.",
                _schema("PowerShell"),
                _make_handler("powershell"),
                mutating=True,
                timeout_s=timeout_s,
                preview=lambda args, run: args["script"],
            )
        )
    return tools
