"""Scripted user workflows that drive a running Manual Slop over its Hook API.

``python -m simulation <name|all>`` launches the app (or attaches to one with ``--url``)
and runs scenarios; each acts as a user would — types, clicks, approves — and checks
what the user would see. See docs/guide_simulations.md.

- :mod:`simulation.sim_base`: :class:`BaseSimulation`, the timeline and the verdicts;
- :mod:`simulation.user_agent`: the simulated user's pace;
- :mod:`simulation.launcher`: the app as a subprocess, stopped cleanly;
- :mod:`simulation.provider`: the scripted fake providers and turn files;
- :mod:`simulation.runner`: the scenario registry and the command line;
- ``simulation/sim_*.py``: the scenarios; ``simulation/turns/*.toml``: their model turns.
"""

from __future__ import annotations

from simulation.errors import (
    AttachedOnlyLimit,
    LaunchError,
    ScenarioError,
    SimulationError,
    TurnScriptError,
    VerificationFailed,
)
from simulation.launcher import AppSpec, LaunchedApp, LaunchMode
from simulation.provider import ScriptedProvider, TurnScript, parse_turn
from simulation.sim_base import BaseSimulation, Check, SimulationResult, Step, Target, Verdict
from simulation.user_agent import Pace, UserAgent

__all__ = [
    "AppSpec",
    "AttachedOnlyLimit",
    "BaseSimulation",
    "Check",
    "LaunchError",
    "LaunchMode",
    "LaunchedApp",
    "Pace",
    "ScenarioError",
    "ScriptedProvider",
    "SimulationError",
    "SimulationResult",
    "Step",
    "Target",
    "TurnScript",
    "TurnScriptError",
    "UserAgent",
    "Verdict",
    "VerificationFailed",
    "parse_turn",
]
