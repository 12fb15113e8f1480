"""docs/guide_ai_client.md's tables must match the code."""

from __future__ import annotations

import re
from pathlib import Path

from manual_slop.ai.errors import _LABELS, ErrorKind
from manual_slop.ai.providers import PROVIDER_CLASSES, ProviderConfig, provider_class
from manual_slop.config import DEFAULT_MODELS, PROVIDER_NAMES

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guide_ai_client.md"


def table(heading_line: str) -> list[list[str]]:
    """Rows (cells stripped) of the first table after the line starting with ``heading_line``."""
    lines = GUIDE.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading_line))
    rows: list[list[str]] = []
    first = start if lines[start].startswith("|") else start + 1
    for line in lines[first:]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if not set(cells[0]) <= {"-", ":"}:
                rows.append(cells)
        elif rows:
            break
    return rows[1:]  # without the header


def test_the_provider_table_lists_every_provider_and_its_module() -> None:
    rows = table("## Providers")
    assert [r[0].strip("`") for r in rows] == list(PROVIDER_NAMES)
    for row in rows:
        module = PROVIDER_CLASSES[row[0].strip("`")].split(":")[0].rsplit(".", 1)[1]
        assert row[1] == f"`{module}.py`"


def test_the_budget_table_matches_each_providers_budget() -> None:
    rows = table("| provider | trigger (tokens)")
    expected = {}
    for name in PROVIDER_NAMES:
        expected[name] = provider_class(name)(ProviderConfig(name, DEFAULT_MODELS[name])).budget()

    def number(cell: str) -> int:
        return int(re.search(r"\d{1,3}(?:,\d{3})+", cell).group(0).replace(",", ""))

    documented = {row[0].strip("`"): (number(row[1]), number(row[2])) for row in rows}
    assert documented == expected


def test_the_error_table_lists_every_kind_with_its_label() -> None:
    rows = table("| kind | shown as")
    assert [r[0].strip("`") for r in rows] == [str(k) for k in ErrorKind]
    assert [r[1] for r in rows] == [_LABELS[k] for k in ErrorKind]


def test_the_context_window_table_is_the_codes_table() -> None:
    from manual_slop.ai.windows import CONTEXT_WINDOWS

    rows = table("| provider | model prefix | tokens")
    documented = [
        (row[0].strip("`"), "" if row[1] == "(any)" else row[1].strip("`"), int(row[2].replace(",", "")))
        for row in rows
    ]
    assert documented == list(CONTEXT_WINDOWS)


def test_the_images_table_matches_each_providers_image_support() -> None:
    rows = table("| provider | takes images")
    assert [r[0].strip("`") for r in rows] == list(PROVIDER_NAMES)
    for row in rows:
        support = provider_class(row[0].strip("`")).image_support
        assert row[1] == ("yes" if support is not None else "no"), row
        if support is not None:
            formats = sorted(t.removeprefix("image/").upper() for t in support.media_types)
            assert sorted(f.strip() for f in row[3].split(",")) == formats, row
            assert f"{support.max_bytes // (1024 * 1024)} MB per image" in row[4], row
            assert f"{support.max_images} images" in row[4], row
