"""/plan over the Hook API, beyond the happy path: the planner's one correction round, plans that
stay invalid, the approval (reject, edit, an edit that breaks a rule), the judge, and ``/plan``'s
own refusals. The real AI client talks, as DeepSeek, to the wire-level fake OpenAI-compatible
server, which answers by content (``respond``); every Hook API reply is checked against
/openapi.json."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from manual_slop.hooks.errors import BadRequest, HookTaskFailed
from manual_slop.plan.model import Plan
from manual_slop.plan.store import PlanStore
from tests.fakes import OpenAIFake, Recorded, Reply, Turn
from tests.integration.hooks.conftest import HookApp, HookAppFactory, deepseek_app
from tests.integration.plan.conftest import ARCHITECT, CODER, PLAN, last_user, phase_of, plan_reply, text_of
from tests.integration.plan.test_plan_e2e import wait_plan

ENDED = {"done", "failed", "aborted", "invalid", "rejected"}


# -- helpers shared by the plan flow tests (other modules import them) ---------------------------
def phase(request: Recorded) -> str:
    """:func:`phase_of`, plus ``replan`` for the planner's request after a subtask failed."""
    found = phase_of(request)
    if found == "other" and last_user(request).startswith("A subtask of the plan for this goal failed"):
        return "replan"
    return found


def respond(answers: dict[str, Any]) -> Callable[[Recorded], Turn | None]:
    """A responder: ``answers`` maps a phase (``planner``, ``replan``, ``merge``, ``judge``) or
    ``subtask:<id>`` to a Turn, or to a list of Turns used in order (the last one repeats)."""
    used: dict[str, int] = {}

    def answer(request: Recorded) -> Turn | None:
        key = phase(request)
        if key == "execution":
            key = "subtask:" + last_user(request).split("Subtask ", 1)[1].split(":", 1)[0]
        found = answers.get(key)
        if isinstance(found, list):
            index = used.get(key, 0)
            used[key] = index + 1
            found = found[min(index, len(found) - 1)]
        return found

    return answer


def plan_app(factory: HookAppFactory, fake: OpenAIFake, *, judge: str = "off") -> tuple[HookApp, Any]:
    """An app planning with the fake (as DeepSeek), the fixture agents ``architect`` and ``coder``."""
    app, api = deepseek_app(factory, fake.base_url)
    for key, body in (("architect", ARCHITECT), ("coder", CODER)):
        assert app.call("PUT", f"/api/agents/{key}", body).status == 200
    api.wait_for_task(api.set_value("plan_judge", judge))
    return app, api


def start_plan(app: HookApp, goal: str) -> str:
    reply = app.call("POST", "/api/plan", {"goal": goal})
    assert reply.status == 200, reply.body
    return reply.body["plan_id"]


def wait_dialog(api: Any, plan_id: str, timeout: float = 30.0) -> dict[str, Any]:
    """The mma_step dialog of ``plan_id`` (its proposal or a replan) once it is pending."""
    deadline = time.monotonic() + timeout
    while True:
        for dialog in api.pending():
            if dialog["kind"] == "mma_step" and dialog["payload"]["ticket_id"] == plan_id:
                return dialog
        assert time.monotonic() < deadline, f"no mma_step dialog for {plan_id} within {timeout} s"
        time.sleep(0.02)


def plan_file(app: HookApp, plan_id: str) -> dict[str, Any]:
    return json.loads((Path(app.ctrl.base_dir()) / "conductor" / "plans" / f"{plan_id}.json").read_text())


def wait_file(app: HookApp, plan_id: str, status: str, timeout: float = 5.0) -> dict[str, Any]:
    """The plan file once it says ``status`` (the API shows a running plan's live state, which
    may be a moment ahead of its file)."""
    deadline = time.monotonic() + timeout
    while True:
        data = plan_file(app, plan_id)
        if data["status"] == status:
            return data
        assert time.monotonic() < deadline, f"the plan file stayed {data['status']}, not {status}"
        time.sleep(0.02)


def calls_by_phase(fake: OpenAIFake) -> dict[str, list[Recorded]]:
    by_phase: dict[str, list[Recorded]] = {}
    for call in fake.model_calls():
        by_phase.setdefault(phase(call), []).append(call)
    return by_phase


def counts(fake: OpenAIFake) -> dict[str, int]:
    return {key: len(value) for key, value in calls_by_phase(fake).items()}


def wait_event(api: Any, event_type: str, needle: str, timeout: float = 10.0) -> dict[str, Any]:
    """The first event of ``event_type`` whose message contains ``needle``."""
    return api.wait_for_event(event_type, lambda p: needle in str(p.get("message", "")), timeout=timeout)


def two_step_plan() -> dict[str, Any]:
    """S1 (architect, group 1) then S2 (coder, group 2, after S1)."""
    plan = copy.deepcopy(PLAN)
    plan["subtasks"] = plan["subtasks"][:2]
    return plan


# -- the planner's correction round ------------------------------------------------------------------
def test_an_invalid_first_answer_gets_one_correction_and_the_second_answer_runs(
    hook_app_factory: HookAppFactory, fake: OpenAIFake
) -> None:
    app, api = plan_app(hook_app_factory, fake)
    bad = copy.deepcopy(PLAN)
    bad["subtasks"][0]["agent_key"] = "wizard"  # unknown agent
    bad["subtasks"][0]["parallel_group"] = 2  # S1 <-> S2: a cycle
    bad["subtasks"][0]["depends_on"] = ["S2"]
    fake.responder = respond({
        "planner": [plan_reply(bad), plan_reply()],
        "subtask:S1": Reply("S1 done"), "subtask:S2": Reply("S2 done"), "subtask:S3": Reply("S3 done"),
        "merge": Reply("Merged."),
    })  # fmt: skip
    plan_id = start_plan(app, "Build a tiny REST API")
    dialog = wait_dialog(api, plan_id)

    first, second = calls_by_phase(fake)["planner"]
    correction = last_user(second)
    assert correction.startswith("Your plan was rejected")
    assert "subtask S1: agent_key 'wizard' names no available agent" in correction
    assert "[rule: unknown_agent]" in correction
    assert "[rule: cycle]" in correction and "S1 → S2 → S1" in correction
    # the correction goes back in the same conversation: the planner sees its own first answer
    assert "You are the task planner" in text_of(second) and '"wizard"' in text_of(second)
    assert "You are the task planner" in last_user(first)

    shown = json.loads(dialog["payload"]["payload"])
    assert shown["subtasks"][0]["agent_key"] == "architect"  # the corrected plan is proposed
    api.approve(dialog["id"])
    plan = wait_plan(api, plan_id, ENDED)
    assert plan["status"] == "done", plan["metadata"]
    assert counts(fake) == {"planner": 2, "execution": 3, "merge": 1}
    assert plan_file(app, plan_id)["metadata"]["usage"]["planner"]["input_tokens"] > 0


def test_two_invalid_answers_leave_the_plan_invalid_and_nothing_runs(
    hook_app_factory: HookAppFactory, fake: OpenAIFake
) -> None:
    app, api = plan_app(hook_app_factory, fake)
    bad = copy.deepcopy(PLAN)
    bad["subtasks"][0]["agent_key"] = "wizard"
    bad["subtasks"][2]["depends_on"] = ["S9"]
    worse = copy.deepcopy(bad)
    worse["subtasks"][1]["engine"] = "smolagent"
    fake.responder = respond({"planner": [plan_reply(bad), plan_reply(worse)], "merge": Reply("never")})
    api.discard_events()
    plan_id = start_plan(app, "Build a tiny REST API")
    plan = wait_plan(api, plan_id, ENDED)

    assert plan["status"] == "invalid"
    errors = plan["metadata"]["errors"]
    assert len(errors) == 3  # every issue of the second answer
    assert any("subtask S1" in e and "[rule: unknown_agent]" in e for e in errors)
    assert any("subtask S2" in e and "'smolagent'" in e and "[rule: unknown_engine]" in e for e in errors)
    assert any("subtask S3" in e and "'S9'" in e and "[rule: dangling_dependency]" in e for e in errors)
    assert '"smolagent"' in plan["metadata"]["planner_reply"]  # the answer as given, kept
    event = wait_event(api, "error", plan_id)
    message = event["payload"]["message"]
    assert "is invalid; nothing runs" in message and "[rule: unknown_engine]" in message
    time.sleep(0.3)  # give a (wrong) proposal or run the time to show up
    assert api.pending() == []
    assert counts(fake) == {"planner": 2}  # no execution, merge or judge call
    assert plan_file(app, plan_id)["status"] == "invalid"
    assert plan_id not in [t["id"] for t in api.get_value("mma_tracks")]  # no track was made for it
    summary = next(p for p in api.get("/api/plans")["plans"] if p["id"] == plan_id)
    assert summary["status"] == "invalid"


def test_a_reply_without_json_is_invalid_with_a_shape_issue(
    hook_app_factory: HookAppFactory, fake: OpenAIFake
) -> None:
    app, api = plan_app(hook_app_factory, fake)
    fake.responder = respond({"planner": Reply("I would rather not plan this, sorry.")})
    plan_id = start_plan(app, "Build a tiny REST API")
    plan = wait_plan(api, plan_id, ENDED)
    assert plan["status"] == "invalid"
    (error,) = plan["metadata"]["errors"]
    assert error.startswith("plan: ") and "no JSON object" in error and error.endswith("[rule: shape]")
    correction = last_user(calls_by_phase(fake)["planner"][1])
    assert "no JSON object" in correction and "[rule: shape]" in correction
    assert api.pending() == [] and counts(fake) == {"planner": 2}


# -- the approval --------------------------------------------------------------------------------------
def test_rejecting_the_proposal_runs_nothing(hook_app_factory: HookAppFactory, fake: OpenAIFake) -> None:
    app, api = plan_app(hook_app_factory, fake)
    fake.responder = respond({"planner": plan_reply(), "merge": Reply("never")})
    plan_id = start_plan(app, "Build a tiny REST API")
    api.reject(wait_dialog(api, plan_id)["id"], reason="not now")
    plan = wait_plan(api, plan_id, ENDED)
    assert plan["status"] == "rejected" and "not now" in plan["metadata"]["rejected"]
    time.sleep(0.3)
    assert counts(fake) == {"planner": 1} and api.pending() == []
    assert all(s["status"] == "pending" for s in plan_file(app, plan_id)["subtasks"])
    assert plan_id not in [t["id"] for t in api.get_value("mma_tracks")]


def test_an_edited_proposal_is_what_runs(hook_app_factory: HookAppFactory, fake: OpenAIFake) -> None:
    app, api = plan_app(hook_app_factory, fake)
    fake.responder = respond({
        "planner": plan_reply(),
        "subtask:S1": Reply("S1 done"), "subtask:S2": Reply("S2 done"), "subtask:S3": Reply("S3 done"),
        "merge": Reply("Merged."),
    })  # fmt: skip
    plan_id = start_plan(app, "Build a tiny REST API")
    dialog = wait_dialog(api, plan_id)
    edited = json.loads(dialog["payload"]["payload"])
    edited["subtasks"] = [s for s in edited["subtasks"] if s["id"] != "S3"]  # drop S3
    edited["subtasks"][1]["objective"] = "Code ONLY the GET route, nothing else"
    edited["merge"]["strategy"] = "Just the route"
    api.approve(dialog["id"], {"payload": json.dumps(edited)})
    plan = wait_plan(api, plan_id, ENDED)

    assert plan["status"] == "done", plan["metadata"]
    assert [s["id"] for s in plan["subtasks"]] == ["S1", "S2"]
    assert plan["metadata"]["edited"] is True and plan["merge"]["strategy"] == "Just the route"
    execution = calls_by_phase(fake)["execution"]
    asked = [last_user(c) for c in execution]
    assert len(asked) == 2 and not any("Subtask S3" in a for a in asked)
    s2 = next(a for a in asked if "Subtask S2" in a)
    assert "Objective: Code ONLY the GET route, nothing else" in s2
    merge = last_user(calls_by_phase(fake)["merge"][0])
    assert "MERGE STRATEGY: Just the route" in merge and "S3 (" not in merge
    assert [t["id"] for t in api.mma_status()["tickets"]] == ["S1", "S2"]


def test_an_edit_that_breaks_a_rule_leaves_the_plan_invalid(
    hook_app_factory: HookAppFactory, fake: OpenAIFake
) -> None:
    app, api = plan_app(hook_app_factory, fake)
    fake.responder = respond({"planner": plan_reply(), "merge": Reply("never")})
    plan_id = start_plan(app, "Build a tiny REST API")
    dialog = wait_dialog(api, plan_id)
    edited = json.loads(dialog["payload"]["payload"])
    edited["subtasks"][0]["depends_on"] = ["S1"]  # S1 depends on itself
    api.approve(dialog["id"], {"payload": json.dumps(edited)})
    plan = wait_plan(api, plan_id, ENDED)
    assert plan["status"] == "invalid"
    assert any("subtask S1" in e and "[rule: cycle]" in e for e in plan["metadata"]["errors"])
    time.sleep(0.3)
    assert counts(fake) == {"planner": 1} and api.pending() == []
    assert plan_file(app, plan_id)["status"] == "invalid"
    assert plan_id not in [t["id"] for t in api.get_value("mma_tracks")]


def test_an_edit_that_is_not_json_leaves_the_plan_invalid(
    hook_app_factory: HookAppFactory, fake: OpenAIFake
) -> None:
    app, api = plan_app(hook_app_factory, fake)
    fake.responder = respond({"planner": plan_reply(), "merge": Reply("never")})
    plan_id = start_plan(app, "Build a tiny REST API")
    api.approve(wait_dialog(api, plan_id)["id"], {"payload": '{"subtasks": [ oops'})
    plan = wait_plan(api, plan_id, ENDED)
    assert plan["status"] == "invalid" and "not JSON" in plan["metadata"]["errors"][0]
    assert counts(fake) == {"planner": 1}


# -- the judge --------------------------------------------------------------------------------------
def test_a_judge_answer_that_is_not_json_is_reported_and_the_plan_is_still_done(
    hook_app_factory: HookAppFactory, fake: OpenAIFake
) -> None:
    app, api = plan_app(hook_app_factory, fake, judge="deepseek")
    fake.responder = respond({
        "planner": plan_reply(two_step_plan()),
        "subtask:S1": Reply("S1 done"), "subtask:S2": Reply("S2 done"),
        "merge": Reply("Merged."), "judge": Reply("Looks great to me, ten out of ten!"),
    })  # fmt: skip
    plan_id = start_plan(app, "Build a tiny REST API")
    api.approve(wait_dialog(api, plan_id)["id"])
    plan = wait_plan(api, plan_id, ENDED)
    assert plan["status"] == "done"
    assert "no JSON object" in plan["metadata"]["judge_error"]
    assert "judge" not in plan["metadata"]
    assert counts(fake) == {"planner": 1, "execution": 2, "merge": 1, "judge": 1}
    on_disk = wait_file(app, plan_id, "done")
    assert "no JSON object" in on_disk["metadata"]["judge_error"]


def test_judge_off_makes_no_judge_call(hook_app_factory: HookAppFactory, fake: OpenAIFake) -> None:
    app, api = plan_app(hook_app_factory, fake, judge="off")
    fake.responder = respond({
        "planner": plan_reply(two_step_plan()),
        "subtask:S1": Reply("S1 done"), "subtask:S2": Reply("S2 done"),
        "merge": Reply("Merged."), "judge": Reply('{"score": 9, "verdict": "good", "reasons": ["x"]}'),
    })  # fmt: skip
    plan_id = start_plan(app, "Build a tiny REST API")
    api.approve(wait_dialog(api, plan_id)["id"])
    plan = wait_plan(api, plan_id, ENDED)
    assert plan["status"] == "done"
    assert "judge" not in plan["metadata"] and "judge_error" not in plan["metadata"]
    assert counts(fake) == {"planner": 1, "execution": 2, "merge": 1}


# -- /plan's own refusals ----------------------------------------------------------------------------
def test_slash_plan_without_a_goal_is_refused_and_starts_nothing(
    hook_app_factory: HookAppFactory, fake: OpenAIFake
) -> None:
    app, api = plan_app(hook_app_factory, fake)
    for message in ("/plan", "/plan    "):
        with pytest.raises(BadRequest, match=r"/plan needs a goal: /plan <what to build>"):
            api.send(message)
    with pytest.raises(BadRequest, match="needs a goal"):
        api.send("/plan \n\t ")
    with pytest.raises(HookTaskFailed, match="needs a goal"):
        api.wait_for_task(api.click("btn_plan_start", "   "))
    assert api.get("/api/plans")["plans"] == []
    assert not (Path(app.ctrl.base_dir()) / "conductor" / "plans").exists()
    assert fake.model_calls() == []


def test_a_goal_over_4000_characters_is_refused(hook_app_factory: HookAppFactory, fake: OpenAIFake) -> None:
    app, api = plan_app(hook_app_factory, fake)
    with pytest.raises(BadRequest, match="the goal is 4,001 characters; at most 4,000"):
        api.send("/plan " + "g" * 4001)
    with pytest.raises(HookTaskFailed, match="the goal is 4,001 characters; at most 4,000"):
        api.wait_for_task(api.click("btn_plan_start", "g" * 4001))
    assert app.call("POST", "/api/plan", {"goal": "g" * 4001}).status == 400
    assert api.get("/api/plans")["plans"] == [] and fake.model_calls() == []
    assert not (Path(app.ctrl.base_dir()) / "conductor" / "plans").exists()


def test_the_api_says_why_a_long_goal_is_refused(hook_app_factory: HookAppFactory) -> None:
    app = hook_app_factory()
    reply = app.call("POST", "/api/plan", {"goal": "word " * 1000})  # 5,000 characters
    message = reply.body["error"]["message"]
    # refused by the request schema (maxLength); the reply must say why, not only quote the goal
    assert reply.status == 400 and message.startswith("body.goal: ")
    assert "too long" in message or "at most" in message, message[-120:]


def test_a_second_plan_while_one_is_being_planned_is_refused(
    hook_app_factory: HookAppFactory, fake: OpenAIFake
) -> None:
    app, api = plan_app(hook_app_factory, fake)
    fake.responder = respond({"planner": Reply("Here:\n" + json.dumps(PLAN), delay=1.5)})
    first = start_plan(app, "Build a tiny REST API")
    with pytest.raises(BadRequest, match=f"plan {first} is still being planned; wait for its proposal"):
        api.send("/plan Build another thing")
    reply = app.call("POST", "/api/plan", {"goal": "Build another thing"})
    assert reply.status == 400 and "still being planned" in reply.body["error"]["message"]
    assert [p["id"] for p in api.get("/api/plans")["plans"]] == [first]
    api.reject(wait_dialog(api, first)["id"])
    assert wait_plan(api, first, ENDED)["status"] == "rejected"


# -- what the API shows and what the plan file says -----------------------------------------------
def test_when_the_api_says_done_the_plan_file_says_done(
    hook_app_factory: HookAppFactory, fake: OpenAIFake, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Like MMA's conductor ("save first: whoever sees the new state finds the files written"): a
    client that sees a plan done, then reads its file or acts on it (btn_plan_propose reads the file),
    finds it done. A slow disk (each plan file write takes 0.2 s) makes the order visible."""
    save = PlanStore.save

    def slow_save(self: PlanStore, plan: Plan) -> Path:
        time.sleep(0.2)
        return save(self, plan)

    monkeypatch.setattr(PlanStore, "save", slow_save)
    app, api = plan_app(hook_app_factory, fake)
    fake.responder = respond({
        "planner": plan_reply(two_step_plan()),
        "subtask:S1": Reply("S1 done"), "subtask:S2": Reply("S2 done"), "merge": Reply("Merged."),
    })  # fmt: skip
    plan_id = start_plan(app, "Build a tiny REST API")
    api.approve(wait_dialog(api, plan_id)["id"])
    deadline = time.monotonic() + 30.0
    while (shown := api.get(f"/api/plans/{plan_id}")["plan"]["status"]) not in ENDED:
        assert time.monotonic() < deadline, shown
    on_disk = plan_file(app, plan_id)  # read at once
    assert (shown, on_disk["status"]) == ("done", "done")
    assert on_disk["metadata"]["merge_result_path"]


def test_while_a_proposal_waits_a_new_plan_is_refused_with_a_true_reason(
    hook_app_factory: HookAppFactory, fake: OpenAIFake
) -> None:
    app, api = plan_app(hook_app_factory, fake)
    fake.responder = respond({"planner": plan_reply()})
    first = start_plan(app, "Build a tiny REST API")
    dialog = wait_dialog(api, first)
    reply = app.call("POST", "/api/plan", {"goal": "Build another thing"})
    if reply.status == 400:  # refusing is fine, but not with "still being planned; wait for its proposal"
        message = reply.body["error"]["message"]
        assert "approval" in message and "still being planned" not in message, message
    else:
        assert reply.status == 200
        second = reply.body["plan_id"]
        api.reject(wait_dialog(api, second)["id"])
    api.reject(dialog["id"])
    assert wait_plan(api, first, ENDED)["status"] == "rejected"
