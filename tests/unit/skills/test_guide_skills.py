"""docs/guide_skills.md describes what is built: its tables are the loader's rules, the refusal
kinds, the modules and the skill endpoints."""

from __future__ import annotations

from pathlib import Path

from manual_slop.hooks.api import HookApi
from manual_slop.skills.loader import MAX_DESCRIPTION_CHARS, MAX_EXTRA_FILES, MAX_SKILL_BYTES, ProblemKind
from tests.helpers import markdown_tables

ROOT = Path(__file__).resolve().parents[3]
GUIDE = ROOT / "docs" / "guide_skills.md"


def tables(heading: str) -> list[list[list[str]]]:
    return markdown_tables(GUIDE, heading, lambda text: text.replace("`", ""))


def test_the_module_table_names_real_modules() -> None:
    modules = [row[0] for row in tables("# Skills: instructions the model loads when it needs them")[0]]
    for module in modules:
        assert (ROOT / "src" / "manual_slop" / module).is_file(), module
    package = {f"skills/{p.name}" for p in (ROOT / "src" / "manual_slop" / "skills").glob("*.py")}
    assert package - {"skills/__init__.py"} <= set(modules)


def test_the_format_tables_are_the_loaders_rules() -> None:
    fields, limits = tables("## The file format")
    assert [(row[0], row[1]) for row in fields] == [("name", "yes"), ("description", "yes")]
    assert "1-64 lowercase letters" in fields[0][2]
    assert f"{MAX_DESCRIPTION_CHARS:,} characters" in fields[1][2]
    assert [row[1] for row in limits] == [f"{MAX_SKILL_BYTES:,} bytes (256 KB)", str(MAX_EXTRA_FILES)]


def test_the_refusal_table_is_every_problem_kind() -> None:
    [kinds] = tables("## Invalid skills")
    assert [row[0] for row in kinds] == [str(kind) for kind in ProblemKind]
    assert all(row[1] for row in kinds)


def test_the_endpoint_table_is_the_skill_routes(make_controller) -> None:
    [endpoints] = tables("## Endpoints")
    routes = [r for r in HookApi(make_controller()).routes() if r.path.startswith("/api/skills")]
    assert [(row[0], row[1]) for row in endpoints] == [(r.method, r.path) for r in routes]
    assert len(routes) == 2
