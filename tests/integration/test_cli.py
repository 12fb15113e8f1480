"""``python sloppy.py`` as a real subprocess: start-up, signals, flush, bad input."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest

from manual_slop.hooks.client import ApiHookClient
from tests.helpers import app_env

ROOT = Path(__file__).resolve().parents[2]
SLOPPY = ROOT / "sloppy.py"


def clean_env() -> dict[str, str]:
    return app_env()


def start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    if "--hook-port" not in args:
        args = [*args, "--hook-port", "0"]  # never the fixed 8999: suites may run side by side
    return subprocess.Popen(
        [sys.executable, str(SLOPPY), *args],
        cwd=cwd,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def reap(proc: subprocess.Popen[Any]) -> None:
    """Kill ``proc`` if it is still running (a test failed before it stopped) and wait for it."""
    if proc.poll() is None:
        proc.kill()
        proc.wait(5)


def wait_until_running(proc: subprocess.Popen[str]) -> list[str]:
    """Read stderr lines until the app says it is running (the ticker has started)."""
    lines: list[str] = []
    assert proc.stderr is not None
    while True:
        line = proc.stderr.readline()
        assert line, f"app exited early: {lines}"
        lines.append(line.rstrip("\n"))
        if line.startswith("sloppy: session logs:"):
            return lines


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SLOPPY), *args],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=30,
    )


def wait_for_frames(proc: subprocess.Popen[str], timeout: float = 10.0) -> None:
    """Wait (over the Hook API the app announces on stdout) until the ticker has run frames."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("hook server listening on "), line
    client = ApiHookClient(line.split()[-1])
    client.wait_for_server(30)  # the Hook API answers before the app is built: wait for it
    deadline = time.monotonic() + timeout
    while client.health()["frames"] < 3:
        assert time.monotonic() < deadline, "the ticker never ran"
        time.sleep(0.02)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_headless_start_and_clean_exit_on_signal(tmp_path: Path, sig: signal.Signals) -> None:
    config = tmp_path / "config.toml"
    proc = start(["--headless", "--config", str(config)], tmp_path)
    try:
        wait_until_running(proc)
        wait_for_frames(proc)
        proc.send_signal(sig)
        code = proc.wait(timeout=2.0)  # the limit for a clean exit
    finally:
        reap(proc)
    stderr = proc.stderr.read()
    assert code == 0, stderr
    assert "stopped cleanly" in stderr and "no threads left" in stderr
    assert tomllib.loads(config.read_text())["ai"]["provider"] == "local"
    assert tomllib.loads((tmp_path / "manual_slop.toml").read_text())["project"]["name"] == "manual_slop"
    assert (tmp_path / "manual_slop_history.toml").exists()
    sessions = list((tmp_path / "logs" / "sessions").iterdir())
    meta = json.loads((sessions[0] / "session.json").read_text())
    assert meta["ended"] is not None and meta["frames"] > 0  # the ticker ran


def test_no_display_falls_back_to_headless_and_says_so(tmp_path: Path) -> None:
    proc = start(["--config", str(tmp_path / "config.toml")], tmp_path)
    try:
        lines = wait_until_running(proc)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=5) == 0
    finally:
        reap(proc)
    assert lines[0] == "sloppy: no display found; starting headless"


def test_corrupt_config_starts_with_defaults_and_a_visible_warning(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[ai\nprovider = ")
    proc = start(["--headless", "--config", str(config)], tmp_path)
    try:
        lines = wait_until_running(proc)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=5) == 0
    finally:
        reap(proc)
    moved = list(tmp_path.glob("config.toml.corrupt-*"))
    assert len(moved) == 1 and moved[0].read_text() == "[ai\nprovider = "
    assert any("could not be parsed" in line and moved[0].name in line for line in lines)
    assert tomllib.loads(config.read_text())["ai"]["provider"] == "local"  # fresh defaults saved


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["--hook-port", "abc"], "expected an integer 0-65535, got 'abc'"),
        (["--hook-port", "70000"], "expected an integer 0-65535, got 70000"),
        (["--config"], "expected one argument"),
        (["--config", "{tmp}"], "is a directory"),
        (["--config", "{tmp}/missing/config.toml"], "does not exist"),
        (["--project", "{tmp}"], "is a directory"),
        (["--log-dir", "{tmp}/file.txt"], "exists and is not a directory"),
        (["--head"], "unrecognized arguments: --head"),  # no abbreviations
    ],
)
def test_bad_input_exits_2_with_one_clear_line(tmp_path: Path, args: list[str], fragment: str) -> None:
    (tmp_path / "file.txt").write_text("x")
    result = run([a.replace("{tmp}", str(tmp_path)) for a in args], tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("sloppy: error: ") and fragment in lines[0]
    assert list(tmp_path.iterdir()) == [tmp_path / "file.txt"]  # nothing was created


def test_version_and_help(tmp_path: Path) -> None:
    assert run(["--version"], tmp_path).stdout.startswith("sloppy ")
    assert "--enable-test-hooks" in run(["--help"], tmp_path).stdout


def _storyteller(project_dir: Path) -> None:
    """The project's chat runs as an agent offered one tool: the offline model starts streaming
    after a ~450-token prompt instead of the ~1,700 tokens of the full tool list (~4x sooner on
    one core; the answer still streams through the tool protocol's parser)."""
    agent = project_dir / "agents" / "storyteller"
    agent.mkdir(parents=True)
    (agent / "system_prompt.md").write_text("You write stories.\n")
    (agent / "agent.toml").write_text('tools = ["read_file"]\n')
    (project_dir / "manual_slop.toml").write_text('[agents]\nactive = "storyteller"\n')


def _generating(tmp_path: Path) -> tuple[subprocess.Popen[str], ApiHookClient, str]:
    """The headless app on the offline model, in the middle of a long answer."""
    _storyteller(tmp_path)
    proc = start(["--headless", "--config", str(tmp_path / "config.toml")], tmp_path)
    try:
        wait_until_running(proc)
        assert proc.stdout is not None
        client = ApiHookClient(proc.stdout.readline().split()[-1])
        request_id = client.send("Write a very long story about a dragon, a knight and a castle.")
        deadline = time.monotonic() + 60
        while len(client.get_value("ai_response")) < 20:  # tokens are streaming
            assert time.monotonic() < deadline, client.request_status(request_id)
            time.sleep(0.05)
    except BaseException:
        reap(proc)  # a model that never streamed leaves no app behind
        raise
    return proc, client, request_id


@pytest.mark.heavy(20)  # seconds here, alone on two cores
def test_ctrl_c_in_the_middle_of_a_local_answer_exits_cleanly_within_two_seconds(tmp_path: Path) -> None:
    proc, client, _ = _generating(tmp_path)
    try:
        asked = time.monotonic()
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=5)
        elapsed = time.monotonic() - asked
    finally:
        client.close()
        reap(proc)
    stderr = proc.stderr.read()
    assert code == 0 and elapsed < 2.0, (elapsed, stderr)
    assert "stopped cleanly" in stderr
    history = tomllib.loads((tmp_path / "manual_slop_history.toml").read_text())
    last = history["discussions"]["main"]["history"][-1]
    assert last["content"].endswith("[cut: the app is shutting down]")  # the partial answer was kept


def test_a_second_ctrl_c_exits_at_once(tmp_path: Path) -> None:
    proc, client, _ = _generating(tmp_path)
    try:
        proc.send_signal(signal.SIGINT)
        time.sleep(0.03)  # the first is being handled (a clean stop takes a few hundred ms)
        asked = time.monotonic()
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=5)
        elapsed = time.monotonic() - asked
    finally:
        client.close()
        reap(proc)
    assert code == 130 and elapsed < 0.5, elapsed
    assert "second interrupt: exiting at once" in proc.stderr.read()


@pytest.mark.parametrize(
    ("name", "content", "fragment"),
    [
        ("calc.py", "def add(a, b):\n    return a + b\n", "expected a .toml file, got .py"),
        (
            "pyproject.toml",
            '[project]\nname = "x"\n[build-system]\nrequires = []\n',
            "not a Manual Slop file",
        ),
        ("notes", "just text\n", "expected a .toml file, got a name without extension"),
    ],
)
def test_a_file_that_is_not_the_apps_is_never_touched(
    tmp_path: Path, name: str, content: str, fragment: str
) -> None:
    target = tmp_path / name
    target.write_text(content)
    for flag in ("--project", "--config"):
        result = run(["--headless", flag, str(target)], tmp_path)
        assert result.returncode == 2, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and fragment in lines[0] and flag in lines[0], result.stderr
        assert target.read_text() == content  # byte for byte: not moved, not repaired, not rewritten
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # nothing else was created


def test_a_missing_project_is_created_only_with_new(tmp_path: Path) -> None:
    missing = tmp_path / "typo.toml"
    result = run(["--headless", "--project", str(missing)], tmp_path)
    assert result.returncode == 2 and "does not exist; create it with --new" in result.stderr
    assert not missing.exists()
    config = tmp_path / "config.toml"
    proc = start(["--headless", "--config", str(config), "--project", str(missing), "--new"], tmp_path)
    try:
        wait_until_running(proc)
        wait_for_frames(proc)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=5) == 0
    finally:
        reap(proc)
    assert tomllib.loads(missing.read_text())["project"]["name"] == "typo"
    again = run(["--headless", "--project", str(missing), "--new"], tmp_path)
    assert again.returncode == 2 and "already exists; drop --new" in again.stderr


def test_a_signal_while_the_app_is_being_built_still_stops_it_cleanly(tmp_path: Path) -> None:
    """The Hook API listens before the app is built (headless): a SIGTERM right after its first
    200 is honoured once the app exists, and every file the start wrote is removed."""
    from manual_slop.hooks.token import runtime_token_path

    port_file, token_file = tmp_path / "hook.port", tmp_path / "hook.token"
    args = ["--headless", "--config", str(tmp_path / "config.toml")]
    proc = start([*args, "--port-file", str(port_file), "--token-file", str(token_file)], tmp_path)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("hook server listening on "), line
        port = int(port_file.read_text())
        assert runtime_token_path(port).read_text().strip() == token_file.read_text().strip()
        assert ApiHookClient(line.split()[-1]).status()["mode"] == "headless"
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=15)
    finally:
        reap(proc)
    stderr = proc.stderr.read() if proc.stderr else ""
    assert code == 0, stderr
    assert "stopped cleanly" in stderr, stderr
    assert not port_file.exists() and not token_file.exists() and not runtime_token_path(port).exists()
