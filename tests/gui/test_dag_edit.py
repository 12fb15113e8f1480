"""Editing the Task DAG with the mouse: a link dragged from one ticket's output pin to another's
input makes the second wait for the first; a cycle is refused (the graph stays, the reason is
shown); a link selected and deleted with the Delete key is removed. Every edit goes through
``btn_mma_set_dependencies`` and is saved with the track."""

from __future__ import annotations

from pathlib import Path

from imgui_bundle import ImVec2, imgui
from imgui_bundle import imgui_node_editor as ed
from imgui_bundle.immapp import testing

from manual_slop.gui.dag_edit import link_problem
from manual_slop.gui.panels.task_dag import PIN, node_ids
from tests.gui.conftest import frames_until

TRACK_ID = "dag_edit_demo"


def _track(ctrl) -> None:
    """Three tickets on the dashboard: T2 waits for T1, T3 for nothing."""
    from manual_slop.mma.models import Ticket, Track

    tickets = [
        Ticket("T1", "Design the schema"),
        Ticket("T2", "Write the routes", depends_on=["T1"]),
        Ticket("T3", "Write the tests"),
    ]
    track = Track(TRACK_ID, "Edit links", tickets=tickets)
    ctrl.mma.store().save(track)
    ctrl.mma.add_track(track)
    ctrl.state.active_track = track.summary()
    ctrl.state.mma_tickets = [t.to_dict() for t in track.tickets]


def _deps(ctrl) -> dict[str, list[str]]:
    return {t["id"]: list(t["depends_on"]) for t in ctrl.state.mma_tickets}


def _saved_deps(ctrl) -> dict[str, list[str]]:
    track = next(t for t in ctrl.mma.store().load_all()[0] if t.id == TRACK_ID)
    return {t.id: list(t.depends_on) for t in track.tickets}


def _pin(app, tid: str, side: str) -> ImVec2:
    """The screen position of a ticket's input ("in") or output ("out") pin, as drawn."""
    ed.set_current_editor(app.gui.dag_editor)
    node = node_ids(app.ui, tid)[0]
    pos, size = ed.get_node_position(node), ed.get_node_size(node)
    padding = ed.get_style().node_padding  # x left, y top, z right, w bottom
    half = imgui.calc_text_size(PIN).x / 2
    y = pos.y + padding.y + imgui.get_text_line_height() / 2
    x = pos.x + padding.x + half if side == "in" else pos.x + size.x - padding.z - half
    return ed.canvas_to_screen(ImVec2(x, y))


def _drag(ctx, start: ImVec2, end: ImVec2) -> None:
    ctx.mouse_move_to_pos(start)
    ctx.yield_(2)
    ctx.mouse_down(0)
    ctx.yield_(2)
    middle = ImVec2((start.x + end.x) / 2, (start.y + end.y) / 2 + 20)
    ctx.mouse_move_to_pos(middle)
    ctx.yield_(2)
    ctx.mouse_move_to_pos(end)
    ctx.yield_(3)
    ctx.mouse_up(0)
    ctx.yield_(4)


def test_links_are_added_refused_and_deleted_with_the_mouse(
    make_controller, run_gui, artifacts: Path
) -> None:
    ctrl = make_controller()
    _track(ctrl)
    seen: dict[str, object] = {}

    def settle(ctx) -> None:
        ctx.yield_(8)  # a changed graph is laid out again and zoomed to fit over two frames

    def test(ctx, app) -> None:
        ctx.yield_(5)
        app.focus("Task DAG")
        settle(ctx)
        # T2's output to T3's input: T3 waits for T2
        _drag(ctx, _pin(app, "T2", "out"), _pin(app, "T3", "in"))
        frames_until(ctx, lambda: _deps(ctrl)["T3"] == ["T2"], 60)
        settle(ctx)
        testing.capture(ctx, str(artifacts / "dag_edit_linked.png"), window="Task DAG")
        # T3's output to T1's input would close T1 -> T2 -> T3 -> T1: refused, nothing changes
        before = _deps(ctrl)
        _drag(ctx, _pin(app, "T3", "out"), _pin(app, "T1", "in"))
        settle(ctx)
        seen["after_cycle"] = _deps(ctrl)
        seen["before_cycle"] = before
        seen["toasts"] = [t.message for t in app.gui.toasts]
        testing.capture(ctx, str(artifacts / "dag_edit_cycle_refused.png"), window="Task DAG")
        # select the link T1 -> T2 by clicking it, then Delete
        start, end = _pin(app, "T1", "out"), _pin(app, "T2", "in")
        ctx.mouse_move_to_pos(ImVec2((start.x + end.x) / 2, (start.y + end.y) / 2))
        ctx.yield_(2)
        ctx.mouse_click(0)
        ctx.yield_(2)
        ed.set_current_editor(app.gui.dag_editor)
        seen["selected"] = [link.id() for link in ed.get_selected_links()]
        ctx.key_press(imgui.Key.delete)
        frames_until(ctx, lambda: _deps(ctrl)["T2"] == [], 60)
        settle(ctx)

    run_gui(ctrl, test)
    assert seen["before_cycle"] == seen["after_cycle"] == {"T1": [], "T2": ["T1"], "T3": ["T2"]}
    toasts = seen["toasts"]
    assert any("link T3 -> T1" in t and "cycle" in t for t in toasts), toasts  # type: ignore[union-attr]
    assert len(seen["selected"]) == 1  # type: ignore[arg-type]
    assert _deps(ctrl) == {"T1": [], "T2": [], "T3": ["T2"]}
    assert _saved_deps(ctrl) == {"T1": [], "T2": [], "T3": ["T2"]}  # saved with the track


def test_the_local_hint_names_self_links_duplicates_busy_tickets_and_cycles() -> None:
    tickets = [
        {"id": "A", "status": "completed", "depends_on": []},
        {"id": "B", "status": "todo", "depends_on": ["A"]},
        {"id": "C", "status": "todo", "depends_on": ["B"]},
        {"id": "D", "status": "in_progress", "depends_on": []},
    ]
    assert link_problem(tickets, "B", "B") == "B cannot wait for itself"
    assert link_problem(tickets, "A", "B") == "B already waits for A"
    assert "only a waiting ticket" in link_problem(tickets, "A", "D")
    assert link_problem(tickets, "C", "B") == "that would be a cycle: B -> C -> B"
    assert link_problem(tickets, "A", "C") == ""
    assert link_problem(tickets, "X", "C") == "no ticket X in this track"
