"""Editing the Task DAG's links in the node editor: what a drag or a Delete asks for, and who
decides.

A link runs from a dependency's output pin (right) to the dependent's input pin (left).
Dragging a new one makes the dependent wait for the dependency; selecting one and pressing
Delete removes that wait. Both are edits of the action ``btn_mma_set_dependencies`` on the
active track (:func:`apply_link_edit`), which refuses a cycle, an unknown ticket, a ticket that
is running or done, and in a plan a link against the group order; a refused edit is rejected in
the editor and its reason shown as a toast. While a link is dragged, :func:`link_problem` checks
it locally so the link turns red with the reason beside it before the mouse is released — a hint
only: the action has the last word.

The node editor's protocol (see ``imgui_node_editor.pyi``): while a link is dragged over a pin,
``query_new_link`` reports both pins every frame, ``accept_new_item``/``reject_new_item`` say what
would happen, and the frame after the mouse is released ``accept_new_item`` returns True if the
last answer was "accept". The edit is applied in the release frame itself, so a refusal can
still reject the link.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from imgui_bundle import ImVec4, imgui
from imgui_bundle import imgui_node_editor as ed

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = [
    "EDITABLE",
    "apply_link_edit",
    "handle_deleted_links",
    "handle_new_links",
    "link_id",
    "link_problem",
]

EDITABLE = ("todo", "blocked")  # ticket states whose dependencies may change
LINK_COLOR = ImVec4(0.55, 0.75, 1.00, 1.0)
REFUSED_COLOR = ImVec4(0.95, 0.35, 0.35, 1.0)
LINK_ID_BASE = 1_000_000  # link ids stay clear of node and pin ids

Op = Literal["add", "remove"]


def apply_link_edit(ui: Ui, dep: str, tid: str, op: Op) -> str:
    """Add (``op="add"``) or remove the link ``dep`` → ``tid`` (``tid`` waits for ``dep``) in the
    active track through ``btn_mma_set_dependencies``; why it was refused ('' when applied).
    A refusal is also a toast naming the link."""
    track_id = str((ui.state.active_track or {}).get("id") or "")
    user_data: dict[str, Any] = {"ticket_id": tid, op: [dep]}
    if track_id:
        user_data["track_id"] = track_id
    verb = "link" if op == "add" else "unlink"
    return ui.act.refusal("btn_mma_set_dependencies", user_data, what=f"{verb} {dep} -> {tid}")


def link_problem(tickets: Sequence[Mapping[str, Any]], dep: str, tid: str) -> str:
    """Why a new link ``dep`` → ``tid`` looks wrong from the tickets shown ('' when it looks fine)."""
    by_id = {str(t.get("id")): t for t in tickets}
    if dep == tid:
        return f"{tid} cannot wait for itself"
    if dep not in by_id or tid not in by_id:
        return f"no ticket {dep if dep not in by_id else tid} in this track"
    ticket = by_id[tid]
    if dep in (ticket.get("depends_on") or []):
        return f"{tid} already waits for {dep}"
    status = str(ticket.get("status", ""))
    if status not in EDITABLE:
        return f"{tid} is {status}; only a waiting ticket's dependencies change"
    path = _path(by_id, dep, tid)
    if path:
        return "that would be a cycle: " + " -> ".join([*path, tid])
    return ""


def _path(by_id: Mapping[str, Mapping[str, Any]], start: str, goal: str) -> list[str]:
    """The ids from ``goal`` to ``start``, each needed by the next, when ``start`` (transitively)
    waits for ``goal``; [] when it does not."""
    parents: dict[str, str] = {start: ""}
    stack = [start]
    while stack:
        current = stack.pop()
        if current == goal:
            chain = [current]
            while parents[chain[-1]]:
                chain.append(parents[chain[-1]])
            return chain
        for dep in by_id.get(current, {}).get("depends_on") or []:
            dep = str(dep)
            if dep not in parents:
                parents[dep] = current
                stack.append(dep)
    return []


def link_id(ui: Ui, dep: str, tid: str) -> ed.LinkId:
    """A stable id for the link ``dep`` → ``tid`` (ids are never reused: a selection stays valid)."""
    gui = ui.gui
    number = gui.dag_link_ids.get((dep, tid))
    if number is None:
        number = gui.dag_link_ids[(dep, tid)] = LINK_ID_BASE + len(gui.dag_link_ids) + 1
        gui.dag_links[number] = (dep, tid)
    return ed.LinkId(number)


def _pins(ui: Ui, tickets: Sequence[Mapping[str, Any]]) -> dict[int, tuple[str, str]]:
    """Pin id -> (ticket id, "in" | "out") for the tickets shown (see task_dag.node_ids)."""
    out: dict[int, tuple[str, str]] = {}
    for ticket in tickets:
        tid = str(ticket.get("id"))
        base = ui.gui.dag_ids.get(tid)
        if base is not None:
            out[base + 1] = (tid, "in")
            out[base + 2] = (tid, "out")
    return out


def handle_new_links(ui: Ui, tickets: Sequence[Mapping[str, Any]]) -> None:
    """The create part of the node editor's protocol (between ``ed.begin`` and ``ed.end``)."""
    if not ed.begin_create(LINK_COLOR, 2.0):
        ui.gui.dag_created = None  # no drag (the confirming frame follows the release at once)
        return
    start, end = ed.PinId(), ed.PinId()
    if ed.query_new_link(start, end):
        pins = _pins(ui, tickets)
        first, second = pins.get(start.id()), pins.get(end.id())
        if first is not None and second is not None:
            _dragged(ui, tickets, first, second)
    ed.end_create()


def _dragged(
    ui: Ui, tickets: Sequence[Mapping[str, Any]], first: tuple[str, str], second: tuple[str, str]
) -> None:
    """A link dragged between two pins: hint while it hovers, apply at release."""
    gui = ui.gui
    if first[1] == second[1]:
        shape = "a link goes from a ticket's output (right) to another ticket's input (left)"
        dep = tid = ""
    else:
        (dep, _), (tid, _) = (first, second) if first[1] == "out" else (second, first)
        shape = f"{tid} cannot wait for itself" if dep == tid else ""
    if gui.dag_created is not None and gui.dag_created == (dep, tid):
        if ed.accept_new_item():  # the frame after the release: the editor confirms the link
            gui.dag_created = None
        return
    released = imgui.is_mouse_released(imgui.MouseButton_.left)
    if shape:
        ed.reject_new_item(REFUSED_COLOR, 2.0)
        imgui.set_tooltip(shape)
        if released:
            gui.toast("error", shape)
        return
    if released:
        if apply_link_edit(ui, dep, tid, "add"):
            ed.reject_new_item(REFUSED_COLOR, 2.0)
        else:
            gui.dag_created = (dep, tid)
            ed.accept_new_item()
        return
    problem = link_problem(tickets, dep, tid)
    if problem:
        ed.reject_new_item(REFUSED_COLOR, 2.0)
        imgui.set_tooltip(problem)
    else:
        imgui.set_tooltip(f"release: {tid} waits for {dep}")
        if ed.accept_new_item():  # released in a frame we did not see: apply now
            apply_link_edit(ui, dep, tid, "add")


def handle_deleted_links(ui: Ui) -> None:
    """The delete part of the protocol: each link the user deletes (Delete key) is removed
    through the action, or stays; nodes are never deleted here."""
    if ed.begin_delete():
        deleted = ed.LinkId()
        while ed.query_deleted_link(deleted):
            pair = ui.gui.dag_links.get(deleted.id())
            if pair is None or apply_link_edit(ui, pair[0], pair[1], "remove"):
                ed.reject_deleted_item()
            else:
                ed.accept_deleted_item()
        node = ed.NodeId()
        while ed.query_deleted_node(node):
            ed.reject_deleted_item()  # tickets are removed by replanning, not from the graph
    ed.end_delete()
