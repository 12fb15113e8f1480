"""tests/xvfb.py: the private Xvfb of the GUI tests and bench ends with the process that started it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]

HOLDER = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
from tests.xvfb import xvfb_display
with xvfb_display() as name:
    print(name, flush=True)
    sys.stdin.read()
"""


def _running(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE  # a zombie has ended
    except psutil.NoSuchProcess:
        return False


def test_xvfb_stops_when_the_process_that_started_it_is_killed() -> None:
    assert shutil.which("Xvfb"), "Xvfb is missing: make test installs it (Debian package xvfb)"
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    servers: list[psutil.Process] = []
    try:
        assert child.stdout is not None and child.stdout.readline().startswith(":")
        servers = [p for p in psutil.Process(child.pid).children() if "Xvfb" in p.name()]
        assert len(servers) == 1, servers
        child.kill()  # SIGKILL: no finally runs, only the kernel can stop Xvfb now
        child.wait(10)
        deadline = time.monotonic() + 10
        while _running(servers[0]):
            assert time.monotonic() < deadline, f"Xvfb {servers[0].pid} outlived the process that started it"
            time.sleep(0.05)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        for server in servers:  # the test failed: leave no Xvfb behind
            if _running(server):
                server.kill()
