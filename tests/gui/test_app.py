"""The real window, in process, driven by the ImGui test engine."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

from imgui_bundle import imgui
from imgui_bundle.immapp import testing

from manual_slop.dialogs import ConfirmDialog
from tests.gui.conftest import frames_until
from tests.integration.test_controller import FakeBackend


def test_gen_send_shows_the_response(make_controller, run_gui, artifacts: Path) -> None:
    ctrl = make_controller(backend=FakeBackend(reply="**Hello** from the fake provider"))

    def test(ctx, app) -> None:
        ctx.item_click("**/##message")
        ctx.key_chars("hi there")
        ctx.item_click("**/Gen + Send")
        frames_until(ctx, lambda: ctrl.state.ai_status == "done")
        ctx.yield_(3)
        testing.capture(ctx, str(artifacts / "gen_send.png"))

    run_gui(ctrl, test)
    assert ctrl.state.ai_response == "**Hello** from the fake provider"
    assert [e["content"] for e in ctrl.state.discussion_entries()] == [
        "hi there",
        "**Hello** from the fake provider",
    ]
    assert (artifacts / "gen_send.png").stat().st_size > 10_000


def _worker_running_approved_script(ctrl, dialog: ConfirmDialog, outcome: list) -> threading.Thread:
    """Stands in for the shell tool: asks the clutch, then runs exactly what was approved."""

    def work() -> None:
        decision = ctrl.request_approval(dialog, timeout=60)
        if decision.approved:
            subprocess.run(
                ["bash", "-c", decision.payload["script"]], cwd=dialog.payload["base_dir"], timeout=10
            )
        outcome.append(decision)

    thread = threading.Thread(target=work)
    thread.start()
    return thread


def test_script_modal_edit_then_approve_runs_the_edited_script(
    make_controller, run_gui, artifacts, tmp_path
) -> None:
    ctrl = make_controller()
    dialog = ConfirmDialog("echo original > out.txt", str(tmp_path))
    outcome: list = []
    worker = _worker_running_approved_script(ctrl, dialog, outcome)

    def test(ctx, app) -> None:
        frames_until(ctx, lambda: bool(ctrl.state.pending_dialogs))
        ctx.yield_(2)
        testing.capture(ctx, str(artifacts / "modal_confirm_script.png"))
        # The editor is a child window: click into it without requiring an item under the mouse.
        ctx.item_click(
            "//Confirm Script/##script_editor", 0, imgui.test_engine.TestOpFlags_.no_check_hovered_id
        )
        ctx.key_press(imgui.Key.mod_ctrl | imgui.Key.a)
        ctx.key_chars("echo edited > out.txt")
        ctx.item_click("//Confirm Script/Approve")
        frames_until(ctx, lambda: not ctrl.state.pending_dialogs)

    run_gui(ctrl, test)
    worker.join(10)
    assert outcome[0].approved and outcome[0].decider == "gui"
    assert outcome[0].payload["script"].strip() == "echo edited > out.txt"
    assert (tmp_path / "out.txt").read_text() == "edited\n"


def test_script_modal_reject_runs_nothing(make_controller, run_gui, tmp_path) -> None:
    ctrl = make_controller()
    dialog = ConfirmDialog("echo should-not-run > out.txt", str(tmp_path))
    outcome: list = []
    worker = _worker_running_approved_script(ctrl, dialog, outcome)

    def test(ctx, app) -> None:
        frames_until(ctx, lambda: bool(ctrl.state.pending_dialogs))
        ctx.item_click("//Confirm Script/Reject")
        frames_until(ctx, lambda: not ctrl.state.pending_dialogs)

    run_gui(ctrl, test)
    worker.join(10)
    assert outcome[0].approved is False
    assert not (tmp_path / "out.txt").exists()


def test_command_palette_runs_an_action(make_controller, run_gui) -> None:
    ctrl = make_controller()

    def test(ctx, app) -> None:
        ctx.key_press(imgui.Key.mod_ctrl | imgui.Key.mod_shift | imgui.Key.p)
        frames_until(ctx, lambda: app.gui.palette_open)
        ctx.key_chars("new discussion")
        ctx.key_press(imgui.Key.enter)
        frames_until(ctx, lambda: "discussion_1" in ctrl.state.discussions)

    run_gui(ctrl, test)
    assert ctrl.state.active_discussion == "discussion_1"


def test_hiding_a_panel_is_saved_in_the_config(make_controller, run_gui, app_dir) -> None:
    ctrl = make_controller()

    def test(ctx, app) -> None:
        ctx.yield_(10)  # the docking layout is applied during the first frames
        app.toggle("Comms Log")
        frames_until(ctx, lambda: ctrl.state.show_windows.get("Comms Log") is False)

    run_gui(ctrl, test)
    ctrl.flush()
    import tomllib

    saved = tomllib.loads((app_dir / "config.toml").read_text())
    assert saved["gui"]["show_windows"]["Comms Log"] is False


def test_a_failing_panel_marks_the_app_unhealthy_but_keeps_running(make_controller, run_gui) -> None:
    from manual_slop.gui import app as app_module
    from manual_slop.gui.panels import Panel

    ctrl = make_controller()

    def broken(ui) -> None:
        raise RuntimeError("IM_ASSERT(simulated)")

    def setup(app) -> None:
        window = app_module.hello_imgui.DockableWindow()
        window.label = "Broken"
        window.dock_space_name = "MainDockSpace"
        window.gui_function = app._guarded(Panel("Broken", "broken", broken, "MainDockSpace"))
        app.runner_params.docking_params.dockable_windows = [
            *app.runner_params.docking_params.dockable_windows,
            window,
        ]

    seen: list = []

    def test(ctx, app) -> None:
        frames_until(ctx, lambda: not ctrl.health()["healthy"])
        seen.append(ctrl.health())
        start = ctrl.perf.frames
        frames_until(ctx, lambda: ctrl.perf.frames > start + 5)  # frames keep coming

    run_gui(ctrl, test, setup=setup)
    assert "IM_ASSERT(simulated)" in seen[0]["degraded_reason"]


def _diamond(n_layers: int = 4) -> list[dict]:
    """A diamond-shaped ticket DAG: one root, wide middle layers, one sink."""
    tickets = [{"id": "T0", "description": "root", "status": "completed", "depends_on": []}]
    previous = ["T0"]
    statuses = ["completed", "in_progress", "todo", "blocked", "killed"]
    for layer in range(1, n_layers):
        current = []
        for k in range(3):
            tid = f"T{layer}{k}"
            tickets.append(
                {
                    "id": tid,
                    "description": f"work item {tid}",
                    "status": statuses[(layer + k) % len(statuses)],
                    "depends_on": list(previous),
                    "retry_count": k,
                    "blocked_reason": "waiting on review" if (layer + k) % 5 == 3 else None,
                }
            )
            current.append(tid)
        previous = current
    tickets.append({"id": "TZ", "description": "sink", "status": "todo", "depends_on": previous})
    return tickets


def test_mma_dashboard_and_dag_render_ticket_states(make_controller, run_gui, artifacts) -> None:
    from manual_slop.gui.panels.task_dag import depth_layout

    ctrl = make_controller()
    tickets = _diamond()
    ctrl.state.mma_tickets = tickets
    ctrl.state.active_track = {"id": "track-1", "title": "Demo track"}
    ctrl.state.mma_status = "running"
    ctrl.state.tier_usage = {"Tier 3": {"input": 1200, "output": 340, "model": "gemini-2.5-flash-lite"}}
    ctrl.state.proposed_tracks = [{"title": "Parser", "description": "Write the parser", "priority": "high"}]

    def test(ctx, app) -> None:
        ctx.yield_(5)
        app.focus("MMA Dashboard")
        ctx.yield_(5)
        testing.capture(ctx, str(artifacts / "panel_mma_dashboard.png"))
        app.focus("Task DAG")
        ctx.yield_(10)
        testing.capture(ctx, str(artifacts / "panel_task_dag.png"))
        assert ctrl.health()["healthy"], ctrl.health()

    run_gui(ctrl, test)
    layout = depth_layout(tickets)
    assert layout["T0"] == (0, 0) and layout["TZ"][0] == 4
    assert {layout[f"T2{k}"][0] for k in range(3)} == {2}


def test_after_the_window_closes_a_broken_pipe_is_an_exception_not_a_crash(make_controller, run_gui) -> None:
    """A library of the window leaves a SIGPIPE handler in unloaded code; it must not survive."""
    import socket

    run_gui(make_controller(), lambda ctx, app: ctx.yield_(3))
    left, right = socket.socketpair()
    right.close()
    try:
        with __import__("pytest").raises(BrokenPipeError):
            for _ in range(10):
                left.sendall(b"x" * 65536)
    finally:
        left.close()
