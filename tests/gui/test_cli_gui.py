"""``python sloppy.py`` with a display opens the window, and SIGTERM closes it cleanly."""

from __future__ import annotations

import signal
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.helpers import app_env

SLOPPY = Path(__file__).resolve().parents[2] / "sloppy.py"


def test_gui_mode_starts_and_stops_cleanly(display: str, tmp_path: Path) -> None:
    env = app_env(display)
    proc = subprocess.Popen(
        [sys.executable, str(SLOPPY), "--config", str(tmp_path / "config.toml")],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = []
        while True:
            line = proc.stderr.readline()
            assert line, f"app exited early: {lines}"
            lines.append(line)
            if line.startswith("sloppy: session logs:"):
                break
        assert lines[0].startswith("sloppy: running gui")
        sessions = tmp_path / "logs" / "sessions"
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    assert code == 0, proc.stderr.read()
    assert "stopped cleanly" in proc.stderr.read()
    assert tomllib.loads((tmp_path / "config.toml").read_text())["gui"]["show_windows"]["Message"] is True
    assert next(sessions.iterdir()).joinpath("session.json").exists()

