"""The app as a subprocess: the hook server's one stdout line, --port-file, shutdown over HTTP,
refusals at start-up; and the client's command line."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

import pytest

from manual_slop.dialogs import ConfirmDialog, MMASpawnApprovalDialog, ToolApprovalDialog
from manual_slop.hooks import ApiHookClient, Unauthorized
from manual_slop.hooks.token import runtime_token_path
from tests.fakes import OpenAIFake, Reply
from tests.integration.hooks.conftest import HookApp, deepseek_app, wait_until
from tests.integration.hooks.test_mma_e2e import PLAN, TICKETS
from tests.integration.test_cli import SLOPPY, clean_env, reap
from tests.integration.test_controller import FakeBackend


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
        reap(proc)
    return proc.returncode, out, err


def announced_port(proc: subprocess.Popen[str]) -> int:
    """The port of the app's announcement, its first stdout line."""
    assert proc.stdout is not None
    return int(proc.stdout.readline().rsplit(":", 1)[1])


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
        port = announced_port(proc)
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
        port = announced_port(proc)
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
        port = announced_port(proc)
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
        assert cli.returncode == 0, cli.stderr
        assert json.loads(cli.stdout) == {"field": "ai_status", "value": "idle"}
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
        port = announced_port(proc)
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


def client_command(app: HookApp, *args: str) -> list[str]:
    return [sys.executable, "-m", "manual_slop.hooks.client", "--url", app.url, *args]


def client_env() -> dict[str, str]:
    """The test's environment without a token: the CLI finds the app's runtime token file."""
    return {k: v for k, v in os.environ.items() if k != "SLOP_HOOK_TOKEN"}


def run_client(app: HookApp, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        client_command(app, *args),
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        env=client_env(),
    )


def test_the_client_command_line(hook_app: HookApp) -> None:
    status = run_client(hook_app, "status")
    assert status.returncode == 0 and status.stderr == "", status.stderr
    assert json.loads(status.stdout)["status"] == "ok"
    assert json.loads(run_client(hook_app, "set", "project_files", '["src/*.py"]').stdout)["state"] == "done"
    assert json.loads(run_client(hook_app, "get", "project_files").stdout) == {
        "field": "project_files",
        "value": ["src/*.py"],
    }
    assert json.loads(run_client(hook_app, "set", "ai_input", "plain text").stdout)["state"] == "done"
    assert json.loads(run_client(hook_app, "get", "ai_input").stdout)["value"] == "plain text"
    assert json.loads(run_client(hook_app, "click", "btn_new_discussion", "cli").stdout)["state"] == "done"
    assert json.loads(run_client(hook_app, "pending").stdout) == {"pending": []}

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
        assert json.loads(listed.stdout)["pending"][0]["id"] == dialog.uid
        decided = run_client(hook_app, command, dialog.uid)
        assert decided.returncode == 0 and json.loads(decided.stdout) == {"resolved": True}
    finally:
        if not dialog.done:
            dialog.resolve(False)
        worker.join(5)
    assert outcome[0].approved is (command == "approve") and outcome[0].decider == "hook"


# =========================================================================================
# the command line: output shapes, approvals, events, MMA, requests
# =========================================================================================
def _terminal_sigint() -> None:
    """In the child before exec: Ctrl+C as a terminal delivers it (default disposition, not
    blocked), whatever this pytest worker's state (an ignored SIGINT would be inherited)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _signal_state(pid: int) -> str:
    """The signal masks of process ``pid`` and of this one, from /proc (for a failure message)."""
    lines = []
    for who, path in (("child", f"/proc/{pid}/status"), ("pytest", "/proc/self/status")):
        try:
            text = Path(path).read_text()
        except OSError as exc:
            lines.append(f"{who}: {exc}")
            continue
        masks = [line for line in text.splitlines() if line.startswith(("SigBlk", "SigIgn", "SigCgt"))]
        lines.append(f"{who}: {' '.join(masks)}")
    return "; ".join(lines)


class FollowedClient:
    """The CLI as a running process whose stdout lines are read with a timeout."""

    def __init__(self, app: HookApp, *args: str) -> None:
        self.proc = subprocess.Popen(
            client_command(app, *args),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=client_env(),
            preexec_fn=_terminal_sigint,
        )
        self._buffer = b""

    def line(self, timeout: float = 10.0) -> dict:
        """The next stdout line, as JSON."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no line within {timeout} s"
            readable, _, _ = select.select([self.proc.stdout], [], [], remaining)
            if readable:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                assert chunk, "stdout closed before a line came"
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def finish(self, timeout: float = 10.0) -> tuple[int, str, str]:
        """Wait for the exit (killing it after ``timeout``): the exit code, the stdout not read
        yet and stderr."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:  # say how the child was set up to take a signal
            raise AssertionError(f"no exit within {timeout} s; {_signal_state(self.proc.pid)}") from None
        finally:
            reap(self.proc)
            out, err = self._buffer, b""
            if self.proc.stdout is not None and not self.proc.stdout.closed:
                out += self.proc.stdout.read()
                self.proc.stdout.close()
            if self.proc.stderr is not None:
                err = self.proc.stderr.read()
                self.proc.stderr.close()
        return self.proc.returncode, out.decode(), err.decode()


def test_every_command_prints_the_api_reply_and_json_makes_it_one_line(hook_app: HookApp) -> None:
    api = hook_app.client()
    status = run_client(hook_app, "--json", "status")
    assert status.returncode == 0 and status.stdout.count("\n") == 1, status.stdout
    assert set(json.loads(status.stdout)) == set(api.status())
    assert run_client(hook_app, "get", "temperature").stdout == (
        '{\n  "field": "temperature",\n  "value": 0.0\n}\n'  # pretty by default
    )
    compact = run_client(hook_app, "get", "temperature", "--json")  # after the command works too
    assert compact.stdout == '{"field":"temperature","value":0.0}\n'
    pending = run_client(hook_app, "pending", "--json")
    assert pending.stdout == '{"pending":[]}\n' and json.loads(pending.stdout) == api.get("/api/pending")
    clicked = run_client(hook_app, "--json", "click", "btn_dismiss_notifications")
    assert clicked.stdout == '{"state":"done","error":null}\n'


def pending_dialog(app: HookApp, dialog) -> tuple[threading.Thread, list]:
    """A worker blocked on the clutch until ``dialog`` is decided (at most 120 s: a test that starts
    several CLI processes meanwhile must not see it time out on a loaded machine)."""
    outcome: list = []
    worker = threading.Thread(target=lambda: outcome.append(app.ctrl.request_approval(dialog, timeout=120)))
    worker.start()
    wait_until(lambda: app.ctrl.clutch.get(dialog.uid) is not None)
    return worker, outcome


def finish_dialog(dialog, worker: threading.Thread) -> None:
    if not dialog.done:
        dialog.resolve(False)
    worker.join(5)
    assert not worker.is_alive()


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_approve_with_edit_changes_what_the_dialog_resolves_with(
    hook_app: HookApp, tmp_path: Path, source: str
) -> None:
    dialog = ToolApprovalDialog("write_file", {"path": "a.py", "content": "x"}, "+x")
    worker, outcome = pending_dialog(hook_app, dialog)
    edits = json.dumps({"args": {"path": "b.py", "content": "y"}})
    try:
        if source == "file":
            edit_file = tmp_path / "edits.json"
            edit_file.write_text(edits)
            approved = run_client(
                hook_app, "approve", dialog.uid, "--edit", str(edit_file), "--reason", "safer"
            )
        else:
            approved = run_client(
                hook_app, "approve", dialog.uid, "--edit", "-", "--reason", "safer", stdin=edits
            )
        assert approved.returncode == 0 and approved.stderr == "", approved.stderr
        assert json.loads(approved.stdout) == {"resolved": True}
    finally:
        finish_dialog(dialog, worker)
    decision = outcome[0]
    assert decision.approved and decision.edited and decision.decider == "hook"
    assert decision.payload["args"] == {"path": "b.py", "content": "y"}  # what the tool runs with
    assert decision.reason == "safer"
    audit = hook_app.ctrl.session_log.read("audit")[-1]
    assert audit["id"] == dialog.uid and audit["reason"] == "safer" and audit["edited"] is True


def test_approve_refuses_an_edit_that_is_not_a_json_object(hook_app: HookApp, tmp_path: Path) -> None:
    dialog = ConfirmDialog("make", "/p")
    worker, outcome = pending_dialog(hook_app, dialog)
    array, broken, fixed = tmp_path / "array.json", tmp_path / "broken.json", tmp_path / "fixed.json"
    array.write_text('["make clean"]')
    broken.write_text('{"script": ')
    fixed.write_text('{"base_dir": "/elsewhere"}')
    try:
        missing = tmp_path / "missing.json"
        cases = [
            (str(array), None, f"error: --edit {array}: expected a JSON object"),
            (str(broken), None, f"error: --edit {broken}: not JSON"),
            (str(missing), None, f"error: --edit {missing}: cannot read it (No such file or directory)"),
            ("-", "42", "error: --edit <stdin>: expected a JSON object of the dialog's editable keys, "
                        "got a number"),
        ]  # fmt: skip
        for edit, stdin, line in cases:
            refused = run_client(hook_app, "approve", dialog.uid, "--edit", edit, stdin=stdin)
            assert refused.returncode == 2 and refused.stdout == "", refused
            assert len(refused.stderr.splitlines()) == 1 and refused.stderr.startswith(line), refused.stderr
        assert not dialog.done  # nothing was sent
        # A JSON object the API refuses (base_dir is not editable) is the API's error.
        server_refused = run_client(hook_app, "approve", dialog.uid, "--edit", str(fixed))
        assert server_refused.returncode == 1
        assert server_refused.stderr.startswith(
            "error: bad_request: body.payload: base_dir: cannot be edited"
        )
        assert not dialog.done
        usage = run_client(hook_app, "approve")
        assert usage.returncode == 2 and "the following arguments are required: id" in usage.stderr
    finally:
        finish_dialog(dialog, worker)
    assert outcome[0].decider == "gui"  # rejected by the cleanup, never by the refused commands


def test_reject_with_a_reason_and_abort(hook_app: HookApp) -> None:
    tool = ToolApprovalDialog("run_shell", {"command": "rm -rf /"}, "")
    worker, outcome = pending_dialog(hook_app, tool)
    try:
        rejected = run_client(hook_app, "reject", tool.uid, "--reason", "too dangerous")
        assert rejected.returncode == 0 and json.loads(rejected.stdout) == {"resolved": True}
    finally:
        finish_dialog(tool, worker)
    assert not outcome[0].approved and outcome[0].reason == "too dangerous" and not outcome[0].abort
    again = run_client(hook_app, "reject", tool.uid)
    assert (
        again.returncode == 1
        and again.stderr == f"error: conflict: dialog {tool.uid!r} was already resolved\n"
    )

    spawn = MMASpawnApprovalDialog("T1", "Tier 3", "do it", "ctx")
    worker, outcome = pending_dialog(hook_app, spawn)
    try:
        assert run_client(hook_app, "reject", spawn.uid, "--abort").returncode == 0
    finally:
        finish_dialog(spawn, worker)
    assert outcome[0].abort is True and outcome[0].reason == ""


EVENT_KEYS = {"seq", "ts", "type", "payload"}


def test_events_prints_json_lines_filtered_by_type(hook_app: HookApp) -> None:
    ctrl = hook_app.ctrl
    start = ctrl.journal.last_seq
    seqs = [ctrl.publish("comms" if i % 2 else "notification", {"n": i}) for i in range(5)]
    listed = run_client(hook_app, "events", "--since", str(start))
    assert listed.returncode == 0 and listed.stderr == ""
    events = [json.loads(line) for line in listed.stdout.splitlines()]
    assert all(set(e) == EVENT_KEYS for e in events)
    assert [(e["seq"], e["payload"].get("n")) for e in events] == [(s, i) for i, s in enumerate(seqs)]
    assert events == hook_app.client().read_events(start)["events"]  # the API's shape, one per line

    only = run_client(hook_app, "events", "--since", str(start), "--type", "comms")
    assert [json.loads(line)["payload"]["n"] for line in only.stdout.splitlines()] == [1, 3]
    both = run_client(hook_app, "events", "--since", str(start), "--type", "comms", "--type", "notification")
    assert len(both.stdout.splitlines()) == 5
    assert run_client(hook_app, "events", "--since", str(seqs[-1])).stdout == ""  # nothing newer

    everything = run_client(hook_app, "events")  # since 0: from the first event of the run
    assert [json.loads(line)["seq"] for line in everything.stdout.splitlines()][-5:] == seqs

    lost = 50  # more than the journal keeps (20,000): the CLI reads page by page and says what was lost
    for i in range(20_000 + lost):
        ctrl.publish("comms" if i % 1000 else "notification", {"n": i})
    paged = run_client(hook_app, "events", "--since", str(seqs[-1]), "--type", "notification")
    assert paged.returncode == 0
    kept = [json.loads(line)["payload"]["n"] for line in paged.stdout.splitlines()]
    assert kept == list(range(1000, 20_000 + lost, 1000))  # n=0 was lost
    assert paged.stderr == f"warning: {lost} events were lost (the buffer overflowed)\n"

    typo = run_client(hook_app, "events", "--type", "respnse")
    assert typo.returncode == 2 and typo.stdout == ""
    assert typo.stderr.startswith("error: --type: unknown event type respnse; known: ai_status, response")


def test_events_follow_prints_new_events_until_the_server_goes_away(hook_app_factory) -> None:
    app = hook_app_factory()
    start = app.ctrl.journal.last_seq
    follower = FollowedClient(app, "events", "--follow", "--since", str(start), "--type", "comms")
    try:
        app.ctrl.publish("comms", {"n": 1})
        assert follower.line()["payload"] == {"n": 1}
        app.ctrl.publish("notification", {"level": "info", "message": "skipped"})
        time.sleep(0.3)  # the follower is now waiting in a long poll
        app.ctrl.publish("comms", {"n": 2})
        event = follower.line()
        assert event["payload"] == {"n": 2} and set(event) == EVENT_KEYS
        assert app.server.stop() == []
    finally:
        code, out, err = follower.finish()
    assert (code, out) == (1, ""), err
    assert len(err.splitlines()) == 1 and err.startswith("error: GET http://127.0.0.1:"), err


def test_events_follow_ends_quietly_on_ctrl_c_and_when_the_reader_goes(hook_app: HookApp) -> None:
    ctrl = hook_app.ctrl
    follower = FollowedClient(hook_app, "events", "--follow", "--since", str(ctrl.journal.last_seq))
    try:
        ctrl.publish("comms", {"n": 1})
        assert follower.line()["payload"] == {"n": 1}
        follower.proc.send_signal(signal.SIGINT)
    finally:
        code, out, err = follower.finish()
    assert (code, out, err) == (0, "", "")  # no traceback

    reader = FollowedClient(hook_app, "events", "--follow", "--since", str(ctrl.journal.last_seq))
    try:
        ctrl.publish("comms", {"n": 2})
        assert reader.line()["payload"] == {"n": 2}
        assert reader.proc.stdout is not None
        reader.proc.stdout.close()  # like `events --follow | head -1`
        ctrl.publish("comms", {"n": 3})
    finally:
        code, _, err = reader.finish()
    assert (code, err) == (0, "")


def task_failed(result: subprocess.CompletedProcess[str], message: str) -> None:
    """The command's task ended in error: exit 1, its status on stdout, one error line."""
    assert result.returncode == 1, result
    status = json.loads(result.stdout)
    assert status["state"] == "error" and message in status["error"], status
    assert re.fullmatch(r"error: task \S+ failed: .*\n", result.stderr), result.stderr
    assert message in result.stderr


def test_every_mma_command_in_the_initial_state(hook_app: HookApp) -> None:
    status = run_client(hook_app, "mma", "status")
    assert status.returncode == 0
    assert json.loads(status.stdout) == hook_app.client().mma_status()
    assert json.loads(status.stdout)["status"] == "idle"

    task_failed(run_client(hook_app, "mma", "plan"), "the epic is empty: set mma_epic_input first")
    task_failed(run_client(hook_app, "mma", "plan", "--epic", "Build a login page"), "needs an AI client")
    assert hook_app.client().get_value("mma_epic_input") == "Build a login page"  # --epic set it first
    task_failed(run_client(hook_app, "mma", "accept"), "there are no proposed tracks to accept")
    task_failed(run_client(hook_app, "mma", "accept", "0", "2"), "there are no proposed tracks to accept")
    task_failed(run_client(hook_app, "mma", "start"), "there are no planned tracks")
    task_failed(run_client(hook_app, "mma", "start", "track-x"), "there are no planned tracks")
    task_failed(run_client(hook_app, "mma", "pause"), "no track is running to pause")
    task_failed(run_client(hook_app, "mma", "resume"), "no track has run yet")
    task_failed(run_client(hook_app, "mma", "abort"), "no track is running to abort")

    bad_index = run_client(hook_app, "mma", "accept", "first")
    assert bad_index.returncode == 2 and "invalid int value: 'first'" in bad_index.stderr
    unknown = run_client(hook_app, "mma", "replan")
    assert unknown.returncode == 2 and "invalid choice: 'replan'" in unknown.stderr


def test_mma_commands_plan_accept_start_pause_resume_and_abort_a_track(hook_app_factory) -> None:
    done = {"state": "done", "error": None}
    with OpenAIFake() as fake:
        app, api = deepseek_app(hook_app_factory, fake.base_url)
        fake.push(
            Reply("```json\n" + json.dumps(PLAN) + "\n```"),  # Tier 1
            Reply(json.dumps(TICKETS)),  # Tier 2
            Reply("Done: the form is written."),  # Tier 3, ticket a
        )
        planned = run_client(app, "mma", "plan", "--epic", "Build a login page")
        assert planned.returncode == 0 and json.loads(planned.stdout) == done, planned.stderr
        api.wait_for_value("proposed_tracks", lambda v: len(v) == 1, timeout=30)
        api.wait_for_value("mma_status", lambda v: v == "idle", timeout=30)
        status = json.loads(run_client(app, "mma", "status").stdout)
        assert [t["title"] for t in status["proposed_tracks"]] == ["Core"]

        assert json.loads(run_client(app, "mma", "accept", "0").stdout) == done
        tracks = api.wait_for_value(
            "mma_tracks", lambda v: len(v) == 1 and v[0]["ticket_count"] == 2, timeout=30
        )
        api.wait_for_value("mma_status", lambda v: v == "idle", timeout=30)

        assert json.loads(run_client(app, "mma", "start", tracks[0]["id"]).stdout) == done
        wait_until(lambda: [d["kind"] for d in api.pending()] == ["mma_spawn"], timeout=30)  # ticket a waits
        for command, status_after in (("pause", "paused"), ("resume", "running"), ("abort", "aborted")):
            assert json.loads(run_client(app, "mma", command).stdout) == done, command
            api.wait_for_value("mma_status", lambda v, want=status_after: v == want, timeout=10)
        wait_until(lambda: not app.ctrl.mma.running(), timeout=30)  # type: ignore[attr-defined]
        assert api.pending() == []  # the abort rejected the waiting spawn
        final = json.loads(run_client(app, "mma", "status").stdout)
        assert final["active_track"]["id"] == tracks[0]["id"]
        assert "a" not in [t["id"] for t in final["tickets"] if t["status"] == "completed"]


def test_send_exit_codes_for_done_error_and_cancelled(hook_app_factory) -> None:
    backend = FakeBackend(reply="pong")
    app = hook_app_factory(backend=backend)

    sent = run_client(app, "send", "ping")
    assert sent.returncode == 0 and sent.stderr == ""
    reply = json.loads(sent.stdout)
    request_id = reply["request_id"]
    assert reply == {"request_id": request_id, **app.client().request_status(request_id)}  # the API's shape
    assert (reply["state"], reply["response"], reply["error"]) == ("done", "pong", None)

    backend.fail = True
    failed = run_client(app, "send", "ping again")
    assert failed.returncode == 1
    status = json.loads(failed.stdout)  # still printed
    assert status["state"] == "error" and "fake provider is down" in status["error"]
    assert failed.stderr == f"error: request {status['request_id']} failed: {status['error']}\n"

    backend.fail, backend.gate = False, threading.Event()
    sender = FollowedClient(app, "send", "think hard")
    try:
        wait_until(lambda: len(backend.calls) == 3, timeout=10)  # the provider is working on it
        app.client().wait_for_task(app.client().click("btn_cancel_request"))
        code, out, err = sender.finish(timeout=15)
    finally:
        backend.gate.set()
    assert (code, err) == (3, "")
    cancelled = json.loads(out)
    assert cancelled["state"] == "cancelled" and cancelled["response"].startswith("half an ans")


def test_cancel_waits_until_the_request_is_cancelled(hook_app_factory) -> None:
    backend = FakeBackend(gate=threading.Event())
    app = hook_app_factory(backend=backend)
    try:
        queued = run_client(app, "send", "--no-wait", "think hard")
        assert queued.returncode == 0
        request_id = json.loads(queued.stdout)["request_id"]
        assert set(json.loads(queued.stdout)) == {"request_id"}
        wait_until(lambda: len(backend.calls) == 1, timeout=10)

        cancelled = run_client(app, "cancel", request_id)
        assert cancelled.returncode == 0 and cancelled.stderr == "", cancelled.stderr
        final = json.loads(cancelled.stdout)
        assert final["request_id"] == request_id and final["state"] == "cancelled"
        assert final["response"].startswith("half an ans")
        assert "[cut: stopped by the user]" in final["response"]
        assert final == {"request_id": request_id, **app.client().request_status(request_id)}

        again = run_client(app, "cancel", request_id)
        assert again.returncode == 1 and again.stderr.startswith("error: conflict: ")
        unknown = run_client(app, "cancel", "no-such-request")
        assert unknown.returncode == 1 and unknown.stderr.startswith("error: not_found: no request")

        second = json.loads(run_client(app, "send", "--no-wait", "again").stdout)["request_id"]
        wait_until(lambda: len(backend.calls) == 2, timeout=10)
        at_once = run_client(app, "cancel", "--no-wait", second)
        assert at_once.returncode == 0
        assert json.loads(at_once.stdout) == {"request_id": second, "state": "cancelling"}
        assert app.client().wait_for_request(second, timeout=10)["state"] == "cancelled"
    finally:
        backend.gate.set()


def test_ctrl_c_while_send_waits_is_exit_130_without_a_traceback(hook_app_factory) -> None:
    backend = FakeBackend(gate=threading.Event())
    app = hook_app_factory(backend=backend)
    sender = FollowedClient(app, "send", "think hard")
    try:
        wait_until(lambda: len(backend.calls) == 1, timeout=10)
        sender.proc.send_signal(signal.SIGINT)
        code, out, err = sender.finish()
        assert (code, out, err) == (130, "", "interrupted\n")
    finally:
        backend.gate.set()
    app.client().wait_for_value("ai_status", lambda v: v == "done")  # only the wait was stopped
