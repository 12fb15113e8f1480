"""Task DAG: the active track's tickets as a node graph, coloured by status.

Nodes are placed once by dependency depth (column) and order (row); the user may drag
them afterwards. Links run from a dependency's output to the dependent's input.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from imgui_bundle import ImVec2, hello_imgui, imgui
from imgui_bundle import imgui_node_editor as ed

from manual_slop.gui.widgets import status_color

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["depth_layout", "render_task_dag"]

COLUMN_EM = 16.0
ROW_EM = 5.0


def depth_layout(tickets: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """(column, row) per ticket id: column = longest dependency chain before it."""
    by_id = {str(t.get("id")): t for t in tickets}
    depth: dict[str, int] = {}

    def depth_of(tid: str, trail: frozenset[str] = frozenset()) -> int:
        if tid in depth:
            return depth[tid]
        deps = [d for d in by_id.get(tid, {}).get("depends_on") or [] if d in by_id and d not in trail]
        value = 1 + max((depth_of(d, trail | {tid}) for d in deps), default=-1)
        depth[tid] = value
        return value

    rows: dict[int, int] = {}
    placed: dict[str, tuple[int, int]] = {}
    for tid in by_id:
        column = depth_of(tid)
        placed[tid] = (column, rows.get(column, 0))
        rows[column] = rows.get(column, 0) + 1
    return placed


def _ids(ui: Ui, tid: str) -> tuple[ed.NodeId, ed.PinId, ed.PinId]:
    base = ui.gui.dag_ids.setdefault(tid, 3 * len(ui.gui.dag_ids) + 1)
    return ed.NodeId(base), ed.PinId(base + 1), ed.PinId(base + 2)


def render_task_dag(ui: Ui) -> None:
    tickets = ui.state.mma_tickets
    if not tickets:
        imgui.text_disabled("No active track. Start one from the MMA Dashboard.")
        return
    if ui.gui.dag_editor is None:
        config = ed.Config()
        config.settings_file = None
        ui.gui.dag_editor = ed.create_editor(config)
    ed.set_current_editor(ui.gui.dag_editor)
    layout = depth_layout(tickets)
    ed.begin("##task_dag", ImVec2(0, 0))
    em = hello_imgui.em_size()
    for ticket in tickets:
        tid = str(ticket.get("id"))
        node, pin_in, pin_out = _ids(ui, tid)
        if tid not in ui.gui.dag_placed:
            column, row = layout[tid]
            ed.set_node_position(node, ImVec2(column * COLUMN_EM * em, row * ROW_EM * em))
            ui.gui.dag_placed.add(tid)
        status = str(ticket.get("status", ""))
        color = status_color(status)
        ed.push_style_color(ed.StyleColor.node_border, color)
        ed.begin_node(node)
        ed.begin_pin(pin_in, ed.PinKind.input)
        imgui.text("->")
        ed.end_pin()
        imgui.same_line()
        imgui.text_colored(color, f"{tid}  [{status}]")
        imgui.same_line()
        ed.begin_pin(pin_out, ed.PinKind.output)
        imgui.text("->")
        ed.end_pin()
        description = str(ticket.get("description", ""))
        imgui.text_disabled(description[:40] + ("…" if len(description) > 40 else ""))
        ed.end_node()
        ed.pop_style_color()
    link_index = 0
    for ticket in tickets:
        _, pin_in, _ = _ids(ui, str(ticket.get("id")))
        for dep in ticket.get("depends_on") or []:
            if dep not in ui.gui.dag_ids:
                continue
            _, _, dep_out = _ids(ui, dep)
            link_index += 1
            ed.link(ed.LinkId(1_000_000 + link_index), dep_out, pin_in)
    if ui.gui.dag_fit:
        ed.navigate_to_content(0.0)
        ui.gui.dag_fit = False
    ed.end()
