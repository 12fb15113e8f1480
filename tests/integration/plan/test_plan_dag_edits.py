"""DAG edits through ``POST /api/mma/tickets/{id}/depends_on``: on a plan's track (groups run in
order, so the group barrier stays and links point only to earlier groups; the plan file follows
the edit) and on an epic's track (add, remove, replace; cycles, unknown ids and running or
finished tickets refused, nothing changed)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from manual_slop.mma.models import Ticket, TicketStatus, Track
from manual_slop.mma.persistence import TrackStore
from tests.fakes import OpenAIFake, Reply
from tests.integration.hooks.conftest import HookApp, HookAppFactory, wait_until
from tests.integration.plan.conftest import PLAN, plan_reply
from tests.integration.plan.test_plan_e2e import wait_plan
from tests.integration.plan.test_plan_failures import executed
from tests.integration.plan.test_plan_flow import (
    ENDED,
    plan_app,
    plan_file,
    respond,
    start_plan,
    wait_dialog,
    wait_file,
)

FOUR = copy.deepcopy(PLAN)
FOUR["subtasks"].append(
    {"id": "S4", "title": "Document", "objective": "Document the routes for users",
     "agent_key": "architect", "engine": "llm", "parallel_group": 3, "depends_on": ["S2"]}
)  # fmt: skip


def edit(app: HookApp, ticket_id: str, **body: Any) -> tuple[int, Any]:
    reply = app.call("POST", f"/api/mma/tickets/{ticket_id}/depends_on", body)
    return reply.status, reply.body


def refused(app: HookApp, ticket_id: str, **body: Any) -> str:
    status, reply = edit(app, ticket_id, **body)
    assert status == 400, reply
    return reply["error"]["message"]


def tickets(api: Any) -> dict[str, list[str]]:
    return {t["id"]: t["depends_on"] for t in api.mma_status()["tickets"]}


def file_deps(app: HookApp, plan_id: str) -> dict[str, list[str]]:
    return {s["id"]: s["depends_on"] for s in plan_file(app, plan_id)["subtasks"]}


def test_dag_edits_of_a_plan_keep_the_group_order(hook_app_factory: HookAppFactory, fake: OpenAIFake) -> None:
    app, api = plan_app(hook_app_factory, fake)
    fake.responder = respond({
        "planner": plan_reply(FOUR), "subtask:S1": Reply("S1 done", delay=2.5),
        "subtask:S2": Reply("S2 done"), "subtask:S3": Reply("S3 done"), "subtask:S4": Reply("S4 done"),
        "merge": Reply("Merged."),
    })  # fmt: skip
    plan_id = start_plan(app, "Build a tiny REST API")
    api.approve(wait_dialog(api, plan_id)["id"])
    wait_until(lambda: executed(fake, "S1") == 1, timeout=10.0)
    api.wait_for_task(api.click("btn_mma_pause"))
    before = {"S1": [], "S2": ["S1"], "S3": ["S1"], "S4": ["S2", "S3"]}
    assert tickets(api) == before  # S4 declared S2; S3 is its group barrier

    message = refused(app, "S1", depends_on=[])  # running
    assert "S1 is in_progress" in message and "waiting ticket" in message
    message = refused(app, "S4", remove=["S3"])
    assert message.startswith("subtask S4: groups run in order") and "S3" in message
    assert "[rule: dependency_order]" in message
    assert "groups run in order" in refused(app, "S4", depends_on=["S2"])
    message = refused(app, "S2", add=["S3"])  # same group
    assert "group 2 but would depend on S3 in group 2" in message and "[rule: dependency_order]" in message
    message = refused(app, "S2", add=["S4"])  # a later group
    assert "would depend on S4 in group 3" in message and "[rule: dependency_order]" in message
    assert tickets(api) == before  # nothing changed

    status, reply = edit(app, "S4", add=["S1"])  # an earlier group: accepted
    assert status == 200, reply
    assert reply["track_id"] == plan_id and reply["ticket"]["depends_on"] == ["S2", "S3", "S1"]
    wait_until(lambda: tickets(api)["S4"] == ["S2", "S3", "S1"], timeout=5.0)  # the dashboard follows
    wait_until(lambda: file_deps(app, plan_id)["S4"] == ["S2", "S1"], timeout=5.0)  # the barrier is implied

    api.wait_for_task(api.click("btn_mma_resume"))
    plan = wait_plan(api, plan_id, ENDED)
    assert plan["status"] == "done", plan["metadata"]
    s4 = next(s for s in plan["subtasks"] if s["id"] == "S4")
    assert s4["depends_on"] == ["S2", "S1"]
    assert wait_file(app, plan_id, "done")["subtasks"][3]["depends_on"] == ["S2", "S1"]
    message = refused(app, "S4", remove=["S1"])  # finished tickets keep their links
    assert "S4 is completed" in message
    assert file_deps(app, plan_id)["S4"] == ["S2", "S1"]


def epic_track(base: Path) -> None:
    TrackStore(base).save(
        Track(
            "epic_1", "Epic", "goal",
            tickets=[
                Ticket("a", "done", status=TicketStatus.COMPLETED, result="a done"),
                Ticket("b", "after a", depends_on=["a"]),
                Ticket("c", "after b", depends_on=["b"]),
                Ticket("d", "free"),
            ],
        )
    )  # fmt: skip


def stored(base: Path) -> dict[str, list[str]]:
    return {t.id: list(t.depends_on) for t in TrackStore(base).load("epic_1").tickets}


def test_dag_edits_of_an_epic_track(hook_app_factory: HookAppFactory, app_dir: Path) -> None:
    epic_track(app_dir)
    app = hook_app_factory()
    api = app.client()
    assert tickets(api) == {"a": [], "b": ["a"], "c": ["b"], "d": []}

    status, reply = edit(app, "d", add=["a"])
    assert status == 200 and reply["ticket"]["depends_on"] == ["a"] and reply["track_id"] == "epic_1"
    assert stored(app_dir)["d"] == ["a"] and tickets(api)["d"] == ["a"]
    status, reply = edit(app, "d", remove=["a"])
    assert status == 200 and reply["ticket"]["depends_on"] == []
    status, reply = edit(app, "c", depends_on=["a", "d"], track_id="epic_1")  # replace the list
    assert status == 200 and reply["ticket"]["depends_on"] == ["a", "d"]
    assert stored(app_dir) == {"a": [], "b": ["a"], "c": ["a", "d"], "d": []}

    edit(app, "c", depends_on=["b"])
    message = refused(app, "b", add=["c"])
    assert "cycle" in message and "b -> c -> b" in message
    assert "cannot depend on itself" in refused(app, "c", add=["c"])
    assert "has no ticket zzz" in refused(app, "b", add=["zzz"])
    assert "does not depend on d" in refused(app, "b", remove=["d"])
    assert "a is completed" in refused(app, "a", depends_on=["d"])
    assert "no ticket 'nope'" in refused(app, "nope", add=["a"])
    assert "either depends_on" in refused(app, "b", depends_on=["a"], add=["d"])
    assert stored(app_dir) == {"a": [], "b": ["a"], "c": ["b"], "d": []}  # refusals changed nothing
    assert tickets(api) == {"a": [], "b": ["a"], "c": ["b"], "d": []}
