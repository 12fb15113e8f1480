"""Installing the pinned Aider into its own venv (``.tools/aider``), never into the app's.

One implementation for ``make aider`` (which ``make test`` runs) and for the app's
``btn_plan_install_aider`` (the first use of the ``aider`` engine on a machine without it):
a fresh venv, ``pip install aider-chat==<pinned>``, a check that ``aider --version`` runs, then the
stamp file the engine reads. Nothing happens when the stamp already names the pinned version.
A failed install leaves no stamp, so the engine keeps reporting itself unavailable.

Run: ``python -m manual_slop.plan.aider_install [TOOLS_DIR]``. The module needs nothing but the
standard library (``make`` runs it with the system's Python while the app's venv installs).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from manual_slop.atomic_io import atomic_write_text
from manual_slop.process_tree import kill_tree

__all__ = ["AIDER_VERSION", "InstallError", "default_tools_dir", "install_aider", "installed_version"]

AIDER_VERSION = "0.86.2"  # the Makefile's AIDER_VERSION: the engine's flags were checked against it
_REPO = Path(__file__).resolve().parents[3]

PIP_TIMEOUT_S = 1800.0  # aider-chat pulls ~700 MB of wheels; a slow mirror is not an error


def default_tools_dir() -> Path:
    """``.tools/aider`` of this source checkout (where ``make aider`` installs it)."""
    return _REPO / ".tools" / "aider"


class InstallError(RuntimeError):
    """The install failed; the message says at which step and ends with the tool's own output."""


def installed_version(tools_dir: Path) -> str:
    """The version the stamp names ('' when Aider is not, or not completely, installed)."""
    stamp = tools_dir / ".installed"
    try:
        return stamp.read_text(encoding="utf-8").strip() if (tools_dir / "bin" / "aider").exists() else ""
    except OSError:
        return ""


def install_aider(
    tools_dir: Path | None = None,
    version: str = AIDER_VERSION,
    log: Callable[[str], None] = print,
    cancel: threading.Event | None = None,
) -> bool:
    """Install ``aider-chat==version`` into ``tools_dir``; False when it already was there.
    ``cancel`` (the app closing) kills the running step's process tree: InstallError."""
    tools_dir = tools_dir or default_tools_dir()
    cancel = cancel or threading.Event()
    if installed_version(tools_dir) == version:
        return False
    log(f"installing aider-chat {version} into {tools_dir} ...")
    if tools_dir.exists():
        shutil.rmtree(tools_dir)  # a partial or other version: start clean
    _run([sys.executable, "-m", "venv", str(tools_dir)], "creating the venv", 300.0, cancel)
    python = tools_dir / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--quiet"]
    _run([*pip, f"aider-chat=={version}"], "pip install", PIP_TIMEOUT_S, cancel)
    _run([str(tools_dir / "bin" / "aider"), "--version"], "running aider --version", 120.0, cancel)
    atomic_write_text(tools_dir / ".installed", version + "\n")
    return True


def _run(argv: list[str], step: str, timeout: float, cancel: threading.Event) -> None:
    """One step in its own session; its whole process tree is killed on timeout or cancel."""
    with tempfile.TemporaryFile("w+") as output:
        try:
            proc = subprocess.Popen(
                argv, stdout=output, stderr=subprocess.STDOUT, text=True, start_new_session=True
            )
        except OSError as exc:
            raise InstallError(f"{step} failed: {exc}") from None
        deadline = time.monotonic() + timeout
        while proc.poll() is None:
            if cancel.wait(0.2) or time.monotonic() > deadline:
                kill_tree(proc)
                why = "it was cancelled" if cancel.is_set() else f"it took longer than {timeout:g} s"
                raise InstallError(f"{step} stopped: {why}")
        if proc.returncode != 0:
            output.seek(0)
            raise InstallError(
                f"{step} failed (exit code {proc.returncode}): {output.read().strip()[-1500:]}"
            )


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        install_aider(Path(args[0]) if args else None)
    except InstallError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
