"""The desktop app as a subprocess (``sloppy.py --enable-test-hooks``) under Xvfb, driven over
the Hook API: set the provider, send, approve a tool call through /api/pending, read the MMA
status, shut down through /api/shutdown — and a clean exit."""

from __future__ import annotations

import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from manual_slop.hooks.client import ApiHookClient
from tests.fakes import Call, OpenAIFake, Reply
from tests.helpers import app_env

SLOPPY = Path(__file__).resolve().parents[2] / "sloppy.py"


@pytest.fixture
def fake() -> Iterator[OpenAIFake]:
    with OpenAIFake() as server:
        yield server


@pytest.fixture
def live_gui(display: str, tmp_path: Path) -> Iterator[tuple[ApiHookClient, subprocess.Popen[str], Path]]:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("original\n")
    (project / "demo.toml").write_text('[files]\npaths = ["notes.txt"]\n')
    port_file = tmp_path / "port"
    env = app_env(display, DEEPSEEK_API_KEY="sk-live-gui")
    proc = subprocess.Popen(
        [
            sys.executable,
            str(SLOPPY),
            "--enable-test-hooks",
            "--hook-port",
            "0",
            "--port-file",
            str(port_file),
            "--config",
            str(tmp_path / "config.toml"),
            "--project",
            str(project / "demo.toml"),
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "the app never wrote its port file"
            time.sleep(0.05)
        client = ApiHookClient(f"http://127.0.0.1:{port_file.read_text().strip()}")
        client.wait_for_server(20)
        yield client, proc, project
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_drive_the_window_over_the_hook_api(live_gui, fake: OpenAIFake) -> None:
    api, proc, project = live_gui
    assert api.status()["mode"] == "gui"
    deadline = time.monotonic() + 30
    while not api.health()["healthy"]:  # the server answers before the window's first frame
        assert time.monotonic() < deadline, api.health()
        time.sleep(0.05)
    assert api.health()["frames"] > 0
    for field, value in (("current_provider", "deepseek"), ("provider_base_url", fake.base_url)):
        api.wait_for_task(api.set_value(field, value))
    fake.push(
        Reply("", [Call("write_file", {"path": "notes.txt", "content": "changed by the model\n"})]),
        Reply("I updated notes.txt."),
    )
    request = api.send("please update notes.txt")
    deadline = time.monotonic() + 30
    while not (pending := api.pending()):
        assert time.monotonic() < deadline, "no approval dialog appeared"
        time.sleep(0.05)
    assert pending[0]["kind"] == "tool_approval" and "changed by the model" in pending[0]["payload"]["diff"]
    assert (project / "notes.txt").read_text() == "original\n"  # nothing ran before the decision
    api.approve(pending[0]["id"])
    result = api.wait_for_request(request, timeout=30)
    assert result["state"] == "done" and result["response"] == "I updated notes.txt."
    assert (project / "notes.txt").read_text() == "changed by the model\n"
    assert api.get_value("pending_dialogs") == []
    assert api.mma_status()["status"] == "idle"
    api.shutdown()
    assert proc.wait(15) == 0
    assert "stopped cleanly" in proc.stderr.read()


def test_a_window_that_drew_a_thumbnail_exits_cleanly_and_saves(live_gui, tmp_path: Path) -> None:
    """A texture freed after its GL context is gone crashes the process (SIGSEGV) before the
    config and project are saved: the window frees its textures while it still has one."""
    from PIL import Image

    api, proc, project = live_gui
    Image.new("RGB", (400, 200), "orange").save(project / "ui.png")
    api.wait_for_task(api.set_value("screenshots", ["ui.png"]))
    api.wait_for_task(api.click("btn_refresh_context"))
    drawn_from, deadline = api.health()["frames"], time.monotonic() + 30
    while api.health()["frames"] < drawn_from + 30:  # the thumbnail is made and drawn
        assert time.monotonic() < deadline, "the window stopped drawing"
        time.sleep(0.05)
    api.shutdown()
    code = proc.wait(15)
    err = proc.stderr.read()
    assert code == 0, f"exit code {code}: {err[-2000:]}"
    assert "stopped cleanly" in err
    assert tomllib.loads((tmp_path / "config.toml").read_text())["gui"]["show_windows"]["Message"] is True
