"""The context guides' tables must match the code: modules, view modes, strategies, fields, actions."""

from __future__ import annotations

import types
from pathlib import Path

import manual_slop.context as context_pkg
from manual_slop.automation import ActionRegistry, FieldRegistry, SelectorRegistry
from manual_slop.context.aggregate import Strategy
from manual_slop.context.bindings import register
from manual_slop.context.items import ViewMode
from tests.unit.test_docs import table_keys

AGG = "guide_context_aggregation.md"
DISC = "guide_discussions.md"
PACKAGE = Path(context_pkg.__file__).parent


def context_surface(ctrl) -> types.SimpleNamespace:
    """Register only the context package's bindings, against fresh registries."""
    stub = types.SimpleNamespace(
        state=ctrl.state,
        context=ctrl.context,
        fields=FieldRegistry(),
        actions=ActionRegistry(),
        listboxes=SelectorRegistry("listbox"),
        tab_bars=SelectorRegistry("tab bar"),
        register_task_handler=lambda action, handler: None,
    )
    register(stub)
    return stub


def test_module_table_lists_every_module_of_the_package() -> None:
    documented = set(table_keys(AGG, "## Modules"))
    actual = {p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"}
    assert documented == actual


def test_view_mode_and_strategy_tables_match_the_enums() -> None:
    assert table_keys(AGG, "## View modes") == [m.value for m in ViewMode]
    assert table_keys(AGG, "## Strategies") == [s.value for s in Strategy]


def test_field_and_action_tables_match_the_registered_surface(make_controller) -> None:
    surface = context_surface(make_controller())
    documented_fields = table_keys(AGG, "### Fields") + table_keys(DISC, "## Fields")
    documented_actions = table_keys(AGG, "### Actions") + table_keys(DISC, "## Actions")
    assert sorted(documented_fields) == surface.fields.names()
    assert sorted(documented_actions) == surface.actions.names()
    for name in surface.fields.names():  # the "settable" column tells the truth
        row = next(
            line
            for doc in (AGG, DISC)
            for line in (Path(table_keys.__globals__["DOCS"]) / doc).read_text().splitlines()
            if line.startswith(f"| `{name}` |")
        )
        settable = row.split("|")[3].strip()
        assert (settable == "yes") == (not surface.fields.spec(name).read_only), name


def test_public_surface_is_sorted_and_importable() -> None:
    names = context_pkg.__all__
    assert names == sorted(names)
    assert all(hasattr(context_pkg, n) for n in names)
