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


def test_a_window_that_drew_thumbnails_exits_cleanly(display: str, tmp_path: Path) -> None:
    """A texture freed after its GL context is gone crashes the process (SIGSEGV) before the
    config and project are saved: the window frees its textures while it still has one."""
    import time

    from PIL import Image

    from manual_slop.hooks.api_client import ApiHookClient

    Image.new("RGB", (400, 200), "orange").save(tmp_path / "ui.png")
    port_file, token_file = tmp_path / "port", tmp_path / "token"
    proc = subprocess.Popen(
        [sys.executable, str(SLOPPY), "--config", str(tmp_path / "config.toml"), "--enable-test-hooks",
         "--hook-port", "0", "--port-file", str(port_file), "--token-file", str(token_file)],
        cwd=tmp_path, env=app_env(display), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (port_file.exists() and token_file.exists()):
            assert proc.poll() is None and time.monotonic() < deadline, "the app never listened"
            time.sleep(0.05)
        client = ApiHookClient(port=int(port_file.read_text()), token=token_file.read_text().strip())
        client.wait_for_server()
        client.wait_for_task(client.set_value("screenshots", ["ui.png"]))
        client.wait_for_task(client.click("btn_refresh_context"))
        drawn_from = client.health()["frames"]
        while client.health()["frames"] < drawn_from + 30:  # the thumbnail is made and drawn
            assert time.monotonic() < deadline, "the window stopped drawing"
            time.sleep(0.05)
        client.shutdown()
        client.close()
        code = proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    err = proc.stderr.read()
    assert code == 0, f"exit code {code}: {err[-2000:]}"
    assert "stopped cleanly" in err
    assert tomllib.loads((tmp_path / "config.toml").read_text())["gui"]["show_windows"]["Message"] is True
