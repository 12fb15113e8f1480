"""Start a private Xvfb (used by the GUI test fixture and scripts/bench_gui.py)."""

from __future__ import annotations

import os
import select
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["XvfbMissing", "xvfb_display"]


class XvfbMissing(RuntimeError):
    """Xvfb is not installed (`make test` installs the Debian package xvfb)."""


@contextmanager
def xvfb_display(size: str = "1280x800x24") -> Iterator[str]:
    """Run Xvfb and set DISPLAY (and software GL) for the duration; yields ':N'."""
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        raise XvfbMissing("Xvfb is not installed; `make test` installs it (Debian package xvfb)")
    read_fd, write_fd = os.pipe()
    # A process that crashes (a SIGSEGV in a GUI test, a kill -9) never reaches the finally
    # below: setpriv (util-linux) has the kernel stop Xvfb when its parent dies.
    setpriv = shutil.which("setpriv")
    guard = [setpriv, "--pdeathsig", "TERM"] if setpriv else []
    proc = subprocess.Popen(
        # -noreset: without it the server "regenerates" when its last client leaves and
        # writes the display number to -displayfd again, and dies if nobody reads it.
        [*guard, xvfb, "-displayfd", str(write_fd), "-screen", "0", size, "-nolisten", "tcp", "-noreset"],
        pass_fds=(write_fd,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_fd)
    previous = {k: os.environ.get(k) for k in ("DISPLAY", "LIBGL_ALWAYS_SOFTWARE")}
    try:
        ready, _, _ = select.select([read_fd], [], [], 10.0)
        if not ready:
            raise RuntimeError("Xvfb did not report a display within 10 s")
        number = os.read(read_fd, 64).decode().strip()
        os.environ["DISPLAY"] = f":{number}"
        os.environ["LIBGL_ALWAYS_SOFTWARE"] = "1"
        yield os.environ["DISPLAY"]
    finally:
        os.close(read_fd)
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        for key, value in previous.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
