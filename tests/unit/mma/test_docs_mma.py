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


def test_the_ray_backend_is_refused_in_one_line_without_ray(make_controller, monkeypatch) -> None:
    import importlib.util

    from manual_slop.automation import InvalidValue
    from manual_slop.mma.backends.ray_backend import RAY_MISSING

    ctrl = make_controller()
    real = importlib.util.find_spec
    missing = lambda name, *rest: None if name == "ray" else real(name, *rest)  # noqa: E731
    monkeypatch.setattr(importlib.util, "find_spec", missing)
    try:
        ctrl.fields.set("mma_backend", "ray")
    except InvalidValue as exc:
        assert str(exc).endswith(RAY_MISSING) and "\n" not in str(exc)
    else:
        raise AssertionError("backend = ray was accepted without Ray")
    assert ctrl.fields.get("mma_backend") == "threads"
    monkeypatch.undo()
    ctrl.fields.set("mma_backend", "ray")  # installed here: accepted
    assert ctrl.fields.get("mma_backend") == "ray"


def test_the_ray_settings_table_is_the_code() -> None:
    from manual_slop.mma.runtime import DEFAULT_SETTINGS
    from tests.helpers import markdown_tables

    guide = Path(__file__).resolve().parents[3] / "docs" / "guide_mma.md"
    rows = markdown_tables(guide, "## Ray backend")[0]
    documented = {row[0]: row[1] for row in rows}
    keys = {"backend", "ray_address", "ray_num_cpus", "ray_max_retries", "ray_runtime_env", "max_workers"}
    assert set(documented) == keys
    for key, shown in documented.items():
        expected = DEFAULT_SETTINGS[key]
        assert shown == {"": '""', "{}": "{}"}.get(str(expected), str(expected)), key
