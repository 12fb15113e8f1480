"""Every simulation scenario against a real headless app (launched as a subprocess),
sim_execution and sim_mma against the desktop app under Xvfb, a deliberately
misconfigured setup that each of five scenarios must catch, the command line, a run
attached to an app started beforehand (whose settings must come back), and a run
terminated midway (whose app must not outlive it)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from simulation import BaseSimulation, LaunchedApp, LaunchMode, Target
from simulation.launcher import AppSpec
from simulation.runner import SCENARIOS, main
from simulation.sim_execution import ExecutionSimulation
from simulation.sim_faults import FaultsSimulation
from simulation.sim_mma import MMASimulation
from simulation.sim_plan import PlanSimulation
from simulation.sim_tools import ToolsSimulation

from manual_slop.hooks import ApiHookClient
from tests.fakes import Reply

ROOT = Path(__file__).resolve().parents[1]


def run(cls: type[BaseSimulation], target: Target, workroot: Path):
    sim = cls(target, workroot=workroot)
    result = sim.execute()
    assert sim.app is None or not sim.app.running, "the launched app was left running"
    return result


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_passes_against_a_headless_app(name: str, tmp_path: Path) -> None:
    result = run(SCENARIOS[name], Target(), tmp_path)
    assert result.passed, result.report()
    assert len(result.checks) >= 20 and not result.failed_checks()
    assert result.steps[-1].phase == "teardown" and result.steps[-1].checks[-1].passed  # clean exit checked
    assert not any(tmp_path.iterdir()), "the work folder of a passing scenario is removed"


@pytest.mark.parametrize("name", ["execution", "mma"])
def test_scenario_passes_against_the_gui_app(name: str, display: str, tmp_path: Path) -> None:
    result = run(SCENARIOS[name], Target(launch=LaunchMode.GUI), tmp_path)
    assert result.passed, result.report()
    labels = [c.label for c in result.checks]
    assert "the app runs in gui mode" in labels and "the window is drawing frames" in labels


class FaultsThatNeverFail(FaultsSimulation):
    """A provider that never errors: each group of the turn file becomes its final answer alone."""

    def run(self) -> None:
        script = self.fake.script
        assert script is not None
        for group, turns in script.groups.items():
            last = turns[-1]
            script.groups[group] = [last if isinstance(last, Reply) else Reply("All fine.")]
        super().run()


class PlanRightFirstTime(PlanSimulation):
    """A planner whose first plan is already valid: the correction round never happens."""

    def run(self) -> None:
        script = self.fake.script
        assert script is not None
        script.groups["planner"] = script.groups["planner"][1:]
        super().run()


AUTO = {"approval": {"policy": "auto"}}
MMA_DIALOG_ORDER = (
    "each worker asked to start, to act in its scratch tree, then to land its patch; "
    "'validate' only after 'form' was done"
)


@pytest.mark.parametrize(
    ("cls", "overrides", "failed_check"),
    [
        (ExecutionSimulation, AUTO, "a confirm_script dialog asked for a decision"),
        (ToolsSimulation, AUTO, "a tool_approval dialog asked for a decision"),
        (MMASimulation, AUTO, MMA_DIALOG_ORDER),
        (FaultsThatNeverFail, {}, "the provider was called 2x"),
        (PlanRightFirstTime, {}, "the planner was asked twice: the goal, then the correction"),
    ],
    ids=[
        "execution-clutch-auto",
        "tools-clutch-auto",
        "mma-clutch-auto",
        "faults-provider-never-fails",
        "plan-never-corrected",
    ],
)
def test_a_deliberately_broken_setup_fails_the_scenario(
    cls: type[BaseSimulation], overrides: dict, failed_check: str, tmp_path: Path
) -> None:
    result = run(cls, Target(config_overrides=overrides), tmp_path)
    assert not result.passed, result.report()
    failed = [c.label for c in result.failed_checks()]
    assert failed == [failed_check], result.report()
    assert result.workdir and Path(result.workdir).is_dir(), "a failed scenario keeps its work folder"
    assert "FAILED" in result.report()


def test_command_line_runs_a_scenario_and_prints_its_verdicts(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    done = subprocess.run(
        [sys.executable, "-m", "simulation", "sim_execution", "--workdir", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "== sim_execution:" in out and "pass  data.txt is intact" in out
    assert "PASSED  sim_execution" in out and "simulations: 1 of 1 scenarios passed" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nosuch"], "no scenario named 'nosuch'; scenarios: all, context"),
        (["tools", "--url", "http://127.0.0.1:1", "--launch", "headless"], "--url attaches to a running app"),
        ([], "name a scenario or 'all'"),
    ],
)
def test_command_line_refuses_bad_usage(argv: list[str], message: str, capsys: pytest.CaptureFixture) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_list_names_every_scenario(capsys: pytest.CaptureFixture) -> None:
    assert main(["--list"]) == 0
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines()] == [f"sim_{name}" for name in SCENARIOS]


def test_attached_runs_leave_the_app_as_they_found_it(tmp_path: Path) -> None:
    app = LaunchedApp(tmp_path / "app", AppSpec(token="s3cret-token"), LaunchMode.HEADLESS)
    url = app.start()
    try:
        with ApiHookClient(url, "s3cret-token") as client:
            before = client.state()
            wrong = run(ToolsSimulation, Target.attach(url, "wrong-token"), tmp_path / "runs")
            assert not wrong.passed and "Unauthorized" in wrong.error
            for cls in SCENARIOS.values():
                result = run(cls, Target.attach(url, "s3cret-token"), tmp_path / "runs")
                assert result.passed, result.report()
                assert result.notes or cls.name not in ("context", "ai_settings", "discussion")
            after = client.state()
        for field in (
            "current_provider",
            "current_model",
            "provider_base_url",
            "files_base_dir",
            "project_files",
            "files_exclude",
            "approval_policy",
            "active_discussion",
            "discussions",
            "context_presets",
            "context_strategy",
            "pending_dialogs",
            "system_prompt",
            "temperature",
            "top_p",
            "max_tokens",
            "proposed_tracks",
            "mma_epic_input",
            "plan_judge",
            "token_profile",
            "agents",
        ):
            assert after[field] == before[field], field
        # No action deletes a track: the MMA run's track and the plan's stay listed (their folders
        # went with the runs).
        assert [t["title"] for t in after["mma_tracks"]] == [t["title"] for t in before["mma_tracks"]] + [
            "Login form",
            "Build a tiny REST API",
        ]
    finally:
        app.stop()
    assert "stopped cleanly" in app.stderr_text()


@pytest.mark.parametrize("moment", ["starting", "running"])
def test_a_terminated_run_still_stops_its_app(moment: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    runner = subprocess.Popen(
        [sys.executable, "-m", "simulation", "ai_settings", "--workdir", str(tmp_path)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def ready(moment: str) -> bool:
        if not list(tmp_path.glob("sim_ai_settings_*/logs/sessions/*/session.json")):
            return False
        outs = list(tmp_path.glob("sim_ai_settings_*/app-1.stdout"))
        return moment == "starting" or bool(outs and "listening" in outs[0].read_text())

    try:
        deadline = time.monotonic() + 60
        while not ready(moment):  # the app has its session folder; "running": it listens too
            assert time.monotonic() < deadline and runner.poll() is None, "the app never started"
            time.sleep(0.05)
        sessions = list(tmp_path.glob("sim_ai_settings_*/logs/sessions/*/session.json"))
        app_pid = json.loads(sessions[0].read_text())["pid"]
        runner.send_signal(signal.SIGTERM)
        out, err = runner.communicate(timeout=60)
        alive = _alive(app_pid)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait(10)
        for session in tmp_path.glob("sim_ai_settings_*/logs/sessions/*/session.json"):
            pid = json.loads(session.read_text())["pid"]
            if _alive(pid):  # the harness failed: do not leave its app behind for other tests
                os.kill(pid, signal.SIGKILL)
    assert runner.returncode == 128 + signal.SIGTERM, out + err
    assert "interrupted; the running scenario's app was stopped" in err
    assert not alive, "the app outlived the harness"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
