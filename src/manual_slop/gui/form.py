"""Label-left forms for narrow panels: labels in a column as wide as the longest one,
widgets filling the rest of the row, so neither is cut at any panel width the labels fit.

::

    with form("##sampling", ["Temperature", "Top P"]):
        form_row("Temperature")
        changed, value = imgui.slider_float("##temperature", ...)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

from imgui_bundle import imgui

__all__ = ["form", "form_row", "label_width"]


def label_width(labels: Sequence[str]) -> float:
    """Pixels the longest label needs (plus a little air before the widget)."""
    return max((imgui.calc_text_size(label).x for label in labels), default=0.0) + imgui.get_font_size() * 0.5


@contextlib.contextmanager
def form(table_id: str, labels: Sequence[str]) -> Iterator[bool]:
    """A two-column table; yields False (and draws nothing) when the table is clipped away."""
    if not imgui.begin_table(table_id, 2, imgui.TableFlags_.none):
        yield False
        return
    try:
        imgui.table_setup_column("label", imgui.TableColumnFlags_.width_fixed, label_width(labels))
        imgui.table_setup_column("value", imgui.TableColumnFlags_.width_stretch)
        yield True
    finally:
        imgui.end_table()


def form_row(label: str, tooltip: str = "") -> None:
    """Start a row: the label (its tooltip on hover), then the widget cell, whose next item
    fills the cell."""
    imgui.table_next_row()
    imgui.table_set_column_index(0)
    imgui.align_text_to_frame_padding()
    imgui.text_unformatted(label)
    if tooltip and imgui.is_item_hovered():
        imgui.set_item_tooltip(tooltip)
    imgui.table_set_column_index(1)
    imgui.set_next_item_width(-imgui.FLT_MIN)
