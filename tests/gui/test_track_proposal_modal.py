"""The Track Proposals modal in the real window: it opens when Tier 1 proposes, a title is
edited and a track rejected with its widgets, Accept all keeps the proposal Tier 2 failed on
(with the error shown), Later closes it, the dashboard reopens it, and accepting the rest
closes it."""

from __future__ import annotations

import json
from pathlib import Path

from imgui_bundle import imgui
from imgui_bundle.immapp import testing

from manual_slop.mma.bindings import mma_runtime
from manual_slop.mma.client import MMAServices
from tests.gui.conftest import frames_until
from tests.unit.mma.fake_client import Call, FakeTierClient, default_responder

MODAL = "//Track Proposals/**"
TRACKS = [
    {"title": "Login", "description": "the form", "priority": "high"},
    {"title": "Sessions", "description": "cookies", "priority": "medium"},
    {"title": "Docs", "description": "the readme", "priority": "low"},
]


def test_track_proposals_are_edited_rejected_kept_on_failure_and_accepted(
    make_controller, run_gui, artifacts: Path
) -> None:
    broken = {"Sessions": True}

    def respond(call: Call) -> str:
        if call.tier == "Tier 1":
            return json.dumps({"tracks": TRACKS})
        if call.tier == "Tier 2" and "Sessions" in call.message and broken["Sessions"]:
            return "not json"
        return default_responder(call)

    ctrl = make_controller()
    mma_runtime(ctrl).set_services(MMAServices(client=FakeTierClient(respond=respond)))
    ctrl.state.mma_epic_input = "User accounts"
    proposed = ctrl.state  # read live: the list is replaced as proposals change
    seen: dict[str, bool] = {}

    def test(ctx, app) -> None:
        ctx.yield_(5)
        ctrl.post_gui_task({"action": "click", "item": "btn_mma_plan_epic", "source": "hook"})
        frames_until(ctx, lambda: len(proposed.proposed_tracks) == 3, max_frames=2000)
        ctx.item_click(f"{MODAL}/##title0")
        ctx.key_press(imgui.Key.mod_ctrl | imgui.Key.a)
        ctx.key_chars("Login form")
        ctx.item_click(f"{MODAL}/##description0")  # leaving the title applies the edit
        frames_until(ctx, lambda: proposed.proposed_tracks[0]["title"] == "Login form")
        ctx.item_click(f"{MODAL}/Reject##2")
        frames_until(ctx, lambda: len(proposed.proposed_tracks) == 2)
        ctx.item_click(f"{MODAL}/Accept all")
        frames_until(ctx, lambda: proposed.mma_status == "idle" and len(proposed.proposed_tracks) == 1, 2000)
        ctx.yield_(3)
        seen["open_after_failure"] = ctx.item_exists(f"{MODAL}/##title0")
        testing.capture(ctx, str(artifacts / "modal_track_proposal.png"))
        broken["Sessions"] = False
        ctx.item_click(f"{MODAL}/Later")
        ctx.yield_(2)
        seen["closed_by_later"] = not ctx.item_exists(f"{MODAL}/##title0")
        app.focus("MMA Dashboard")
        ctx.yield_(2)
        ctx.item_click("//MMA Dashboard/Review proposals")  # below the fold: found by its path
        ctx.yield_(2)
        ctx.item_click(f"{MODAL}/Accept selected (1)")
        frames_until(ctx, lambda: proposed.mma_status == "idle" and not proposed.proposed_tracks, 2000)
        ctx.yield_(3)
        seen["closed_when_done"] = not ctx.item_exists(f"{MODAL}/##title0")

    run_gui(ctrl, test, size=(800, 500))  # a smaller window draws faster on software GL
    assert seen == {"open_after_failure": True, "closed_by_later": True, "closed_when_done": True}
    assert sorted(t["title"] for t in ctrl.fields.get("mma_tracks")) == ["Login form", "Sessions"]
    assert any("'Sessions' failed" in n.message for n in ctrl.state.notifications)
