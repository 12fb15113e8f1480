"""The guides' tables must match the code they describe."""

from __future__ import annotations

import re
from pathlib import Path

from manual_slop.config import GLOBAL_SCHEMA, HISTORY_SCHEMA, PROJECT_SCHEMA

DOCS = Path(__file__).resolve().parents[2] / "docs"
SRC = Path(__file__).resolve().parents[2] / "src" / "manual_slop"


def table_keys(doc: str, heading: str) -> list[str]:
    """First-column backticked names of the first table after ``heading``."""
    text = (DOCS / doc).read_text(encoding="utf-8")
    start = text.index(heading + "\n")
    keys: list[str] = []
    in_table = False
    for line in text[start:].splitlines()[1:]:
        if line.startswith("|"):
            in_table = True
            match = re.match(r"\|\s*`([^`]+)`", line)
            if match:
                keys.append(match.group(1))
        elif in_table:
            break
    return keys


def collapse_providers(keys) -> set[str]:
    return {re.sub(r"^providers\.[a-z_]+\.", "providers.<name>.", k) for k in keys}


def test_config_tables_match_the_schemas() -> None:
    assert set(table_keys("guide_configuration.md", "## `config.toml`")) == collapse_providers(GLOBAL_SCHEMA)
    assert set(table_keys("guide_configuration.md", "## `<project>.toml`")) == set(PROJECT_SCHEMA)
    assert set(table_keys("guide_configuration.md", "## `<project>_history.toml`")) == set(HISTORY_SCHEMA)


def test_module_table_lists_every_core_module() -> None:
    documented = set()
    for cell in table_keys("guide_architecture.md", "## Modules of the core"):
        documented.add(cell)
    text = (DOCS / "guide_architecture.md").read_text()
    for module in SRC.glob("*.py"):
        if module.name in {"__init__.py", "__main__.py"}:
            continue
        assert f"`{module.name}`" in text, f"{module.name} is missing from the module table"


def test_task_catalog_and_event_routes_match_the_controller(make_controller) -> None:
    ctrl = make_controller()
    assert table_keys("guide_architecture.md", "### Task catalog") == list(ctrl._task_handlers)
    assert set(table_keys("guide_architecture.md", "### Events routed by the asyncio worker")) == set(
        ctrl.event_routes()
    )


def test_docs_links_resolve() -> None:
    for doc in DOCS.glob("*.md"):
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", doc.read_text()):
            if "://" in target:
                continue
            assert (doc.parent / target).exists(), f"{doc.name} links to missing {target}"


def test_memory_guide_lists_every_memory_module_and_its_endpoints(make_controller) -> None:
    from manual_slop.hooks.api import HookApi

    modules = {p.name for p in (SRC / "memory").glob("*.py")} - {"__init__.py"}
    heading = "# Memory: stored conversations, compaction, recall, notes, profile, project index"
    assert set(table_keys("guide_memory.md", heading)) == modules
    text = (DOCS / "guide_memory.md").read_text()
    routes = HookApi(make_controller()).routes()
    for route in [r for r in routes if "/rag/" in r.path or "/memory/" in r.path]:
        assert f"`{route.method} {route.path}`" in text, f"{route.path} is not in guide_memory.md"
