"""Launch Manual Slop as a real subprocess for a simulation, and stop it cleanly.

:class:`LaunchedApp` writes a private ``config.toml`` and project file into a work
folder, starts ``sloppy.py --headless`` (or the window with ``--enable-test-hooks``)
on a free Hook API port, reads the one line the app prints on stdout
(``hook server listening on http://HOST:PORT``) and, at the end, stops it with
``POST /api/shutdown`` — the clean exit that saves config, project and discussions —
and checks it said so. The app's stdout and stderr go to files in the work folder
(no pipe can fill up and stall it). Only when the app does not exit after the
shutdown request is it terminated, by its pid, and that is reported as a failure.

Provider keys reach the app only through its environment (``env``); the caller's own
keys, hook token and display are not inherited.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import tomli_w

from manual_slop.hooks import ApiHookClient
from manual_slop.hooks.errors import HookError
from simulation.errors import LaunchError

__all__ = ["ROOT", "SLOPPY", "AppSpec", "LaunchMode", "LaunchedApp", "clean_environment"]

ROOT = Path(__file__).resolve().parents[1]
SLOPPY = ROOT / "sloppy.py"
ANNOUNCE = "hook server listening on "
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0
_INHERITED_DROP = ("SLOP_HOOK_TOKEN", "SLOP_HOOK_URL", "DISPLAY", "WAYLAND_DISPLAY")


class LaunchMode(StrEnum):
    """How the harness runs the app."""

    HEADLESS = "headless"
    GUI = "gui"


@dataclass(slots=True)
class AppSpec:
    """What a launched app gets: its global config, its project, extra environment."""

    config: dict[str, Any] = field(default_factory=dict)
    project: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    token: str = ""


def clean_environment(extra: Mapping[str, str], mode: LaunchMode) -> dict[str, str]:
    """The caller's environment without provider keys, hook settings or (headless) display,
    plus ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if (not k.endswith("_API_KEY") and k not in _INHERITED_DROP)
        or (mode is LaunchMode.GUI and k == "DISPLAY")
    }
    env.update(extra)
    return env


class LaunchedApp:
    """One app process in ``workdir`` (``config.toml``, ``project.toml``, ``logs/``)."""

    def __init__(self, workdir: Path, spec: AppSpec, mode: LaunchMode = LaunchMode.HEADLESS) -> None:
        self.workdir = workdir
        self.spec = spec
        self.mode = mode
        self.config_file = workdir / "config.toml"
        self.project_file = workdir / "project.toml"
        self.log_dir = workdir / "logs"
        self.url = ""  # set once the app announced its Hook API
        self.starts = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._stdout: Path | None = None
        self._stderr: Path | None = None

    # -- files ----------------------------------------------------------------------------
    def write_files(self) -> None:
        """Write config and project (first start only: a restart keeps what the app saved)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        if not self.config_file.exists():
            self.config_file.write_bytes(tomli_w.dumps(self.spec.config).encode("utf-8"))
        if not self.project_file.exists():
            self.project_file.write_bytes(tomli_w.dumps(self.spec.project).encode("utf-8"))

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def stderr_text(self) -> str:
        return self._stderr.read_text(encoding="utf-8", errors="replace") if self._stderr else ""

    # -- lifetime -------------------------------------------------------------------------
    def start(self, timeout: float = START_TIMEOUT_S) -> str:
        """Start the app; its Hook API URL once it listens."""
        if self.running:
            raise LaunchError("the app is already running")
        self.write_files()
        self.starts += 1
        self.url = ""
        self._stdout = self.workdir / f"app-{self.starts}.stdout"
        self._stderr = self.workdir / f"app-{self.starts}.stderr"
        argv = [
            sys.executable,
            str(SLOPPY),
            "--config",
            str(self.config_file),
            "--project",
            str(self.project_file),
            "--log-dir",
            str(self.log_dir),
            "--hook-port",
            "0",
        ]
        argv.append("--headless" if self.mode is LaunchMode.HEADLESS else "--enable-test-hooks")
        env = clean_environment(self.spec.env, self.mode)
        if self.spec.token:
            env["SLOP_HOOK_TOKEN"] = self.spec.token
        if self.mode is LaunchMode.GUI and not env.get("DISPLAY"):
            raise LaunchError("--launch gui needs a display: set DISPLAY (or run under Xvfb)")
        with self._stdout.open("wb") as out, self._stderr.open("wb") as err:
            self._proc = subprocess.Popen(
                argv, cwd=self.workdir, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err
            )
        atexit.register(self._terminate)  # never outlive the harness, even if it dies mid-run
        self.url = self._wait_for_announcement(timeout)
        return self.url

    def _wait_for_announcement(self, timeout: float) -> str:
        assert self._proc is not None and self._stdout is not None
        deadline = time.monotonic() + timeout
        while True:
            text = self._stdout.read_text(encoding="utf-8", errors="replace")
            for line in text.splitlines():
                if line.startswith(ANNOUNCE):
                    return line[len(ANNOUNCE) :].strip()
            code = self._proc.poll()
            if code is not None:
                raise LaunchError(f"the app exited with code {code} before listening:\n{self._tail()}")
            if time.monotonic() >= deadline:
                self._terminate()
                raise LaunchError(
                    f"the app did not announce its Hook API within {timeout:g} s:\n{self._tail()}"
                )
            time.sleep(0.02)

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """``POST /api/shutdown`` and wait for a clean exit; LaunchError when it was not clean."""
        proc = self._proc
        if proc is None:
            return
        try:
            if proc.poll() is None and not self.url:  # interrupted before it listened
                self._terminate()
                raise LaunchError("the app was stopped (SIGTERM) before it announced its Hook API")
            if proc.poll() is None:
                try:
                    with ApiHookClient(self.url, self.spec.token or None, timeout=5.0) as client:
                        client.shutdown()
                except HookError as exc:
                    if proc.poll() is None:
                        self._terminate()
                        raise LaunchError(f"/api/shutdown failed ({exc}); the app was terminated") from exc
                try:
                    proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    self._terminate()
                    raise LaunchError(
                        f"the app did not exit within {timeout:g} s of /api/shutdown; it was terminated:\n"
                        f"{self._tail()}"
                    ) from None
            code = proc.returncode
            if code != 0:
                raise LaunchError(f"the app exited with code {code}:\n{self._tail()}")
            if "stopped cleanly" not in self.stderr_text():
                raise LaunchError(f"the app did not report a clean stop:\n{self._tail()}")
        finally:
            if proc.poll() is None:  # whatever went wrong above, never leave it running
                self._terminate()
            atexit.unregister(self._terminate)
            self._proc = None

    def restart(self, timeout: float = START_TIMEOUT_S) -> str:
        """Stop cleanly and start again on the same files; the new URL."""
        self.stop()
        return self.start(timeout)

    def _terminate(self) -> None:
        """Last resort for a process that would not stop: SIGTERM, then SIGKILL, by its pid."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait(5)

    def _tail(self, lines: int = 15) -> str:
        text = self.stderr_text().rstrip().splitlines()
        return "\n".join("    " + line for line in text[-lines:]) or "    (no output on stderr)"
