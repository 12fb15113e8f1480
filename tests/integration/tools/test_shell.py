"""run_shell with real processes: output, environment, audit copy, timeouts and process groups."""

from __future__ import annotations

import os
import shutil
import stat
import sys
import time
from pathlib import Path

import pytest

from manual_slop.tools import ExecutionContext, ToolCall, ToolStatus, default_registry
from manual_slop.tools.shell import scrubbed_environment

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")


class ScriptLog:
    """Stands in for SessionLog.save_script: saves into a folder and remembers the order."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir()
        self.saved: list[Path] = []

    def __call__(self, text: str, suffix: str) -> Path:
        target = self.folder / f"{len(self.saved) + 1:04d}{suffix}"
        target.write_text(text)
        self.saved.append(target)
        return target


@pytest.fixture
def scripts(tmp_path: Path) -> ScriptLog:
    return ScriptLog(tmp_path / "scripts")


@pytest.fixture
def ctx(project: Path, approver, scripts: ScriptLog) -> ExecutionContext:
    return ExecutionContext.for_directory(project, pre_tool_callback=approver, save_script=scripts)


def shell(ctx: ExecutionContext, script: str, timeout: float | None = None):
    if timeout is not None:
        ctx.timeouts["run_shell"] = timeout
    return default_registry(with_powershell=False).execute(ToolCall.new("run_shell", {"script": script}), ctx)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_dead(pids: list[int], timeout: float = 5.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def test_output_exit_code_and_working_directory(ctx: ExecutionContext, project: Path, approver) -> None:
    result = shell(ctx, "pwd; echo to-err >&2; exit 3")
    assert result.ok
    assert result.content == f"exit code: 3\n--- stdout ---\n{project.resolve()}\n--- stderr ---\nto-err"
    assert approver.requests[0].preview == "pwd; echo to-err >&2; exit 3"
    assert result.metadata["execution_ms"] > 0


def test_the_environment_has_no_credentials(ctx: ExecutionContext, monkeypatch) -> None:
    secrets = {
        "ANTHROPIC_API_KEY": "sk-ant-1",
        "GEMINI_API_KEY": "g-2",
        "OPENAI_API_KEY": "o-3",
        "SLOP_HOOK_TOKEN": "hook-4",
        "GITHUB_TOKEN": "gh-5",
        "AWS_SECRET_ACCESS_KEY": "aws-6",
        "DB_PASSWORD": "pw-7",
        "Custom_ApiKey": "c-8",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    content = shell(ctx, "env").content
    for name, value in secrets.items():
        assert name not in content and value not in content
    assert "HARMLESS_SETTING=visible" in content
    assert scrubbed_environment({"X_TOKEN": "1", "PATH": "/bin"}) == {
        "PATH": "/bin",
        "PAGER": "cat",
        "GIT_PAGER": "cat",
        "GIT_TERMINAL_PROMPT": "0",
    }


def test_the_script_is_saved_before_it_runs(ctx: ExecutionContext, scripts: ScriptLog) -> None:
    result = shell(ctx, f"ls {scripts.folder}; cat {scripts.folder}/0001.sh")
    assert result.content.splitlines()[2:4] == [
        "0001.sh",
        f"ls {scripts.folder}; cat {scripts.folder}/0001.sh",
    ]


def test_a_script_that_cannot_be_saved_does_not_run(project: Path, approver) -> None:
    def broken(text: str, suffix: str) -> Path:
        raise OSError("disk full")

    ctx = ExecutionContext.for_directory(project, pre_tool_callback=approver, save_script=broken)
    result = shell(ctx, "touch ran.marker")
    assert result.status is ToolStatus.ERROR and "could not be saved" in result.content
    assert not (project / "ran.marker").exists()


def test_stdin_is_empty(ctx: ExecutionContext) -> None:
    assert "got:[]" in shell(ctx, 'read -r line; echo "got:[$line]"').content


def test_a_timeout_kills_the_whole_process_group(ctx: ExecutionContext, project: Path) -> None:
    script = (
        "sleep 300 & echo $! > pids\n"
        "(sleep 300 & echo $! >> pids; wait) & echo $! >> pids\n"
        "echo started; sleep 300\n"
    )
    started = time.monotonic()
    result = shell(ctx, script, timeout=1.0)
    elapsed = time.monotonic() - started
    assert result.status is ToolStatus.TIMEOUT
    assert "its whole process group was killed" in result.content
    assert "--- stdout ---\nstarted" in result.content and "exit code: none (killed)" in result.content
    assert elapsed < 1.0 + 1.0
    pids = [int(p) for p in (project / "pids").read_text().split()]
    assert len(pids) == 3
    assert wait_dead(pids) == []


def test_background_children_holding_the_output_are_stopped(ctx: ExecutionContext, project: Path) -> None:
    result = shell(ctx, "sleep 300 & echo $! > bg.pid; echo done")
    assert result.ok and "exit code: 0" in result.content
    assert "background processes still holding the output were stopped" in result.content
    assert wait_dead([int((project / "bg.pid").read_text())]) == []


def test_detached_background_work_survives(ctx: ExecutionContext, project: Path) -> None:
    result = shell(ctx, "(sleep 0.3; echo late > late.txt) > /dev/null 2>&1 & echo quick")
    assert result.ok and "stopped" not in result.content
    deadline = time.monotonic() + 5
    while not (project / "late.txt").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (project / "late.txt").read_text() == "late\n"


def test_a_shell_that_closes_its_output_and_keeps_running_times_out(ctx: ExecutionContext) -> None:
    result = shell(ctx, "echo before; exec >&- 2>&-; sleep 300", timeout=1.0)
    assert result.status is ToolStatus.TIMEOUT and "--- stdout ---\nbefore" in result.content


def test_huge_output_is_bounded(ctx: ExecutionContext) -> None:
    result = shell(ctx, "head -c 3000000 /dev/zero | tr '\\0' 'x'")
    assert result.ok and result.metadata["truncated"] is True
    assert result.metadata["bytes"] < 1_100_000  # the runner kept 1 MiB of stdout
    assert "[output truncated" in result.content


def test_pwsh_when_configured_but_missing(project: Path, approver, scripts: ScriptLog) -> None:
    if shutil.which("pwsh"):
        pytest.skip("PowerShell is installed here")
    ctx = ExecutionContext.for_directory(
        project, pre_tool_callback=approver, save_script=scripts, shell_program="pwsh"
    )
    result = shell(ctx, "Get-Date")
    assert result.status is ToolStatus.ERROR
    assert (
        result.content
        == 'Unavailable: pwsh is not installed; install PowerShell or set [shell] program = "bash"'
    )
    assert scripts.saved == []


def test_run_powershell_is_registered_when_powershell_exists(
    tmp_path: Path, project: Path, approver, monkeypatch
) -> None:
    # A stand-in pwsh on PATH that reports how it was called (the real one is not installable here).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "pwsh"
    fake.write_text('#!/bin/bash\nprintf "%s|" "$@"\necho\necho "cwd=$PWD"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    registry = default_registry()
    assert "run_powershell" in registry
    ctx = ExecutionContext.for_directory(project, pre_tool_callback=approver, shell_program="pwsh")
    for tool in ("run_powershell", "run_shell"):
        result = registry.execute(ToolCall.new(tool, {"script": "Write-Output 'hi'"}), ctx)
        assert result.content.splitlines()[2:4] == [
            "-NoProfile|-NonInteractive|-Command|Write-Output 'hi'|",
            f"cwd={project.resolve()}",
        ], tool
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert "run_powershell" not in default_registry()
