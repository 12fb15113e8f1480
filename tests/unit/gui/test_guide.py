"""docs/guide_gui.md must describe every panel and modal the window has, with a screenshot."""

from __future__ import annotations

import re
from pathlib import Path

from manual_slop.gui.modals import MODAL_TITLES
from manual_slop.gui.panels import PANELS
from manual_slop.gui.widgets import fuzzy_score, rank

DOCS = Path(__file__).resolve().parents[3] / "docs"
GUIDE = (DOCS / "guide_gui.md").read_text(encoding="utf-8")


def first_column(heading: str) -> list[str]:
    section = GUIDE[GUIDE.index(heading) :]
    rows = []
    for line in section.splitlines()[1:]:
        if line.startswith("## "):
            break
        match = re.match(r"\| `?([^|`]+?)`? \|", line)
        if match and not set(match.group(1)) <= {"-"}:
            rows.append(match.group(1))
    return rows[1:]  # without the header row


def test_every_panel_is_documented() -> None:
    assert set(first_column("## Panels")) == {p.title for p in PANELS}


def test_every_modal_kind_is_documented_with_its_title() -> None:
    rows = first_column("## Modals")
    assert rows == list(MODAL_TITLES)
    for kind, title in MODAL_TITLES.items():
        assert f"| `{kind}` | {title} |" in GUIDE


def test_every_screenshot_exists_and_every_image_is_shown() -> None:
    shown = set(re.findall(r"\]\(images/([^)]+)\)", GUIDE))
    on_disk = {p.name for p in (DOCS / "images").glob("*.png")}
    assert shown == on_disk
    assert {f"modal_{kind}.png" for kind in MODAL_TITLES} <= shown


def test_fuzzy_ranking_prefers_word_starts_and_streaks() -> None:
    commands = ["btn_mma_plan_epic", "btn_new_discussion", "btn_mma_pause", "Show Comms Log"]
    assert rank("newdisc", commands) == [1]
    assert rank("mma pa", commands)[:2] == [2, 0]
    assert fuzzy_score("zz", "btn_save") is None
    assert rank("", commands) == [0, 1, 2, 3]
