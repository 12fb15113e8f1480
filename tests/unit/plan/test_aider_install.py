"""The Aider installer's own logic (``make aider`` runs the real install): nothing to do when the
pinned version is there, a failing step is named with its output, a cancel kills the step's tree."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from manual_slop.plan.aider import AIDER_VERSION
from manual_slop.plan.aider_install import InstallError, _run, install_aider, installed_version


def test_nothing_happens_when_the_pinned_version_is_installed(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "aider").write_text("")
    (tmp_path / ".installed").write_text(AIDER_VERSION + "\n")
    assert installed_version(tmp_path) == AIDER_VERSION
    assert install_aider(tmp_path, log=lambda _line: pytest.fail("it started installing")) is False
    assert installed_version(tmp_path / "missing") == ""
    (tmp_path / "bin" / "aider").unlink()
    assert installed_version(tmp_path) == ""  # a stamp without the program is no install


def test_a_failing_step_is_named_with_its_output(tmp_path: Path) -> None:
    script = "import sys; print('no matching distribution found'); sys.exit(3)"
    with pytest.raises(InstallError, match=r"pip install failed \(exit code 3\): no matching distribution"):
        _run([sys.executable, "-c", script], "pip install", 30.0, threading.Event())


def test_a_cancel_kills_the_running_step_and_its_children() -> None:
    cancel = threading.Event()
    spawner = (
        "import subprocess, sys, time; "
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    )
    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}  # a session's Xvfb may be one
    threading.Timer(0.5, cancel.set).start()
    started = time.monotonic()
    with pytest.raises(InstallError, match="stopped: it was cancelled"):
        _run([sys.executable, "-c", spawner], "pip install", 120.0, cancel)
    assert time.monotonic() - started < 5.0
    def left() -> list[psutil.Process]:
        return [p for p in me.children(recursive=True) if p.pid not in before]

    deadline = time.monotonic() + 5.0
    while left() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left() == []
