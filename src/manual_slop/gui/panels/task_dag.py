"""Task DAG: the active track's tickets as a node graph, coloured by status.

Nodes are placed by :mod:`manual_slop.gui.dag_layout` (layer = longest dependency
chain, left to right; no two nodes overlap) whenever the graph's shape changes; in
between the user may drag them. Every node has the same size: its text is cut to the
node's width, the whole text in a tooltip. Links run from a dependency's output to the
dependent's input; dragging a new one or deleting one (select it, press Delete) edits the
dependencies through ``btn_mma_set_dependencies`` (:mod:`manual_slop.gui.dag_edit`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from imgui_bundle import ImVec2, hello_imgui, imgui
from imgui_bundle import imgui_node_editor as ed

from manual_slop.gui.dag_edit import handle_deleted_links, handle_new_links, link_id
from manual_slop.gui.dag_layout import layered_layout
from manual_slop.gui.widgets import elide, status_color

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["dag_shape", "node_ids", "render_task_dag"]

TEXT_EM = 10.0  # width of a node's text
GAP_EM = (3.0, 1.2)  # between layers, between nodes of a layer
PIN = "->"
HINT = "drag a right pin to a left pin: that ticket waits for this one · select a link + Delete: remove it"


def dag_shape(tickets: list[dict[str, Any]]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """What the layout depends on: the ids and their dependencies."""
    return tuple((str(t.get("id")), tuple(str(d) for d in t.get("depends_on") or [])) for t in tickets)


def node_ids(ui: Ui, tid: str) -> tuple[ed.NodeId, ed.PinId, ed.PinId]:
    """The node editor ids of a ticket's node and its input and output pins (stable per ticket)."""
    base = ui.gui.dag_ids.setdefault(tid, 3 * len(ui.gui.dag_ids) + 1)
    return ed.NodeId(base), ed.PinId(base + 1), ed.PinId(base + 2)


def _node_size() -> tuple[float, float]:
    """The box every node fits in: two lines of TEXT_EM, the pins beside the title, padding."""
    style = imgui.get_style()
    text = TEXT_EM * hello_imgui.em_size()
    pins = 2 * (imgui.calc_text_size(PIN).x + style.item_spacing.x)
    padding = 2 * 8.0 + 4.0  # the node editor's default node padding, plus a margin
    lines = 2 * imgui.get_text_line_height_with_spacing()
    return text + pins + padding, lines + padding


def render_task_dag(ui: Ui) -> None:
    tickets = ui.state.mma_tickets
    if not tickets:
        imgui.text_disabled("No active track. Start one from the MMA Dashboard.")
        return
    gui = ui.gui
    if gui.dag_editor is None:
        config = ed.Config()
        config.settings_file = None
        gui.dag_editor = ed.create_editor(config)
    ed.set_current_editor(gui.dag_editor)
    em = hello_imgui.em_size()
    shape = dag_shape(tickets)
    placing = shape != gui.dag_shape
    boxes = layered_layout(tickets, _node_size(), (GAP_EM[0] * em, GAP_EM[1] * em)) if placing else {}
    imgui.text_disabled(elide(HINT, imgui.get_content_region_avail().x))
    if imgui.is_item_hovered():
        imgui.set_item_tooltip(
            "A link from A's output (right) to B's input (left) means B waits for A. Only a waiting "
            "(todo or blocked) ticket's dependencies change; a cycle is refused."
        )
    ed.begin("##task_dag", ImVec2(0, 0))
    text_width = TEXT_EM * em
    hovered_id = ed.get_hovered_node().id()  # set by the last ed.end(): the same for every node
    hovered: dict[str, Any] | None = None
    for ticket in tickets:
        tid = str(ticket.get("id"))
        node, pin_in, pin_out = node_ids(ui, tid)
        if placing:
            box = boxes[tid]
            ed.set_node_position(node, ImVec2(box.x, box.y))
        status = str(ticket.get("status", ""))
        color = status_color(status)
        ed.push_style_color(ed.StyleColor.node_border, color)
        ed.begin_node(node)
        ed.begin_pin(pin_in, ed.PinKind.input)
        imgui.text(PIN)
        ed.end_pin()
        imgui.same_line()
        title = elide(f"{tid}  [{status}]", text_width)
        imgui.text_colored(color, title)
        imgui.same_line(0.0, 0.0)  # pad to the full width: every node is as wide as its box
        imgui.dummy(ImVec2(text_width - imgui.calc_text_size(title).x, 1.0))
        imgui.same_line()
        ed.begin_pin(pin_out, ed.PinKind.output)
        imgui.text(PIN)
        ed.end_pin()
        description = str(ticket.get("description", ""))
        imgui.text_disabled(elide(description, text_width) or " ")
        ed.end_node()
        ed.pop_style_color()
        if hovered is None and node.id() == hovered_id:
            hovered = ticket
    for ticket in tickets:
        tid = str(ticket.get("id"))
        _, pin_in, _ = node_ids(ui, tid)
        for dep in ticket.get("depends_on") or []:
            if dep not in gui.dag_ids:
                continue
            _, _, dep_out = node_ids(ui, dep)
            ed.link(link_id(ui, dep, tid), dep_out, pin_in)
    handle_new_links(ui, tickets)
    handle_deleted_links(ui)
    if placing or gui.dag_fit:
        ed.navigate_to_content(0.0)
    gui.dag_fit = placing  # once more next frame, when new nodes know their size
    gui.dag_shape = shape
    ed.end()
    if hovered is not None:
        _tooltip(hovered)


def _tooltip(ticket: dict[str, Any]) -> None:
    """The whole ticket text (drawn after ed.end(): tooltips inside the canvas would be zoomed)."""
    lines = [f"{ticket.get('id')}  [{ticket.get('status', '')}]", str(ticket.get("description", ""))]
    if ticket.get("blocked_reason"):
        lines.append(f"blocked: {ticket['blocked_reason']}")
    if ticket.get("depends_on"):
        lines.append("after: " + ", ".join(map(str, ticket["depends_on"])))
    imgui.begin_tooltip()
    imgui.push_text_wrap_pos(imgui.get_font_size() * 35)
    imgui.text_unformatted("\n".join(lines))
    imgui.pop_text_wrap_pos()
    imgui.end_tooltip()
