"""docs/guide_simulations.md: its tables must match the harness they describe."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from simulation import BaseSimulation
from simulation.provider import TURN_KEYS
from simulation.runner import SCENARIOS, _parser

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guide_simulations.md"


def table(heading: str) -> list[list[str]]:
    """The rows (cells) of the first table after ``heading``, header and rule skipped."""
    text = GUIDE.read_text(encoding="utf-8")
    lines = text[text.index(heading + "\n") :].splitlines()[1:]
    rows: list[list[str]] = []
    for line in lines:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
        elif rows:
            break
    return rows[2:]


def names(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def test_the_scenario_table_lists_every_scenario_and_its_turn_file() -> None:
    rows = table("## The scenarios")
    assert [names(row[0])[0] for row in rows] == [f"sim_{name}" for name in SCENARIOS]
    for row in rows:
        cls = SCENARIOS[names(row[0])[0].removeprefix("sim_")]
        assert (names(row[1]) or [None])[0] == cls.turn_file, cls.name
        assert len(row[2]) > 100, f"{cls.name}: say what the user does and what is checked"


def test_the_base_simulation_table_matches_its_members() -> None:
    documented = {name for row in table("### BaseSimulation") for name in names(row[0])}
    documented = {re.sub(r"\(.*\)$", "", name) for name in documented}
    public = {
        name
        for klass in BaseSimulation.__mro__
        if klass is not object
        for name, _ in inspect.getmembers(klass)
        if not name.startswith("_") and name in vars(klass)
    }
    assert public - documented == set(), "undocumented members"
    instance = BaseSimulation()
    missing = {name for name in documented if name not in public and name not in vars(instance)}
    assert missing == set(), "documented members that do not exist"


def test_the_turn_key_table_matches_the_parser() -> None:
    assert sorted(names(row[0])[0] for row in table("### Turn files")) == sorted(TURN_KEYS)


def test_the_option_table_matches_the_command_line() -> None:
    documented = [names(row[0])[0] for row in table("## Running")]
    options = [
        action.option_strings[0] if action.option_strings else "NAME"
        for action in _parser()._actions
        if action.dest != "help"
    ]
    assert documented == options
