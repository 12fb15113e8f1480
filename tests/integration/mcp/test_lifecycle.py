"""An external server's life in the app: it starts with the first send (not with the app), a
program that cannot start is reported as failed with the reason, and shutdown leaves no child
process -- also when a server ignores both the closing of its stdin and SIGTERM."""

from __future__ import annotations

import shlex
import time
from pathlib import Path

import psutil

from manual_slop.ai import AIClient
from manual_slop.controller import AppController
from tests.helpers import pump_until
from tests.integration.mcp.conftest import FILESYSTEM, child_pids, children, toml_servers


def server(ctrl: AppController, name: str) -> dict:
    ctrl.run_frame()
    return next(s for s in ctrl.fields.get("mcp_servers") if s["name"] == name)


def test_shutdown_leaves_no_child_even_of_a_server_that_ignores_stdin_close_and_sigterm(
    make_controller, app_dir: Path, mcp_programs: None
) -> None:
    # the real filesystem server under a shell that ignores SIGTERM and outlives it: only the
    # kill of the whole tree ends it
    stubborn = f"trap '' TERM; {shlex.quote(str(FILESYSTEM))} {shlex.quote(str(app_dir))}; sleep 60"
    servers = {
        "fs": {"command": str(FILESYSTEM), "args": [str(app_dir)]},
        "stubborn": {"command": "sh", "args": ["-c", stubborn]},
    }
    (app_dir / "config.toml").write_text(toml_servers(servers))
    before = child_pids()
    ctrl = make_controller(backend=AIClient())
    assert server(ctrl, "fs")["state"] == "stopped" and children(before) == []  # lazy: nothing runs yet
    ctrl.mcp.prepare()  # what a send does first
    pump_until(ctrl, lambda: all(server(ctrl, n)["state"] == "running" for n in servers), timeout=20)
    pids = [server(ctrl, n)["pid"] for n in servers]
    assert (
        all(psutil.pid_exists(p) for p in pids)
        and "stubborn__read_text_file" in ctrl.backend.registry().names()
    )
    started = time.monotonic()
    ctrl.bind_main_thread()
    ctrl.shutdown()
    assert children(before) == [], [p.cmdline() for p in children(before)]
    assert time.monotonic() - started < 10


def test_a_server_that_cannot_start_is_failed_with_the_reason(make_controller, app_dir: Path) -> None:
    missing = app_dir / "no-such-server"
    (app_dir / "config.toml").write_text(toml_servers({"ghost": {"command": str(missing)}}))
    ctrl = make_controller(backend=AIClient())
    ctrl.mcp.prepare(timeout=10)
    pump_until(ctrl, lambda: server(ctrl, "ghost")["state"] == "failed", timeout=10)
    ghost = server(ctrl, "ghost")
    assert "No such file or directory" in ghost["last_error"] and ghost["tools"] == []
    assert not any(name.startswith("ghost__") for name in ctrl.backend.registry().names())
