"""docs/guide_mma.md tables and the package surface must match the code."""

from __future__ import annotations

from pathlib import Path

import manual_slop.mma as mma
from manual_slop.governance.severity import FailureClass
from manual_slop.mma.attempt import TREE_FILE_TOOLS, WorktreeApprovals
from manual_slop.mma.models import Ticket, TicketStatus
from tests.unit.test_docs import table_keys

MMA_DIR = Path(mma.__file__).parent


def test_automation_table_matches_the_registered_names(make_controller) -> None:
    ctrl = make_controller()
    registered = {n for n in ctrl.fields.names() + ctrl.actions.names() if n.startswith(("mma_", "btn_mma_"))}
    assert set(table_keys("guide_mma.md", "## Controller and automation")) == registered


def test_status_and_module_tables_match() -> None:
    assert table_keys("guide_mma.md", "## Tickets") == [str(s) for s in TicketStatus]
    modules = {p.name for p in MMA_DIR.glob("*.py") if p.name != "__init__.py"}
    text = (Path(__file__).resolve().parents[3] / "docs" / "guide_mma.md").read_text()
    assert all(f"`{m}`" in text for m in modules), sorted(m for m in modules if f"`{m}`" not in text)


def test_public_surface_is_sorted_and_importable() -> None:
    assert mma.__all__ == sorted(mma.__all__)
    assert all(hasattr(mma, name) for name in mma.__all__)


def test_the_isolation_section_matches_the_setting_and_the_tools() -> None:
    section = "## Isolation: every attempt in its own tree"
    assert table_keys("guide_mma.md", section) == [str(v) for v in WorktreeApprovals]
    text = (Path(__file__).resolve().parents[3] / "docs" / "guide_mma.md").read_text()
    body = text.split(section, 1)[1].split("\n## ", 1)[0]
    assert all(f"`{tool}`" in body for tool in TREE_FILE_TOOLS)
    assert f"`{FailureClass.MERGE_CONFLICT}`" in body and f"`{FailureClass.PATCH_REJECTED}`" in body
    fields = text.split("## Tickets", 1)[1].split("\n## ", 1)[0]
    assert all(f"`{name}`" in fields for name in Ticket.__slots__)  # every ticket field is listed
