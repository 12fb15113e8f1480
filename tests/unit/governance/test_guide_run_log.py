"""docs/guide_governance.md, section "Run log and replay", describes what is built: its tables
match the record types and their fields, the run kinds and outcomes, the replay's exit codes and
compared parts, the governance modules and the run log endpoints."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

from manual_slop.governance.replay import EXIT_DIVERGED, EXIT_IDENTICAL, EXIT_UNREADABLE, REQUEST_PARTS
from manual_slop.governance.run_log import RECORD_FIELDS, RUN_LOG_MAX_BYTES, RecordType, RunKind, RunOutcome
from manual_slop.hooks.runs_api import run_routes

ROOT = Path(__file__).resolve().parents[3]
GUIDE = ROOT / "docs" / "guide_governance.md"
SECTION = "## Run log and replay"


def section() -> list[str]:
    lines = GUIDE.read_text(encoding="utf-8").splitlines()
    start = lines.index(SECTION)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end]


def tables() -> dict[str, list[list[str]]]:
    """The section's tables by the name of their first column: rows of cells (backticks
    stripped), without the header."""
    found: dict[str, list[list[str]]] = {}
    current: list[list[str]] = []
    for line in [*section(), ""]:
        if line.startswith("|"):
            cells = [c.strip().strip("`") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            if not set("".join(cells)) <= set("-: "):
                current.append(cells)
        elif current:
            found[current[0][0]] = current[1:]
            current = []
    return found


def table_with(first_column: str) -> list[list[str]]:
    return tables()[first_column]


def test_the_guide_starts_with_its_title() -> None:
    assert GUIDE.read_text(encoding="utf-8").splitlines()[0] == "# Governance"


def test_the_record_table_is_the_code_s_record_types_and_fields() -> None:
    rows = table_with("record")
    assert [row[0] for row in rows] == [str(t) for t in RecordType]
    for row in rows:
        assert row[1].split(", ") == list(RECORD_FIELDS[RecordType(row[0])]), row[0]


def test_the_kind_outcome_and_module_tables_match_the_code() -> None:
    assert [row[0] for row in table_with("kind")] == [str(k) for k in RunKind]
    assert [row[0] for row in table_with("outcome")] == [str(o) for o in RunOutcome]
    modules = {f"governance/{name}.py" for name in ("correlation", "run_log", "run_files", "replay")}
    assert {row[0] for row in table_with("module")} == modules
    for module in modules:
        assert (ROOT / "src" / "manual_slop" / module).is_file(), module


def test_the_replay_section_names_its_exit_codes_and_every_compared_part() -> None:
    codes = [int(row[0]) for row in table_with("exit code")]
    assert codes == [EXIT_IDENTICAL, EXIT_DIVERGED, EXIT_UNREADABLE]
    text = "\n".join(section())
    for part in REQUEST_PARTS:
        assert f"`{part}`" in text, part
    assert f"{RUN_LOG_MAX_BYTES // (1024 * 1024)} MiB" in text


def test_the_endpoint_table_is_the_run_routes() -> None:
    ctrl = SimpleNamespace(session_log=SimpleNamespace(session_id="s", root=Path("/nowhere")))
    routes = run_routes(ctrl)  # type: ignore[arg-type]
    assert [row[:2] for row in table_with("method")] == [[r.method, r.path] for r in routes]
