"""Run scenarios and report: ``python -m simulation <name|all> [--url URL] [--token T]
[--launch headless|gui] [--pace instant|human] [--keep] [--workdir DIR] [--list]``.

Without ``--url`` each scenario launches its own app (headless by default; ``--launch
gui`` opens the window with ``--enable-test-hooks``, under a private Xvfb when no
``DISPLAY`` is set) and stops it cleanly afterwards. With ``--url`` every scenario runs
against that running app, one after another; the settings they change are put back.

Prints each scenario's timeline and verdicts, then a summary. Exit code 0 when every
scenario passed, 1 when any failed, 2 for bad usage.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from simulation.errors import LaunchError, ScenarioError
from simulation.launcher import LaunchMode
from simulation.sim_ai_settings import AISettingsSimulation
from simulation.sim_base import BaseSimulation, SimulationResult, Target
from simulation.sim_context import ContextSimulation
from simulation.sim_discussion import DiscussionSimulation
from simulation.sim_execution import ExecutionSimulation
from simulation.sim_faults import FaultsSimulation
from simulation.sim_mma import MMASimulation
from simulation.sim_plan import PlanSimulation
from simulation.sim_tools import ToolsSimulation
from simulation.user_agent import Pace

__all__ = ["SCENARIOS", "main", "resolve", "run_simulations", "summary"]

SCENARIOS: dict[str, type[BaseSimulation]] = {
    cls.name: cls
    for cls in (
        ContextSimulation,
        AISettingsSimulation,
        ToolsSimulation,
        ExecutionSimulation,
        DiscussionSimulation,
        MMASimulation,
        PlanSimulation,
        FaultsSimulation,
    )
}


def resolve(names: Sequence[str]) -> list[type[BaseSimulation]]:
    """Scenario classes for ``names`` (``all``, ``tools`` or ``sim_tools``), in the order given."""
    chosen: list[type[BaseSimulation]] = []
    for raw in names:
        if raw == "all":
            chosen.extend(SCENARIOS.values())
            continue
        name = raw.removeprefix("sim_").removesuffix(".py")
        if name not in SCENARIOS:
            known = ", ".join(["all", *SCENARIOS])
            raise ScenarioError(f"no scenario named {raw!r}; scenarios: {known}")
        chosen.append(SCENARIOS[name])
    return list(dict.fromkeys(chosen))


def run_simulations(
    classes: Sequence[type[BaseSimulation]],
    target: Target,
    pace: Pace | None = None,
    workroot: Path | None = None,
    out: Callable[[str], None] = print,
) -> list[SimulationResult]:
    """Run each scenario (never in parallel) and print its report as it finishes."""
    results: list[SimulationResult] = []
    for cls in classes:
        result = cls(target, pace, workroot).execute()
        out(result.report())
        results.append(result)
    return results


def summary(results: Sequence[SimulationResult]) -> str:
    lines = ["== summary"]
    for result in results:
        checks = result.checks
        passed = sum(c.passed for c in checks)
        lines.append(
            f"  sim_{result.name:<14} {result.verdict.upper():<7} {passed:>3}/{len(checks):<3} checks "
            f"{result.duration_s:7.2f} s"
        )
        if result.error:
            lines.append(f"      {result.error.splitlines()[0]}")
    ok = sum(r.passed for r in results)
    total = sum(r.duration_s for r in results)
    lines.append(f"  simulations: {ok} of {len(results)} scenarios passed in {total:.1f} s")
    return "\n".join(lines)


@contextlib.contextmanager
def _display(mode: LaunchMode | None) -> Iterator[None]:
    """A private Xvfb for ``--launch gui`` when there is no display."""
    if mode is not LaunchMode.GUI or os.environ.get("DISPLAY"):
        yield
        return
    try:
        from tests.xvfb import xvfb_display
    except ImportError as exc:
        raise LaunchError("--launch gui without DISPLAY needs tests/xvfb.py (the GUI's test helper)") from exc
    with xvfb_display():
        yield


def _stop_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m simulation",
        description="Drive Manual Slop through scripted user workflows over its Hook API.",
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help="scenarios to run, or 'all'")
    parser.add_argument("--url", help="attach to a running app (e.g. http://127.0.0.1:8999)")
    parser.add_argument("--token", default=None, help="Hook API token (default: SLOP_HOOK_TOKEN)")
    parser.add_argument(
        "--launch",
        choices=[m.value for m in LaunchMode],
        default=None,
        help="launch the app for each scenario (default: headless; not with --url)",
    )
    parser.add_argument(
        "--pace", choices=["instant", "human"], default="instant", help="user speed (default instant)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the human pace's random pauses")
    parser.add_argument("--keep", action="store_true", help="keep each scenario's work folder")
    parser.add_argument("--workdir", type=Path, help="where work folders go (default: the temp folder)")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.list:
        for name, cls in SCENARIOS.items():
            print(f"sim_{name:<14} {cls.title}")
        return 0
    if not args.names:
        parser.print_usage(sys.stderr)
        print("python -m simulation: error: name a scenario or 'all' (--list shows them)", file=sys.stderr)
        return 2
    if args.url and args.launch:
        print(
            "python -m simulation: error: --url attaches to a running app; --launch starts one",
            file=sys.stderr,
        )
        return 2
    try:
        classes = resolve(args.names)
    except ScenarioError as exc:
        print(f"python -m simulation: error: {exc}", file=sys.stderr)
        return 2
    if args.token is not None:
        token = args.token
    else:  # an attached app's token comes from the environment (or its runtime file); a launched
        # app generates its own, which the client finds in the runtime file
        token = os.environ.get("SLOP_HOOK_TOKEN", "") if args.url else ""
    target = Target(
        url=args.url or "",
        launch=None if args.url else LaunchMode(args.launch or "headless"),
        token=token,
        keep_workdir=args.keep,
    )
    pace = Pace.human(args.seed) if args.pace == "human" else Pace.instant()
    signal.signal(signal.SIGTERM, _stop_on_sigterm)  # unwind, so each app is stopped cleanly
    try:
        with _display(target.launch):
            results = run_simulations(classes, target, pace, args.workdir)
    except LaunchError as exc:
        print(f"python -m simulation: error: {exc}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, SystemExit) as exc:
        code = exc.code if isinstance(exc, SystemExit) and isinstance(exc.code, int) else 130
        print("python -m simulation: interrupted; the running scenario's app was stopped", file=sys.stderr)
        return code
    print(summary(results))
    return 0 if all(r.passed for r in results) else 1
