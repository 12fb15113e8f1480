"""docs/guide_governance.md, "Graphs and metrics", describes what is built: its tables and its
example match the code they name."""

from __future__ import annotations

import re
import string
from pathlib import Path

from manual_slop.governance.metrics import EVENTS, MAX_KEYS, OTHER, WINDOW, MetricsCollector
from manual_slop.hooks.metrics_schemas import METRICS
from manual_slop.mma.mermaid import STATUS_STYLES, TITLE_CHARS, mermaid_label, track_to_mermaid
from manual_slop.mma.models import Ticket, TicketStatus, Track, TrackStatus

ROOT = Path(__file__).resolve().parents[3]
GUIDE = ROOT / "docs" / "guide_governance.md"
SECTION = "## Graphs and metrics"


def section_lines() -> list[str]:
    lines = GUIDE.read_text(encoding="utf-8").splitlines()
    start = lines.index(SECTION)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end]


def _code_span(cell: str) -> str:
    """A cell that is one code span (`` `x` `` or ``` `` ` `` ```), as its text."""
    found = re.fullmatch(r"(`+) ?(.*?) ?\1", cell)
    return found.group(2) if found else cell


def tables(heading: str) -> list[list[list[str]]]:
    """The tables under ``heading`` (within the section, up to the next heading of its level or
    higher): rows of cells, backticks and the escape of '|' removed, without the header row."""
    lines = section_lines()
    start = lines.index(heading)
    level = len(heading) - len(heading.lstrip("#"))
    found: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in [*lines[start + 1 :], ""]:
        if line.startswith("#") and len(line) - len(line.lstrip("#")) <= level:
            break
        if line.startswith("|"):
            cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            cells = [_code_span(c) for c in cells]
            if not set("".join(cells)) <= set("-: "):
                current.append(cells)
        elif current:
            found.append(current[1:])
            current = []
    return found


def test_the_module_table_names_every_module_of_the_part() -> None:
    [modules] = tables(SECTION)[:1]
    names = [row[0] for row in modules]
    for name in names:
        assert (ROOT / "src" / "manual_slop" / name).is_file(), name
    governance = {f"governance/{p.name}" for p in (ROOT / "src/manual_slop/governance").glob("*.py")}
    text = GUIDE.read_text(encoding="utf-8")  # each part's table names its own modules
    assert {m for m in governance - {"governance/__init__.py"} if f"| `{m}` |" not in text} == set()


def test_the_class_table_is_every_ticket_status_and_its_style() -> None:
    classes, escapes = tables("### The ticket graph")
    assert classes == [[str(s), str(s), STATUS_STYLES[s]] for s in TicketStatus]
    assert list(STATUS_STYLES) == list(TicketStatus)
    printable = {c for c in string.printable if not c.isspace()}
    escaped = {c for c in printable if mermaid_label(c) != c}
    documented = {row[0]: row[1] for row in escapes if len(row[0]) == 1}
    assert set(documented) == escaped
    for char, written in documented.items():
        assert mermaid_label(char) == written == f"#{ord(char)};", char
    assert mermaid_label("\x07") == "#7;" and any(row[0] == "control characters" for row in escapes)
    assert f"cut at {TITLE_CHARS} characters" in "\n".join(section_lines())


def test_the_example_is_what_the_renderer_writes() -> None:
    text = "\n".join(section_lines())
    example = re.search(r"```mermaid\n(.*?)```", text, re.S)
    assert example is not None
    track = Track(
        "tr-login", "Login page", status=TrackStatus.RUNNING,
        tickets=[
            Ticket("a", "Write the form", status=TicketStatus.COMPLETED),
            Ticket("b", 'Validate "email"', depends_on=["a"], status=TicketStatus.IN_PROGRESS),
            Ticket("c", "Ship it", depends_on=["a", "b"], status=TicketStatus.BLOCKED),
        ],
    )  # fmt: skip
    assert example.group(1) == track_to_mermaid(track)


def test_the_event_and_field_tables_match_the_collector_and_the_schema() -> None:
    events, providers, tools, bounds = tables("### Run metrics")
    assert [row[0] for row in events] == list(EVENTS)
    collector = MetricsCollector()
    collector.response_received(provider="p", model="m", latency_ms=1.0)
    collector.tool_executed(name="t", status="success", duration_ms=1.0)
    snapshot = collector.snapshot()
    assert [row[0] for row in providers] == list(snapshot["providers"][0])
    assert [row[0] for row in tools] == list(snapshot["tools"][0])
    properties = METRICS["properties"]
    assert list(properties) == list(snapshot) == ["since", "window", "providers", "tools", "guard_trips"]
    assert list(properties["providers"]["items"]["properties"]) == list(snapshot["providers"][0])
    assert list(properties["tools"]["items"]["properties"]) == list(snapshot["tools"][0])
    assert [row[1] for row in bounds] == [str(WINDOW), str(MAX_KEYS)]
    assert f"`{OTHER}`" in bounds[1][2]
