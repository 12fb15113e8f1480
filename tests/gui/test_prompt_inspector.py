"""The Prompt Inspector in the real window: a message sent with Gen + Send (the real AI client
against the wire-level fake, one tool call) shows up as a run; picking the run, its second
request and then sections with the mouse shows exactly what was sent — the same sections and
token estimates the Hook API serves — and the response."""

from __future__ import annotations

from pathlib import Path

import pytest
from imgui_bundle.immapp import testing

from manual_slop.ai import AIClient, RetryPolicy
from manual_slop.governance.run_files import read_run, request_view
from manual_slop.governance.run_log import RUNS_DIR
from manual_slop.gui.panels.prompt_inspector import InspectorState
from tests.fakes import Call, OpenAIFake, Reply
from tests.gui.conftest import frames_until

PANEL = "//Prompt Inspector"
SECTIONS = f"{PANEL}/##request_view/##sections"


@pytest.mark.heavy(20)  # seconds here, alone on two cores
def test_the_inspector_shows_a_request_of_a_run_section_by_section(
    make_controller, run_gui, artifacts: Path
) -> None:
    with OpenAIFake() as fake:
        ctrl = make_controller(
            backend=AIClient(retry=RetryPolicy(base_delay_s=0.01)),
            environ={"DEEPSEEK_API_KEY": "sk-inspector-0123456789"},
        )
        (ctrl.base_dir() / "notes.txt").write_text("the inspector's notes\n")
        ctrl.fields.set("current_provider", "deepseek")
        ctrl.fields.set("provider_base_url", fake.base_url)
        ctrl.fields.set("project_files", ["notes.txt"])
        fake.push(
            Reply("", [Call("read_file", {"path": "notes.txt"})]), Reply("They are the inspector's notes.")
        )
        seen: dict[str, object] = {}

        def state(app) -> InspectorState:
            return app.gui.inspector

        def test(ctx, app) -> None:
            app.focus("Prompt Inspector")
            ctx.yield_(3)
            seen["empty"] = ctx.item_exists(f"{PANEL}/##runs")
            ctx.item_click("**/##message")
            ctx.key_chars("what do the notes say?")
            ctx.item_click("**/Gen + Send")
            frames_until(ctx, lambda: ctrl.state.ai_status == "done", max_frames=2000)
            app.focus("Prompt Inspector")
            frames_until(
                ctx, lambda: [r["outcome"] for r in state(app).runs] == ["answered"], max_frames=2000
            )
            run_id = state(app).runs[0]["id"]
            ctx.item_click(f"{PANEL}/##runs/{run_id}/##pick")
            frames_until(ctx, lambda: state(app).records_read_for[0] == run_id, max_frames=2000)
            ctx.yield_(2)
            ctx.item_click(f"{PANEL}/##requests/###request2")
            frames_until(ctx, lambda: state(app).view is not None)
            seen["first_section"] = state(app).section
            ctx.item_click(f"{SECTIONS}/###section2")  # message 1 · user
            ctx.yield_(2)
            seen["user_lines"] = list(state(app).text.lines)
            sections = state(app).view["sections"]
            ctx.item_click(f"{SECTIONS}/###section{len(sections)}")  # the response
            ctx.yield_(2)
            seen["response_lines"] = list(state(app).text.lines)
            ctx.item_click(f"{SECTIONS}/###section3")  # message 2 · assistant: the call
            ctx.yield_(3)
            testing.capture(ctx, str(artifacts / "panel_prompt_inspector.png"), window="Prompt Inspector")
            seen["call_lines"] = list(state(app).text.lines)
            seen["view"] = state(app).view
            seen["run_id"] = run_id
            # from the Comms Log: the run's second request opens in the inspector
            app.focus("Comms Log")
            state(app).request, state(app).run_id = 0, ""
            requests = [i for i, e in enumerate(ctrl.state.comms_log) if e.get("kind") == "request"]
            second = ctrl.state.comms_log[requests[1]]
            ctx.yield_(2)
            ctx.item_click(f"//Comms Log/##comms_table/{second['seq']}##comms{requests[1]}")
            ctx.yield_(2)
            ctx.item_click("//Comms Log/Inspect this request")
            frames_until(ctx, lambda: state(app).request == 2 and state(app).run_id == run_id)
            seen["from_comms"] = (second.get("run_id"), state(app).request)

        run_gui(ctrl, test)
    assert seen["from_comms"] == (seen["run_id"], 2)
    assert seen["empty"] is False  # no runs yet: a note instead of the table
    [path] = (ctrl.session_log.root / RUNS_DIR).glob("*.jsonl")
    assert path.stem == seen["run_id"]
    assert seen["view"] == request_view(read_run(path), 2)  # what /api/runs/{id}/requests/2 serves
    names = [s["name"] for s in seen["view"]["sections"]]  # type: ignore[index]
    assert names[:5] == ["system", "context", "message 1 · user", "message 2 · assistant", "message 3 · tool"]
    assert seen["first_section"] == "system"
    assert seen["user_lines"] == ["what do the notes say?"]
    assert seen["call_lines"][0].startswith('-> read_file({"path": "notes.txt"})')  # type: ignore[index]
    assert seen["response_lines"][0] == "They are the inspector's notes."  # type: ignore[index]
    assert seen["response_lines"][-1].startswith("-- stop: stop")  # type: ignore[index]
