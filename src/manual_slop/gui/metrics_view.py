"""The run metrics part of the Diagnostics panel: a table per provider and per tool (calls,
failure rate, latency p50/p95) and the guard trips by kind, from the controller's
:class:`~manual_slop.governance.metrics.MetricsCollector`.

Each row's name is a selectable whose id is ``###<table>:<name>`` (stable however the name is
cut to fit), hovering it shows the details (model, failures by kind, calls by status); the
cells are :func:`provider_rows` / :func:`tool_rows` / :func:`guard_rows`, so what is drawn is
what those return.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from imgui_bundle import imgui

from manual_slop.governance.metrics_bindings import metrics_snapshot
from manual_slop.gui.widgets import COLORS, elide

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = [
    "GUARD_COLUMNS",
    "PROVIDER_COLUMNS",
    "TOOL_COLUMNS",
    "guard_rows",
    "provider_rows",
    "render_run_metrics",
    "tool_rows",
]

PROVIDER_COLUMNS = ("provider", "calls", "fail%", "p50", "p95")
TOOL_COLUMNS = ("tool", "calls", "fail%", "p50", "p95")
GUARD_COLUMNS = ("guard", "trips")
NONE = "—"


def _ms(value: float | None) -> str:
    """A latency in at most five characters: ms below a second, seconds (with 's') above."""
    if value is None:
        return NONE
    if value < 10:
        return f"{value:.1f}"
    if value < 1000:
        return f"{value:.0f}"
    seconds = value / 1000.0
    return f"{seconds:.1f}s" if seconds < 100 else f"{seconds:.0f}s"


def _percent(rate: float, total: int) -> str:
    return NONE if not total else f"{100.0 * rate:.1f}"


def provider_rows(snapshot: dict[str, Any]) -> list[list[str]]:
    """One row of PROVIDER_COLUMNS per provider."""
    return [
        [p["provider"], f"{p['requests']:,}", _percent(p["failure_rate"], p["ok"] + p["failures"]),
         _ms(p["p50_ms"]), _ms(p["p95_ms"])]
        for p in snapshot["providers"]
    ]  # fmt: skip


def tool_rows(snapshot: dict[str, Any]) -> list[list[str]]:
    """One row of TOOL_COLUMNS per tool."""
    return [
        [t["tool"], f"{t['calls']:,}", _percent(t["failure_rate"], t["calls"]), _ms(t["p50_ms"]),
         _ms(t["p95_ms"])]
        for t in snapshot["tools"]
    ]  # fmt: skip


def guard_rows(snapshot: dict[str, Any]) -> list[list[str]]:
    """One row of GUARD_COLUMNS per guard kind that tripped."""
    return [[kind, f"{count:,}"] for kind, count in snapshot["guard_trips"]["by_kind"].items()]


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {count:,}" for name, count in counts.items()) or NONE


def _provider_details(p: dict[str, Any]) -> str:
    return (
        f"{p['provider']} ({p['model'] or 'no model'})\nanswered {p['ok']:,} · failed {p['failures']:,}"
        f"\nfailures by kind: {_counts(p['failures_by_kind'])}\nlatency of the last {p['samples']:,} answers"
    )


def _tool_details(t: dict[str, Any]) -> str:
    return (
        f"{t['tool']}\nby status: {_counts(t['by_status'])}\nguard trips: {t['guard_trips']:,}"
        f"\nrun time of the last {t['samples']:,} calls (approval waits not counted)"
    )


def _table(
    table: str, columns: tuple[str, ...], rows: list[list[str]], details: Callable[[int], str] | None
) -> None:
    flags = imgui.TableFlags_.row_bg | imgui.TableFlags_.borders_inner_v
    if not imgui.begin_table(f"##{table}", len(columns), flags):
        return
    # the panel is narrow: each number column as wide as its widest cell, the name gets the rest
    imgui.table_setup_column(columns[0], imgui.TableColumnFlags_.width_stretch)
    for index, title in enumerate(columns[1:], start=1):
        width = max(imgui.calc_text_size(text).x for text in (title, *(r[index] for r in rows)))
        imgui.table_setup_column(title, imgui.TableColumnFlags_.width_fixed, width)
    imgui.table_headers_row()
    for index, row in enumerate(rows):
        imgui.table_next_row()
        imgui.table_set_column_index(0)
        name = row[0]
        label = elide(name, max(imgui.get_content_region_avail().x, 1.0))
        imgui.selectable(f"{label}###{table}:{name}", False, imgui.SelectableFlags_.span_all_columns)
        if details is not None and imgui.is_item_hovered():
            imgui.set_tooltip(details(index))
        for column, text in enumerate(row[1:], start=1):
            imgui.table_set_column_index(column)
            imgui.text_unformatted(text)
    imgui.end_table()


def render_run_metrics(ui: Ui) -> None:
    snapshot = metrics_snapshot(ui.ctrl)
    imgui.separator_text("Run metrics")
    if imgui.small_button("Reset##metrics"):
        ui.act.click("btn_reset_metrics")
    if imgui.is_item_hovered():
        imgui.set_tooltip("Forget the counts and latencies below and start again")
    imgui.same_line()
    imgui.text_disabled("p50 / p95: ms, or s")
    if imgui.is_item_hovered():
        imgui.set_tooltip(
            f"Latency percentiles of the last {snapshot['window']} answers (providers) or runs (tools) "
            "of each row, in milliseconds; values from a second up in seconds (s)"
        )
    providers, tools = snapshot["providers"], snapshot["tools"]
    if providers:
        _table("provider_metrics", PROVIDER_COLUMNS, provider_rows(snapshot),
               lambda i: _provider_details(providers[i]))  # fmt: skip
    else:
        imgui.text_disabled("no provider calls yet")
    if tools:
        _table("tool_metrics", TOOL_COLUMNS, tool_rows(snapshot), lambda i: _tool_details(tools[i]))
    else:
        imgui.text_disabled("no tool calls yet")
    trips = snapshot["guard_trips"]
    if trips["total"]:
        imgui.text_colored(COLORS["warn"], f"guard trips: {trips['total']:,}")
        _table("guard_trips", GUARD_COLUMNS, guard_rows(snapshot), None)
    else:
        imgui.text_disabled("no guard trips")
