"""docs/guide_governance.md, "Loop guards" and "Recovery": the tables are the code's."""

from __future__ import annotations

from pathlib import Path

from manual_slop.ai.loop_guard import GuardKind
from manual_slop.governance.severity import TABLE, Strategy
from tests.helpers import markdown_tables

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guide_governance.md"


def tables(heading: str) -> list[list[list[str]]]:
    """The tables of the section ``heading``: rows of raw cells (backticks kept), no header."""
    return markdown_tables(GUIDE, heading, lambda text: text)


def test_the_guard_kind_table_is_every_guard_kind() -> None:
    kinds = [row[0] for row in tables("## Loop guards")[1]]
    assert kinds == [f"`{k}`" for k in GuardKind]


def test_the_failure_table_is_the_code_table() -> None:
    modules, failures, strategies = tables("## Recovery")
    assert [row[0] for row in modules] == ["`governance/severity.py`", "`governance/recovery.py`"]
    documented = {row[0]: (row[1], row[2]) for row in failures}
    assert list(documented) == [f"`{c}`" for c in TABLE]
    for failure, row in TABLE.items():
        ladder = ", ".join(f"`{s}`" for s in row.strategies) or "—"
        assert documented[f"`{failure}`"] == (f"`{row.severity}`", ladder), failure
    assert [row[0] for row in strategies] == [f"`{s}`" for s in Strategy]
