"""docs/guide_governance.md, "Loop guards" and "Recovery": the tables are the code's."""

from __future__ import annotations

from pathlib import Path

from manual_slop.ai.loop_guard import GuardKind
from manual_slop.governance.severity import TABLE, Strategy

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guide_governance.md"


def tables(heading: str) -> list[list[list[str]]]:
    """The tables of the section ``heading`` (up to the next ``## ``): rows of raw cells, no header."""
    lines = GUIDE.read_text(encoding="utf-8").splitlines()
    start = lines.index(heading)
    found: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in [*lines[start + 1 :], "## end"]:
        if line.startswith("## "):
            break
        if line.startswith("|"):
            current.append([c.strip() for c in line.strip("|").split(" | ")])
        elif current:
            found.append(current[2:])  # header and rule
            current = []
    if current:
        found.append(current[2:])
    return found


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
