"""Controls that follow the app's state, in the real window: the log views follow new
entries unless scrolled up; MMA buttons that cannot act are disabled and do not click;
Stop ends a running request as cancelled; the MMA step modal edits fields, not JSON text,
and can abort the track."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from imgui_bundle import ImVec2, imgui
from imgui_bundle.immapp import testing

from manual_slop.dialogs import Decision, MMAApprovalDialog
from tests.gui.conftest import decide_in_window, frames_until
from tests.integration.test_controller import FakeBackend


# -- following logs -------------------------------------------------------------------------
def _scroll_window(panel: str, table: str):
    """The scrolling child window of the table ``table`` in the panel ``panel``."""
    for window in imgui.get_current_context().windows:
        if window.name.startswith(f"{panel}/{table}"):
            return window
    raise AssertionError(f"no scroll window {table} in {panel}")


@pytest.mark.parametrize(
    ("panel", "table", "add"),
    [
        (
            "Comms Log",
            "##comms_table",
            lambda c, n: c.add_comms_entry({"kind": "request", "payload": f"#{n}"}),
        ),
        (
            "Tool Calls",
            "##tools_table",
            lambda c, n: c.add_tool_call({"tool": "read_file", "args": {"n": n}}),
        ),
    ],
)
def test_a_log_view_follows_new_entries_unless_scrolled_up(
    make_controller, run_gui, panel: str, table: str, add
) -> None:
    ctrl = make_controller()
    seen: dict[str, tuple[float, float]] = {}
    count = [0]

    def add_entries(ctx, n: int) -> None:
        for _ in range(n):  # a few per frame, as a busy conversation produces them
            add(ctrl, count[0])
            count[0] += 1
            if count[0] % 3 == 0:
                ctx.yield_()
        ctx.yield_(4)

    def scroll() -> tuple[float, float]:
        window = _scroll_window(panel, table)
        return window.scroll.y, window.scroll_max.y

    def test(ctx, app) -> None:
        ctx.yield_(5)
        app.focus(panel)
        ctx.yield_(3)
        add_entries(ctx, 60)
        seen["following"] = scroll()
        window = _scroll_window(panel, table)
        ctx.mouse_move_to_pos(ImVec2(window.pos.x + window.size.x / 2, window.pos.y + window.size.y / 2))
        ctx.mouse_wheel_y(4.0)  # the user scrolls up to read
        ctx.yield_(4)
        seen["scrolled_up"] = scroll()
        add_entries(ctx, 30)
        seen["stayed"] = scroll()
        ctx.mouse_wheel_y(-200.0)  # back to the bottom: following again
        ctx.yield_(4)
        add_entries(ctx, 30)
        seen["following_again"] = scroll()

    run_gui(ctrl, test)
    y, top = seen["following"]
    assert top > 0 and y == top  # at the newest entry
    y_up, top_up = seen["scrolled_up"]
    assert y_up < top_up
    y_stayed, top_stayed = seen["stayed"]
    assert top_stayed > top_up and y_stayed == y_up  # new entries arrived; the view did not move
    y_again, top_again = seen["following_again"]
    assert top_again > top_stayed and y_again == top_again


# -- disabled MMA controls ------------------------------------------------------------------------
RUN_CONTROLS = {"Pause": "btn_mma_pause", "Resume": "btn_mma_resume", "Abort": "btn_mma_abort"}


def _spy_on_actions(ctrl) -> list[str]:
    """Record every action the GUI invokes (and still run it)."""
    invoked: list[str] = []
    real = ctrl.actions.invoke

    def invoke(name, user_data=None, source="gui"):
        invoked.append(name)
        return real(name, user_data, source)

    ctrl.actions.invoke = invoke
    return invoked


def _click_at(ctx, path: str) -> None:
    """Move the mouse onto an item and press the button, as a user would (a disabled item
    is not hoverable, so the engine's own hover check is skipped)."""
    ctx.mouse_move(path, imgui.test_engine.TestOpFlags_.no_check_hovered_id)
    ctx.mouse_click(0)
    ctx.yield_(2)


def test_mma_run_controls_are_disabled_and_do_not_click_when_nothing_runs(
    make_controller, run_gui, artifacts: Path
) -> None:
    ctrl = make_controller()
    ctrl.state.mma_status = "idle"
    invoked = _spy_on_actions(ctrl)
    clicked: dict[str, list[str]] = {}

    def test(ctx, app) -> None:
        ctx.yield_(5)
        app.focus("MMA Dashboard")
        ctx.yield_(3)
        for label in (*RUN_CONTROLS, "Plan Epic"):  # no epic typed: Plan Epic cannot act either
            _click_at(ctx, f"**/{label}")
        clicked["idle"] = list(invoked)
        testing.capture(ctx, str(artifacts / "mma_controls_idle.png"), window="MMA Dashboard")
        ctrl.state.mma_status = "running"  # now Pause and Abort can act; Resume still not
        ctx.yield_(2)
        for label in RUN_CONTROLS:
            _click_at(ctx, f"**/{label}")
        clicked["running"] = list(invoked)

    run_gui(ctrl, test)
    assert clicked["idle"] == []
    # the same clicks reach enabled buttons (the runtime then refuses: no conductor exists here)
    assert clicked["running"] == ["btn_mma_pause", "btn_mma_abort"]


def test_mma_control_blockers_follow_the_status() -> None:
    from manual_slop.gui.panels.mma_dashboard import control_blockers

    def enabled(status: str, epic: str = "") -> set[str]:
        return {name for name, why in control_blockers(status, epic).items() if not why}

    assert enabled("idle") == {"btn_mma_accept_tracks", "btn_mma_start_track"}
    assert enabled("idle", "an epic") >= {"btn_mma_plan_epic"}
    assert {"btn_mma_pause", "btn_mma_abort", "btn_mma_abort_ticket"} <= enabled("running")
    assert "btn_mma_start_track" not in enabled("running") and "btn_mma_resume" not in enabled("running")
    assert {"btn_mma_resume", "btn_mma_abort"} <= enabled("paused") and "btn_mma_pause" not in enabled(
        "paused"
    )
    assert enabled("planning", "an epic") == set()


# -- Stop -----------------------------------------------------------------------------------------
def test_stop_is_enabled_only_while_a_request_runs_and_ends_it_cancelled(
    make_controller, run_gui, artifacts: Path
) -> None:
    gate = threading.Event()
    backend = FakeBackend(gate=gate)
    ctrl = make_controller(backend=backend)
    invoked = _spy_on_actions(ctrl)
    seen: dict[str, object] = {}

    def test(ctx, app) -> None:
        ctx.yield_(5)
        _click_at(ctx, "**/Stop")  # nothing runs: disabled
        seen["idle_clicks"] = list(invoked)
        ctx.item_click("**/##message")
        ctx.key_chars("tell me a long story")
        ctx.item_click("**/Gen + Send")
        frames_until(ctx, lambda: bool(backend.calls), max_frames=1000)  # the provider is answering
        request_id = ctrl.state.active_request_id
        _click_at(ctx, "**/Gen + Send")  # disabled while the request runs
        seen["while_running"] = list(invoked)
        ctx.item_click("**/Stop")
        frames_until(ctx, lambda: ctrl.state.ai_status == "cancelled", max_frames=1000)
        seen["request"] = ctrl.request_status(request_id)
        app.focus("Response")
        ctx.yield_(4)
        testing.capture(ctx, str(artifacts / "response_cancelled.png"))

    try:
        run_gui(ctrl, test)
    finally:
        gate.set()  # never leave the request thread waiting
    assert seen["idle_clicks"] == []
    assert seen["while_running"] == ["btn_gen_send"]  # the one click that sent; the second did nothing
    assert invoked == ["btn_gen_send", "btn_cancel_request"]
    assert seen["request"]["state"] == "cancelled"
    assert ctrl.state.ai_response.startswith("half an ans") and ctrl.state.ai_response.endswith("]")
    assert ctrl.state.active_request_id is None
    assert len(backend.calls) == 1


def test_a_cut_answer_is_split_from_its_mark() -> None:
    from manual_slop.gui.panels.response import split_cut

    assert split_cut("half an ans\n\n[cut: stopped by the user]") == ("half an ans", "stopped by the user")
    assert split_cut("[cut: shutdown]") == ("", "shutdown")
    assert split_cut("a [cut: x] in the middle") == ("a [cut: x] in the middle", None)


def test_a_fallback_answer_is_split_from_its_mark() -> None:
    from manual_slop.gui.panels.response import split_fallback

    told = "[answered by local / SmolLM2-135M-Instruct: anthropic has no API key]"
    assert split_fallback(f"{told}\n\nOffline, but here.") == ("Offline, but here.", told)
    assert split_fallback("An answer quoting [answered by x / y: z]") == (
        "An answer quoting [answered by x / y: z]",
        None,
    )


def test_the_response_panel_names_who_answered_and_a_fallback(
    make_controller, run_gui, artifacts: Path
) -> None:
    from manual_slop.ai import AIClient
    from tests.fakes import FakeLlamaServer

    llama = FakeLlamaServer(["Offline, but here."])
    ctrl = make_controller(backend=AIClient(local_engine_factory=lambda **kw: llama))
    ctrl.fields.set("current_provider", "anthropic")  # no key anywhere: the local model answers

    def test(ctx, app) -> None:
        ctx.yield_(5)
        ctx.item_click("**/##message")
        ctx.key_chars("hello?")
        ctx.item_click("**/Gen + Send")
        frames_until(ctx, lambda: ctrl.state.ai_status == "done", max_frames=2000)
        app.focus("Response")
        ctx.yield_(4)
        testing.capture(ctx, str(artifacts / "response_fallback.png"), window="Response")

    run_gui(ctrl, test)
    assert ctrl.state.ai_answered_by == "local / SmolLM2-135M-Instruct"
    assert ctrl.state.ai_response.startswith("[answered by local / SmolLM2-135M-Instruct: anthropic has no")


# -- the MMA step modal ----------------------------------------------------------------------------
STEP = {
    "tool": "edit_file",
    "args": {"path": "src/app.py", "old_string": "return 0", "new_string": "return 1", "replace_all": False},
    "preview": "--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-    return 0\n+    return 1\n",
}


def _decide_step(make_controller, run_gui, payload: str, act: Callable[[Any], None]) -> Decision | None:
    """Ask for approval of an MMA step with ``payload``; ``act(ctx)`` answers the open modal.
    Returns the dialog's decision."""
    return decide_in_window(make_controller(), run_gui, MMAApprovalDialog("T11", payload), act)


def test_the_mma_step_modal_edits_fields_and_approves_the_rebuilt_step(
    make_controller, run_gui, artifacts: Path
) -> None:
    def act(ctx) -> None:
        ctx.yield_(3)
        testing.capture(ctx, str(artifacts / "modal_mma_step_fields.png"))
        ctx.item_click("//Approve MMA Step/**/##args.new_string")
        ctx.key_press(imgui.Key.mod_ctrl | imgui.Key.a)
        ctx.key_chars("return 2")
        ctx.item_click("//Approve MMA Step/**/##args.replace_all")
        ctx.key_press(imgui.Key.mod_ctrl | imgui.Key.a)
        ctx.key_chars("true")
        ctx.item_click("//Approve MMA Step/Approve")

    decision = _decide_step(make_controller, run_gui, json.dumps(STEP, indent=2), act)
    assert decision is not None and decision.approved and decision.edited
    edited = json.loads(decision.payload["payload"])  # one JSON object again, not a string in JSON
    assert edited["args"] == {**STEP["args"], "new_string": "return 2", "replace_all": True}
    assert edited["tool"] == "edit_file" and edited["preview"] == STEP["preview"]


def test_abort_track_in_the_mma_step_modal_rejects_with_abort(make_controller, run_gui) -> None:
    def act(ctx) -> None:
        ctx.item_click("//Approve MMA Step/Abort Track")

    decision = _decide_step(make_controller, run_gui, json.dumps(STEP), act)
    assert decision is not None and decision.abort and not decision.approved and decision.decider == "gui"


def test_step_fields_round_trip_and_refuse_bad_json() -> None:
    from manual_slop.gui.modals.mma_step import rebuild, step_fields

    fields = step_fields(STEP)
    assert [f.label for f in fields] == [
        "args.path",
        "args.old_string",
        "args.new_string",
        "args.replace_all",
    ]
    assert [f.as_json for f in fields] == [False, False, False, True]
    assert rebuild(STEP, fields, {}) == STEP
    replan = {"replan": 1, "replaces": ["T2"], "tickets": [{"id": "T2b", "description": "x"}]}
    [tickets] = step_fields(replan)
    assert tickets.label == "tickets" and tickets.as_json
    assert rebuild(replan, [tickets], {"tickets": "[]"})["tickets"] == []
    with pytest.raises(ValueError, match="tickets is not valid JSON"):
        rebuild(replan, [tickets], {"tickets": "[{"})


def test_the_mma_dashboard_sets_how_tree_edits_are_approved(make_controller, run_gui) -> None:
    ctrl = make_controller()
    ctrl.state.mma_status = "idle"
    assert ctrl.fields.get("mma_worktree_approvals") == "ask"

    def test(ctx, app) -> None:
        ctx.yield_(5)
        app.focus("MMA Dashboard")
        ctx.yield_(3)
        ctx.item_click("//MMA Dashboard/Tree edits##worktree_approvals")
        ctx.yield_(2)
        ctx.item_click("//$FOCUSED/patch_only")
        ctx.yield_(3)

    run_gui(ctrl, test)
    assert ctrl.fields.get("mma_worktree_approvals") == "patch_only"
    assert ctrl.state.mma_settings["worktree_approvals"] == "patch_only"
