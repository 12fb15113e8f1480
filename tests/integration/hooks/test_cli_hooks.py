"""The app as a subprocess: the hook server's one stdout line, --port-file, shutdown over HTTP,
refusals at start-up; and the client's command line."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import tomllib
from pathlib import Path

import pytest

from manual_slop.dialogs import ConfirmDialog
from manual_slop.hooks import ApiHookClient, Unauthorized
from manual_slop.hooks.token import runtime_token_path
from tests.integration.hooks.conftest import HookApp, wait_until
from tests.integration.test_cli import SLOPPY, clean_env


def launch(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(SLOPPY), "--headless", *args],
        cwd=cwd,
        env=env or clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen[str], timeout: float = 10.0) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    return proc.returncode, out, err


def test_headless_app_announces_the_port_and_stops_on_api_shutdown(tmp_path: Path) -> None:
    port_file = tmp_path / "hook.port"
    proc = launch(
        ["--config", str(tmp_path / "config.toml"), "--hook-port", "0", "--port-file", str(port_file)],
        tmp_path,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("hook server listening on http://127.0.0.1:"), line
        port = int(port_file.read_text())
        assert line == f"hook server listening on http://127.0.0.1:{port}\n"
        client = ApiHookClient(f"http://127.0.0.1:{port}")
        assert client.wait_for_server(10)["mode"] == "headless"
        client.wait_for_task(client.set_value("temperature", 0.25))
        client.add_session_entry("User", "persist me")
        client.shutdown()
        client.close()
    finally:
        code, out, err = finish(proc)
    assert code == 0, err
    assert out == ""  # the announcement was the only stdout line
    assert "stopped cleanly" in err and "no threads left" in err
    assert tomllib.loads((tmp_path / "config.toml").read_text())["ai"]["temperature"] == 0.25
    history = tomllib.loads((tmp_path / "manual_slop_history.toml").read_text())
    assert history["discussions"]["main"]["history"][-1]["content"] == "persist me"
    assert not port_file.exists()  # removed on exit: a stale port never misleads


def test_sigterm_while_serving_still_stops_cleanly(tmp_path: Path) -> None:
    proc = launch(["--config", str(tmp_path / "config.toml"), "--hook-port", "0"], tmp_path)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().rsplit(":", 1)[1])
        client = ApiHookClient(f"http://127.0.0.1:{port}")
        client.wait_for_server(10)
        proc.send_signal(signal.SIGTERM)
    finally:
        code, _, err = finish(proc)
    assert code == 0 and "stopped cleanly" in err, err


def test_a_non_loopback_host_needs_a_token(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[hook]\nhost = "0.0.0.0"\n')
    code, out, err = finish(launch(["--config", str(config), "--hook-port", "0"], tmp_path))
    assert code == 2 and out == ""
    assert err.splitlines() == [
        "sloppy: error: hook.host = '0.0.0.0' is not a loopback address and no token is configured; "
        "set SLOP_HOOK_TOKEN or hook.token in config.toml, or use hook.host = '127.0.0.1'"
    ], err
    config.write_text('[hook]\nhost = "0.0.0.0"\nrequire_token = false\n')
    code, out, err = finish(launch(["--config", str(config), "--hook-port", "0"], tmp_path))
    assert code == 2 and out == "" and len(err.splitlines()) == 1, err
    assert "hook.require_token is false" in err
    config.write_text('[hook]\nhost = "0.0.0.0"\n')

    env = {**clean_env(), "SLOP_HOOK_TOKEN": "tok-123456"}
    proc = launch(["--config", str(config), "--hook-port", "0"], tmp_path, env)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().rsplit(":", 1)[1])
        anonymous = ApiHookClient(f"http://127.0.0.1:{port}", token="")
        assert anonymous.wait_for_server(10)["status"] == "ok"  # /status needs no token
        authorized = ApiHookClient(f"http://127.0.0.1:{port}", token="tok-123456")
        assert authorized.get_value("ai_status") == "idle"
        authorized.shutdown()
    finally:
        code, _, err = finish(proc)
    assert code == 0, err


def test_a_generated_token_is_written_privately_found_by_local_clients_and_removed(tmp_path: Path) -> None:
    token_file = tmp_path / "hook.token"
    proc = launch(
        ["--config", str(tmp_path / "config.toml"), "--hook-port", "0", "--token-file", str(token_file)],
        tmp_path,
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().rsplit(":", 1)[1])
        runtime = runtime_token_path(port)
        wait_until(token_file.exists)
        token = token_file.read_text().strip()
        assert len(token) >= 43 and runtime.read_text().strip() == token
        for path in (token_file, runtime):
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        assert stat.S_IMODE(runtime.parent.stat().st_mode) == 0o700
        with pytest.raises(Unauthorized):
            ApiHookClient(f"http://127.0.0.1:{port}", token="").get_value("ai_status")
        found = ApiHookClient(port=port)  # no token given: read from the runtime file of the port
        assert found.get_value("ai_status") == "idle"
        found.close()
        cli = subprocess.run(
            [sys.executable, "-m", "manual_slop.hooks.client", "--port", str(port), "get", "ai_status"],
            capture_output=True, text=True, timeout=30, env=clean_env(),
        )  # fmt: skip
        assert cli.returncode == 0 and json.loads(cli.stdout) == "idle", cli.stderr
        proc.send_signal(signal.SIGTERM)
    finally:
        code, _, err = finish(proc)
    assert code == 0, err
    assert token not in err  # never printed
    assert not token_file.exists() and not runtime.exists()


def test_switching_the_token_off_is_loud_and_loopback_only(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[hook]\nrequire_token = false\n")
    proc = launch(["--config", str(config), "--hook-port", "0"], tmp_path)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().rsplit(":", 1)[1])
        client = ApiHookClient(f"http://127.0.0.1:{port}", token="")
        assert client.get_value("ai_status") == "idle"  # no token needed, as configured
        assert not runtime_token_path(port).exists()
        client.shutdown()
        client.close()
    finally:
        code, _, err = finish(proc)
    assert code == 0, err
    assert "WARNING: hook.require_token is false" in err
    (app_log,) = (tmp_path / "logs" / "sessions").glob("*/app.log")
    assert "hook.require_token is false" in app_log.read_text()


def test_a_port_in_use_is_a_clear_start_up_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = finish(
            launch(["--config", str(tmp_path / "config.toml"), "--hook-port", str(port)], tmp_path)
        )
    assert code == 2 and out == ""
    assert f"sloppy: error: cannot listen on 127.0.0.1:{port}" in err


def test_an_unusable_port_file_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = finish(launch(["--port-file", str(tmp_path / "missing" / "port")], tmp_path))
    assert code == 2 and "--port-file" in err and "does not exist" in err


def run_client(app: HookApp, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SLOP_HOOK_TOKEN"}
    return subprocess.run(
        [sys.executable, "-m", "manual_slop.hooks.client", "--url", app.url, *args],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )


def test_the_client_command_line(hook_app: HookApp) -> None:
    status = run_client(hook_app, "status")
    assert status.returncode == 0 and status.stderr == "", status.stderr
    assert json.loads(status.stdout)["status"] == "ok"
    assert json.loads(run_client(hook_app, "set", "project_files", '["src/*.py"]').stdout)["state"] == "done"
    assert json.loads(run_client(hook_app, "get", "project_files").stdout) == ["src/*.py"]
    assert json.loads(run_client(hook_app, "set", "ai_input", "plain text").stdout)["state"] == "done"
    assert json.loads(run_client(hook_app, "get", "ai_input").stdout) == "plain text"
    assert json.loads(run_client(hook_app, "click", "btn_new_discussion", "cli").stdout)["state"] == "done"
    assert json.loads(run_client(hook_app, "pending").stdout) == []

    bad = run_client(hook_app, "set", "temperature", "hot")
    assert bad.returncode == 1 and "error: bad_request: temperature: expected number" in bad.stderr
    unknown = run_client(hook_app, "reject", "nope")
    assert unknown.returncode == 1 and "not_found" in unknown.stderr
    unavailable = run_client(hook_app, "send", "hi")
    assert (
        unavailable.returncode == 1
        and "conflict" in unavailable.stderr
        and "not available yet" in unavailable.stderr
    )


@pytest.mark.parametrize("command", ["approve", "reject"])
def test_the_client_command_line_decides_a_dialog(hook_app: HookApp, command: str) -> None:
    dialog = ConfirmDialog("make", "/p")
    outcome: list = []
    worker = threading.Thread(
        target=lambda: outcome.append(hook_app.ctrl.request_approval(dialog, timeout=20))
    )
    worker.start()
    try:
        wait_until(lambda: hook_app.ctrl.clutch.get(dialog.uid) is not None)
        listed = run_client(hook_app, "pending")
        assert json.loads(listed.stdout)[0]["id"] == dialog.uid
        assert run_client(hook_app, command, dialog.uid).returncode == 0
    finally:
        if not dialog.done:
            dialog.resolve(False)
        worker.join(5)
    assert outcome[0].approved is (command == "approve") and outcome[0].decider == "hook"
