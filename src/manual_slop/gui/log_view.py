"""A filterable, virtualized view of a log (comms entries or tool calls) with a detail pane.

Only visible rows are drawn (ListClipper), and the filtered row list is cached and
extended incrementally as entries arrive, so a log of 10,000+ entries costs a frame
about what 30 visible rows cost. The view follows new entries while it is scrolled to
the bottom; scrolled up, it stays put.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from imgui_bundle import ImVec2, imgui

from manual_slop.gui.widgets import clipped_rows, follow_bottom

if TYPE_CHECKING:
    from manual_slop.gui.gui_state import LogFilter

__all__ = ["Column", "filtered_rows", "render_log_view"]

Entry = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Column:
    header: str
    value: Callable[[Entry], str]
    width: float = 0.0  # 0 = stretch


def _haystack(entry: Entry) -> str:
    return json.dumps(entry, default=str, ensure_ascii=False).lower()


def _passes(entry: Entry, flt: LogFilter, kind_key: str) -> bool:
    if flt.tier and str(entry.get("source_tier") or "") != flt.tier:
        return False
    if flt.kind and str(entry.get(kind_key) or "") != flt.kind:
        return False
    return not flt.text or flt.text.lower() in _haystack(entry)


def filtered_rows(entries: Sequence[Entry], flt: LogFilter, kind_key: str) -> list[int]:
    """Indices of entries passing the filter; cached and extended as the log grows."""
    first = entries[0].get("seq") if entries else None
    key = (flt.text, flt.tier, flt.kind, first)
    if key != flt.cached_key or len(entries) < flt.user_count:
        flt.cached_key = key
        flt.cached_rows = []
        flt.user_count = 0
        flt.cells.clear()
    for index in range(flt.user_count, len(entries)):
        if _passes(entries[index], flt, kind_key):
            flt.cached_rows.append(index)
    flt.user_count = len(entries)
    return flt.cached_rows


def _options(entries: Sequence[Entry], key: str, limit: int = 2000) -> list[str]:
    # Options come from the newest entries only: scanning 50k entries per frame is waste.
    return sorted({str(e.get(key)) for e in entries[-limit:] if e.get(key)})


def render_log_view(
    view_id: str,
    entries: Sequence[Entry],
    flt: LogFilter,
    columns: Sequence[Column],
    kind_key: str,
    dropped: int = 0,
) -> None:
    """Filters, the clipped table and the selected entry's JSON; ``dropped``: older entries the
    view's byte budget let go (the session log on disk keeps them)."""
    imgui.set_next_item_width(180)
    _, flt.text = imgui.input_text_with_hint(f"##{view_id}_text", "filter text", flt.text)
    for label, attr, key in (("Tier", "tier", "source_tier"), ("Kind", "kind", kind_key)):
        imgui.same_line()
        imgui.set_next_item_width(130)
        current = getattr(flt, attr)
        if imgui.begin_combo(f"{label}##{view_id}", current or "all"):
            if imgui.selectable("all", not current)[0]:
                setattr(flt, attr, "")
            for option in _options(entries, key):
                if imgui.selectable(option, option == current)[0]:
                    setattr(flt, attr, option)
            imgui.end_combo()
    rows = filtered_rows(entries, flt, kind_key)
    imgui.same_line()
    imgui.text_disabled(f"{len(rows):,} / {len(entries):,}")
    if dropped:
        imgui.same_line()
        imgui.text_disabled(f"({dropped:,} older dropped from memory: the session log has them)")

    avail = imgui.get_content_region_avail()
    detail_height = avail.y * 0.35 if flt.selected is not None else 0.0
    table_flags = (
        imgui.TableFlags_.row_bg
        | imgui.TableFlags_.borders_inner_v
        | imgui.TableFlags_.scroll_y
        | imgui.TableFlags_.resizable
        | imgui.TableFlags_.sizing_stretch_prop
    )
    if imgui.begin_table(f"##{view_id}_table", len(columns), table_flags, ImVec2(0, avail.y - detail_height)):
        imgui.table_setup_scroll_freeze(0, 1)
        for column in columns:
            flags = (
                imgui.TableColumnFlags_.width_fixed if column.width else imgui.TableColumnFlags_.width_stretch
            )
            imgui.table_setup_column(column.header, flags, column.width or -1.0)
        imgui.table_headers_row()

        def draw_row(row: int) -> None:
            index = rows[row]
            cells = flt.cells.get(index)
            if cells is None:  # formatting (json.dumps of payloads) once per entry, not per frame
                if len(flt.cells) > 4096:
                    flt.cells.clear()
                cells = flt.cells[index] = tuple(column.value(entries[index]) for column in columns)
            imgui.table_next_row()
            for n, text in enumerate(cells):
                imgui.table_set_column_index(n)
                if n == 0:
                    clicked, _ = imgui.selectable(
                        f"{text}##{view_id}{index}",
                        flt.selected == index,
                        imgui.SelectableFlags_.span_all_columns,
                    )
                    if clicked:
                        flt.selected = None if flt.selected == index else index
                else:
                    imgui.text_unformatted(text)

        clipped_rows(len(rows), draw_row)
        follow_bottom(1.0)  # the newest row stays in view unless scrolled up
        imgui.end_table()
    if flt.selected is not None and flt.selected < len(entries):
        if flt.detail[0] != (flt.selected, id(entries[flt.selected])):
            text = json.dumps(entries[flt.selected], indent=2, default=str, ensure_ascii=False)
            flt.detail = ((flt.selected, id(entries[flt.selected])), text)
        detail = flt.detail[1]
        imgui.input_text_multiline(
            f"##{view_id}_detail", detail, ImVec2(-1, -1), imgui.InputTextFlags_.read_only
        )


def short(value: Any, limit: int = 120) -> str:
    """One line of at most ``limit`` characters for a table cell."""
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"
