"""tests/xvfb.py: the private Xvfb of the GUI tests and bench ends with the process that started it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

HOLDER = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
from tests.xvfb import xvfb_display
with xvfb_display() as name:
    print(name, flush=True)
    sys.stdin.read()
"""


def _state(pid: int) -> tuple[int, str] | None:
    """(parent pid, state letter) of a live process, None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), fields[0]


def _xvfb_children(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        state = _state(int(entry.name))
        if state is not None and state[0] == parent and b"Xvfb" in cmdline:
            found.append(int(entry.name))
    return found


def test_xvfb_stops_when_the_process_that_started_it_is_killed() -> None:
    assert shutil.which("Xvfb"), "Xvfb is missing: make test installs it (Debian package xvfb)"
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    servers: list[int] = []
    try:
        assert child.stdout is not None and child.stdout.readline().startswith(":")
        servers = _xvfb_children(child.pid)
        assert len(servers) == 1, servers
        os.kill(child.pid, signal.SIGKILL)  # no finally runs: only the kernel can stop Xvfb now
        child.wait(10)
        deadline = time.monotonic() + 10
        while (state := _state(servers[0])) is not None and state[1] != "Z":  # a zombie has ended
            assert time.monotonic() < deadline, f"Xvfb {servers[0]} outlived the process that started it"
            time.sleep(0.05)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        for pid in servers:  # the test failed: leave no Xvfb behind
            if (state := _state(pid)) is not None and state[1] != "Z":
                os.kill(pid, signal.SIGKILL)
