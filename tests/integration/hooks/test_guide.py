"""docs/guide_hook_api.md describes what is built: its tables match the routes, registries,
events, errors and dialog kinds of the code."""

from __future__ import annotations

import re
from pathlib import Path

from manual_slop.dialogs import PendingKind, dialog_from_kind
from manual_slop.hooks.api import HookApi
from manual_slop.hooks.errors import HookApiError
from manual_slop.hooks.schemas import EVENT_TYPES

ROOT = Path(__file__).resolve().parents[3]
GUIDE = ROOT / "docs" / "guide_hook_api.md"


def table(heading: str) -> list[list[str]]:
    """Rows (cells stripped, backticks removed) of the first table after ``heading``."""
    lines = GUIDE.read_text(encoding="utf-8").splitlines()
    start = lines.index(heading)
    rows: list[list[str]] = []
    for line in lines[start + 1 :]:
        if line.startswith("|"):
            cells = [c.strip().strip("`") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            if not set("".join(cells)) <= set("-: "):
                rows.append(cells)
        elif rows:
            break
    return rows[1:]  # without the header


def mismatch(documented: list[list[str]], expected: list[list[str]]) -> str:
    rows = "\n".join("| `" + row[0] + "` | " + " | ".join(row[1:]) + " |" for row in expected)
    return f"the guide's table is out of date; the code has:\n{rows}"


def test_endpoint_table_matches_the_routes(make_controller) -> None:
    routes = HookApi(make_controller()).routes()
    documented = [row[:2] for row in table("## Endpoints")]
    expected = [[route.method, route.path] for route in routes]
    assert documented == expected, mismatch(documented, expected)


def test_field_table_matches_the_registry(make_controller) -> None:
    fields = make_controller().fields
    documented = [row[:3] for row in table("## Fields")]
    expected = [
        [name, fields.spec(name).field.expected(), "no" if fields.spec(name).read_only else "yes"]
        for name in fields.names()
    ]
    assert documented == expected, mismatch(documented, expected)


def test_action_table_matches_the_registry(make_controller) -> None:
    actions = make_controller().actions
    documented = [row[:3] for row in table("## Actions")]
    expected = []
    for name in actions.names():
        spec = actions.spec(name)
        user_data = spec.user_data.expected() if spec.user_data is not None else "—"
        expected.append([name, user_data, "yes" if spec.available else "not yet"])
    assert documented == expected, mismatch(documented, expected)


def test_event_table_matches_the_catalog_and_the_code_publishes_nothing_else() -> None:
    assert [row[0] for row in table("## Events")] == list(EVENT_TYPES)
    published = set()
    for source in (ROOT / "src" / "manual_slop").rglob("*.py"):
        published |= set(re.findall(r"publish\(\s*\"(\w+)\"", source.read_text(encoding="utf-8")))
    assert published, "the scan found no publish calls"
    assert published <= set(EVENT_TYPES), f"undocumented event types: {sorted(published - set(EVENT_TYPES))}"


def test_error_table_matches_the_error_classes() -> None:
    documented = {row[0]: int(row[1]) for row in table("## Errors")}
    expected = {str(cls.code): cls.status for cls in HookApiError.__subclasses__()}
    assert documented == expected


def test_dialog_table_matches_the_dialog_kinds() -> None:
    documented = {row[0]: row[2] for row in table("## Pending dialogs")}
    assert list(documented) == [str(kind) for kind in PendingKind]
    for kind, editable in documented.items():
        keys = [] if editable == "—" else editable.replace("`", "").split(", ")  # "—": nothing editable
        assert keys == list(dialog_from_kind(kind).editable), kind


def test_module_table_lists_every_hooks_module() -> None:
    documented = {row[0] for row in table("The code is `src/manual_slop/hooks/`:")}
    modules = {p.name for p in (ROOT / "src" / "manual_slop" / "hooks").glob("*.py")} - {"__init__.py"}
    assert documented == modules


def tables_after(heading: str) -> list[list[list[str]]]:
    """Every table between ``heading`` and the next heading: rows of stripped cells, no header."""
    lines = GUIDE.read_text(encoding="utf-8").splitlines()
    start = lines.index(heading)
    tables: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        if line.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            if not set("".join(cells)) <= set("-: "):
                current.append(cells)
        elif current:
            tables.append(current[1:])
            current = []
    if current:
        tables.append(current[1:])
    return tables


def test_the_security_tables_match_the_guard() -> None:
    from manual_slop.hooks.guard import CHECK_ORDER, MAX_HEADER_BYTES, MAX_JSON_DEPTH
    from manual_slop.hooks.server import MAX_BODY_BYTES

    checks, limits = tables_after("### The checks")
    documented = [(int(step), check, [int(n) for n in re.findall(r"\b(\d{3})\b", refusal)])
                  for step, check, refusal in checks]  # fmt: skip
    assert [(step, check) for step, check, _ in documented] == [
        (index, name) for index, (name, _) in enumerate(CHECK_ORDER, start=1)
    ]
    for (_, name, statuses), (_, expected) in zip(documented, CHECK_ORDER, strict=True):
        assert set(statuses) >= set(expected), name  # every status the step gives is documented
    values = {row[0]: row[1] for row in limits}
    assert values["request headers"].startswith(f"{MAX_HEADER_BYTES // 1024} KiB")
    assert values["JSON nesting"].startswith(f"{MAX_JSON_DEPTH} levels")
    assert values["body"].startswith(f"{MAX_BODY_BYTES // (1024 * 1024)} MiB")
