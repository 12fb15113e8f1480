"""docs/guide_mma.md tables and the package surface must match the code."""

from __future__ import annotations

from pathlib import Path

import manual_slop.mma as mma
from manual_slop.mma.models import TicketStatus
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
