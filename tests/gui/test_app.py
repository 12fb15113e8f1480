"""The real window, in process, driven by the ImGui test engine."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from imgui_bundle import imgui
from imgui_bundle.immapp import testing

from manual_slop.ai import AIClient, RetryPolicy
from tests.fakes import Call, OpenAIFake, Reply
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


@pytest.fixture
def fake() -> Iterator[OpenAIFake]:
    with OpenAIFake() as server:
        yield server


def _shell_controller(make_controller, fake: OpenAIFake, script: str, answer: str):
    """The real AI client against a wire-level fake that asks to run ``script`` with run_shell."""
    ctrl = make_controller(
        backend=AIClient(retry=RetryPolicy(base_delay_s=0.01)), environ={"DEEPSEEK_API_KEY": "sk-gui"}
    )
    ctrl.fields.set("current_provider", "deepseek")
    ctrl.fields.set("provider_base_url", fake.base_url)
    fake.push(Reply("", [Call("run_shell", {"script": script})]), Reply(answer))
    ctrl.fields.set("ai_input", "tidy up please")
    ctrl.actions.invoke("btn_gen_send")
    return ctrl


def test_script_modal_edit_then_approve_runs_the_edited_script(
    make_controller, run_gui, artifacts, app_dir: Path, fake: OpenAIFake
) -> None:
    ctrl = _shell_controller(make_controller, fake, "echo original > out.txt", "Done.")

    def test(ctx, app) -> None:
        frames_until(ctx, lambda: bool(ctrl.state.pending_dialogs), max_frames=2000)
        assert not (app_dir / "out.txt").exists()  # nothing runs before the decision
        ctx.yield_(2)
        testing.capture(ctx, str(artifacts / "modal_confirm_script.png"))
        # The editor is a child window: click into it without requiring an item under the mouse.
        ctx.item_click(
            "//Confirm Script/##script_editor", 0, imgui.test_engine.TestOpFlags_.no_check_hovered_id
        )
        ctx.key_press(imgui.Key.mod_ctrl | imgui.Key.a)
        ctx.key_chars("echo edited > out.txt")
        ctx.item_click("//Confirm Script/Approve")
        frames_until(ctx, lambda: ctrl.state.ai_status == "done", max_frames=2000)

    run_gui(ctrl, test)
    assert (app_dir / "out.txt").read_text() == "edited\n"  # the edited script is what ran
    audit = ctrl.session_log.read("audit")[-1]
    assert (
        audit["decider"] == "gui"
        and audit["edited"]
        and audit["payload"]["script"].strip() == "echo edited > out.txt"
    )
    saved = list((ctrl.session_log.root / "scripts").iterdir())
    assert len(saved) == 1 and "echo edited" in saved[0].read_text()
    told = json.dumps(fake.model_calls()[1].body)
    assert "the user edited this call" in told and "echo edited > out.txt" in told  # the model knows


def test_script_modal_reject_runs_nothing(make_controller, run_gui, app_dir: Path, fake: OpenAIFake) -> None:
    ctrl = _shell_controller(make_controller, fake, "echo should-not-run > out.txt", "Understood.")

    def test(ctx, app) -> None:
        frames_until(ctx, lambda: bool(ctrl.state.pending_dialogs), max_frames=2000)
        ctx.item_click("//Confirm Script/##reason")
        ctx.key_chars("not now")
        ctx.item_click("//Confirm Script/Reject")
        frames_until(ctx, lambda: ctrl.state.ai_status == "done", max_frames=2000)

    run_gui(ctrl, test)
    assert not (app_dir / "out.txt").exists()
    told = json.dumps(fake.model_calls()[1].body)
    assert "REJECTED" in told and "not now" in told
    assert list((ctrl.session_log.root / "scripts").iterdir()) == []


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
    from imgui_bundle import imgui_node_editor as ed

    from manual_slop.gui.dag_layout import Rect
    from manual_slop.gui.panels.task_dag import node_ids

    ctrl = make_controller()
    tickets = _diamond()
    tickets[4]["description"] = "Rewrite the tokenizer so that it reports the line and column of every error"
    tickets[5]["blocked_reason"] = "waiting on a review of the grammar by someone who knows it well"
    ctrl.state.mma_tickets = tickets
    ctrl.state.active_track = {"id": "track-1", "title": "Demo track"}
    ctrl.state.mma_status = "running"
    ctrl.state.tier_usage = {"Tier 3": {"input": 1200, "output": 340, "model": "gemini-2.5-flash-lite"}}
    ctrl.state.proposed_tracks = [{"title": "Parser", "description": "Write the parser", "priority": "high"}]
    nodes: dict[str, Rect] = {}

    def test(ctx, app) -> None:
        ctx.yield_(5)
        app.focus("MMA Dashboard")
        ctx.yield_(5)
        testing.capture(ctx, str(artifacts / "panel_mma_dashboard.png"))
        app.focus("Task DAG")
        ctx.yield_(10)
        testing.capture(ctx, str(artifacts / "panel_task_dag.png"))
        assert ctrl.health()["healthy"], ctrl.health()
        ed.set_current_editor(app.gui.dag_editor)  # where the nodes really are, as drawn
        for ticket in tickets:
            node = node_ids(app.ui, ticket["id"])[0]
            pos, size = ed.get_node_position(node), ed.get_node_size(node)
            nodes[ticket["id"]] = Rect(pos.x, pos.y, size.x, size.y)

    run_gui(ctrl, test)
    assert all(r.w > 0 and r.h > 0 for r in nodes.values()), nodes  # every node was drawn
    for (a, ra), (b, rb) in itertools.combinations(nodes.items(), 2):
        assert not ra.intersects(rb), f"nodes {a} {ra} and {b} {rb} overlap"
    for ticket in tickets:  # layered by depth: every dependency left of its dependent
        for dep in ticket["depends_on"]:
            assert nodes[dep].right < nodes[ticket["id"]].x, (dep, ticket["id"])
    assert nodes["T0"].right < nodes["T10"].x and nodes["T30"].right < nodes["TZ"].x


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


def test_a_closed_window_frees_its_app_and_the_controller_state_it_drew(make_controller, run_gui) -> None:
    """The runner params hold the App's callbacks in C++, out of the collector's sight: unless they
    are released when the window closes, every closed App (and the state it drew) stays alive."""
    import gc
    import weakref

    seen: list[weakref.ref] = []
    ctrl = make_controller()
    run_gui(ctrl, lambda ctx, app: (seen.append(weakref.ref(app)), ctx.yield_(3)))
    gc.collect()
    assert len(seen) == 1
    assert seen[0]() is None, "the closed App is still referenced: " + repr(
        [type(r).__name__ for r in gc.get_referrers(seen[0]())][:8]
    )


def test_mma_dashboard_plans_accepts_starts_and_shows_tickets_finishing(
    make_controller, run_gui, artifacts: Path, fake: OpenAIFake
) -> None:
    ctrl = make_controller(
        backend=AIClient(retry=RetryPolicy(base_delay_s=0.01)), environ={"DEEPSEEK_API_KEY": "sk-gui"}
    )
    ctrl.fields.set("current_provider", "deepseek")
    ctrl.fields.set("provider_base_url", fake.base_url)
    plan = {"tracks": [{"title": "Parser", "description": "Parse the config", "priority": "high"}]}
    tickets = {
        "tickets": [
            {"id": "p1", "description": "Tokenize", "depends_on": []},
            {"id": "p2", "description": "Build the tree", "depends_on": ["p1"]},
        ]
    }
    fake.push(
        Reply(json.dumps(plan)), Reply(json.dumps(tickets)), Reply("Done: tokens."), Reply("Done: tree.")
    )
    statuses: list[list[str]] = []

    def ticket_states() -> list[str]:
        return [t["status"] for t in ctrl.state.mma_tickets]

    def test(ctx, app) -> None:
        ctx.yield_(5)
        app.focus("MMA Dashboard")
        ctx.yield_(3)
        ctx.item_click("**/##epic")
        ctx.key_chars("Read our config files")
        ctx.item_click("**/Plan Epic")
        frames_until(ctx, lambda: bool(ctrl.state.proposed_tracks), max_frames=2000)
        ctx.item_click("//Track Proposals/**/Accept selected (1)")  # the modal opened for them
        frames_until(ctx, lambda: len(ctrl.fields.get("mma_tracks")) == 1 and ctrl.state.mma_status == "idle")
        track_id = ctrl.fields.get("mma_tracks")[0]["id"]
        ctx.item_click(f"**/Start##{track_id}")
        for _ in range(2):
            frames_until(ctx, lambda: bool(ctrl.state.pending_dialogs), max_frames=2000)
            statuses.append([*ticket_states(), str(len(fake.model_calls()))])
            ctx.item_click("//Approve Worker Spawn/Approve")
            frames_until(ctx, lambda: not ctrl.state.pending_dialogs, max_frames=2000)
        frames_until(ctx, lambda: ctrl.state.mma_status == "done", max_frames=3000)
        app.focus("Task DAG")
        ctx.yield_(5)
        testing.capture(ctx, str(artifacts / "mma_flow_done.png"))

    run_gui(ctrl, test)
    # At each spawn dialog the worker has not called the model yet (2 planning calls, then 3).
    assert statuses[0][1:] == ["todo", "2"]
    assert statuses[1][0] == "completed" and statuses[1][2] == "3"
    assert ticket_states() == ["completed", "completed"]
    assert ctrl.state.mma_epic_input == "Read our config files"
