"""docs/guide_plan.md describes what is built: its tables match the code they name."""

from __future__ import annotations

import re
from pathlib import Path

from manual_slop.config import PROJECT_SCHEMA
from manual_slop.plan.engines import ENGINE_NAMES
from manual_slop.plan.model import PlanStatus, SubtaskStatus
from manual_slop.plan.validate import RULES
from manual_slop.slash_commands import COMMANDS
from manual_slop.token_profiles import BALANCED, EXTREME, PHASES
from tests.helpers import markdown_tables

ROOT = Path(__file__).resolve().parents[3]
GUIDE = ROOT / "docs" / "guide_plan.md"


def tables(heading: str) -> list[list[list[str]]]:
    """The tables between ``heading`` and the next heading of the same or a higher level."""
    return markdown_tables(GUIDE, heading)


def first_column(rows: list[list[str]]) -> list[str]:
    return [row[0] for row in rows]


def test_module_table_lists_every_plan_and_agents_module() -> None:
    documented = set(first_column(tables("# /plan: agents, engines, merge and judge")[0]))
    src = ROOT / "src" / "manual_slop"
    modules = {f"plan/{p.name}" for p in (src / "plan").glob("*.py")}
    modules |= {f"agents/{p.name}" for p in (src / "agents").glob("*.py")}
    modules -= {"plan/__init__.py", "agents/__init__.py"}
    assert documented == modules | {"token_profiles.py", "slash_commands.py"}


def test_commands_rules_statuses_and_engines_match_the_code() -> None:
    assert [row[0].split()[0] for row in tables("## Commands")[0]] == list(COMMANDS)
    assert first_column(tables("### Validation rules")[0]) == list(RULES)
    plan_statuses, subtask_statuses = tables("### Statuses")
    assert first_column(plan_statuses) == [str(s) for s in PlanStatus]
    assert first_column(subtask_statuses) == [str(s) for s in SubtaskStatus]
    assert first_column(tables("## Engines")[0]) == list(ENGINE_NAMES)


def test_token_profile_table_gives_the_real_limits() -> None:
    rows = tables("## Token profiles")[0]
    assert first_column(rows) == list(PHASES)
    for phase, balanced, extreme, _used_by in rows:
        assert (int(balanced), int(extreme)) == (BALANCED[phase], EXTREME[phase]), phase


def test_settings_table_gives_the_schema_defaults() -> None:
    for key, default, _meaning in tables("## Settings")[0]:
        if key.startswith(("plan.", "agents.")):
            expected = PROJECT_SCHEMA[key].default
            shown = default.strip("'")
            assert (float(shown) == expected) if isinstance(expected, float) else shown == str(expected), key


def test_hook_api_tables_match_the_routes_and_registries(make_controller) -> None:
    from manual_slop.hooks.api import HookApi

    ctrl = make_controller()
    routes = {(r.method, r.path) for r in HookApi(ctrl).routes()}
    endpoints, names = tables("## Hook API")
    documented = {(row[0], row[1]) for row in endpoints}
    assert documented <= routes
    plan_or_agents = {
        (m, p) for m, p in routes if p.startswith(("/api/plan", "/api/agents")) or "depends_on" in p
    }
    assert plan_or_agents <= documented
    known = set(ctrl.fields.names()) | set(ctrl.actions.names())
    for row in names:
        for name in re.findall(r"[a-z_]+", row[0]):
            assert name in known, f"{name} is in the guide but not a field or action"
