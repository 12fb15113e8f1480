"""docs/guide_reliability.md, "The suites": one row per tests/reliability/test_r*.py suite."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import markdown_tables

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guide_reliability.md"


def test_the_suite_table_lists_exactly_the_reliability_suites() -> None:
    (rows,) = markdown_tables(GUIDE, "## The suites")
    documented = [row[0] for row in rows]
    present = sorted(p.name for p in (ROOT / "tests" / "reliability").glob("test_r*.py"))
    assert sorted(documented) == present
    assert len(set(documented)) == len(documented), "a suite is listed twice"
    for row in rows:
        assert len(row) == 4 and all(row), f"{row[0]}: every column (what it proves, fast, long) is filled"
