"""The acceptance line "one test per validation rule, each message naming the subtask and the rule",
checked against :data:`RULES` itself (a new rule without a case here fails), plus what
test_validate.py leaves out: the ``files`` type check and a replan's ``done`` subtasks."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from manual_slop.plan.model import PlanError
from manual_slop.plan.planner import request_plan
from manual_slop.plan.validate import RULES, PlanInvalid, build_plan, validate_plan

AGENTS = {"architect", "coder"}
ENGINES: dict[str, str | None] = {"llm": None, "aider": "the aider executable is not on PATH"}


def sub(sid: Any, group: Any = 1, depends_on: Any = None, **kw: Any) -> dict[str, Any]:
    return {
        "id": sid, "title": f"title {sid}", "objective": f"objective {sid}", "agent_key": "coder",
        "engine": "llm", "parallel_group": group, "depends_on": depends_on if depends_on is not None else [],
        **kw,
    }  # fmt: skip


def reply(*subtasks: dict[str, Any]) -> dict[str, Any]:
    return {"subtasks": list(subtasks), "merge": {"strategy": "combine"}}


def without(item: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k != key}


# rule -> (a reply breaking only that rule, the label its message starts with, done ids)
CASES: dict[str, tuple[Callable[[], Any], str, tuple[str, ...]]] = {
    "shape": (lambda: {"subtasks": [sub("S1")]}, "plan", ()),
    "required": (lambda: reply(sub("S1"), without(sub("S2", 2, ["S1"]), "title")), "subtask S2", ()),
    "type": (lambda: reply(sub("S1", files="app.py")), "subtask S1", ()),
    "id_format": (lambda: reply(sub("S 1")), "subtask 'S 1'", ()),
    "duplicate_id": (lambda: reply(sub("S1"), sub("S1", 2)), "subtask S1", ()),
    "unknown_agent": (lambda: reply(sub("S1", agent_key="wizard")), "subtask S1", ()),
    "unknown_engine": (lambda: reply(sub("S1", engine="smolagent")), "subtask S1", ()),
    "engine_unavailable": (lambda: reply(sub("S1", engine="aider")), "subtask S1", ()),
    "group_integer": (lambda: reply(sub("S1", 2.5)), "subtask S1", ()),
    "dangling_dependency": (lambda: reply(sub("S1"), sub("S2", 2, ["S7"])), "subtask S2", ("S0",)),
    "cycle": (lambda: reply(sub("S1", 1, ["S1"])), "subtask S1", ()),
    "dependency_order": (lambda: reply(sub("S1"), sub("S2", 1, ["S1"])), "subtask S2", ()),
    "too_many_subtasks": (lambda: reply(*(sub(f"S{i}") for i in range(1, 5))), "plan", ()),
}


def test_every_rule_has_a_case() -> None:
    assert set(CASES) == set(RULES)


@pytest.mark.parametrize("rule", list(RULES))
def test_each_rule_names_its_subtask_and_itself(rule: str) -> None:
    make, label, done = CASES[rule]
    issues = validate_plan(make(), agents=AGENTS, engines=ENGINES, max_subtasks=3, done=done)
    assert [i.rule for i in issues] == [rule], issues
    (issue,) = issues
    assert issue.message.startswith(f"{label}: ")
    assert issue.message.endswith(f" [rule: {rule}]")
    assert (issue.subtask is None) == (label == "plan")
    with pytest.raises(PlanInvalid) as caught:  # and building refuses it with the same message
        build_plan(make(), plan_id="p1", goal="g", agents=AGENTS, engines=ENGINES, max_subtasks=3, done=done)
    assert str(caught.value) == issue.message


def _issues(data: Any, done: tuple[str, ...] = ()) -> list[tuple[str, str | None]]:
    issues = validate_plan(data, agents=AGENTS, engines=ENGINES, max_subtasks=5, done=done)
    return [(i.rule, i.subtask) for i in issues]


# -- files ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("files", ["app.py", ["app.py", 3], {"app.py": True}, 7])
def test_files_must_be_a_list_of_paths(files: Any) -> None:
    issues = validate_plan(reply(sub("S1", files=files)), agents=AGENTS, engines=ENGINES, max_subtasks=5)
    assert [(i.rule, i.subtask) for i in issues] == [("type", "S1")]
    assert '"files" must be a list of project paths (strings)' in issues[0].message


def test_files_reach_the_subtask() -> None:
    assert _issues(reply(sub("S1", files=["app.py", "tests/test_app.py"]))) == []
    assert _issues(reply(sub("S1", files=None))) == []  # null: none
    plan = build_plan(
        reply(sub("S1", files=["app.py"]), sub("S2", 2)), plan_id="p1", goal="g", agents=AGENTS,
        engines=ENGINES, max_subtasks=5,
    )  # fmt: skip
    assert plan.subtask("S1").files == ["app.py"] and plan.subtask("S2").files == []


def test_other_type_errors_name_the_field() -> None:
    issues = validate_plan(
        reply(sub(5), sub("S2", 2, engine=["llm"]), sub("S3", 2, tools=[1])),
        agents=AGENTS, engines=ENGINES, max_subtasks=5,
    )  # fmt: skip
    assert [(i.rule, i.subtask) for i in issues] == [("type", "#1"), ("type", "S2"), ("type", "S3")]
    assert issues[0].message.startswith('subtask #1: "id" must be a string, got int')
    assert '"engine" must be a string, got list' in issues[1].message
    assert '"tools" must be a list of tool names' in issues[2].message


# -- a replan's done subtasks ----------------------------------------------------------------------
def test_a_replan_may_depend_on_done_subtasks_from_any_group() -> None:
    data = reply(sub("S4", 1, ["S1", "S2"]), sub("S5", 2, ["S4", "S1"]))
    assert _issues(data, done=("S1", "S2")) == []
    assert _issues(data) == [("dangling_dependency", "S4"), ("dangling_dependency", "S4"),
                             ("dangling_dependency", "S5")]  # fmt: skip
    plan = build_plan(
        data, plan_id="p1", goal="g", agents=AGENTS, engines=ENGINES, max_subtasks=5, done=("S1", "S2")
    )
    assert plan.subtask("S4").depends_on == ["S1", "S2"]


def test_a_replan_must_not_reuse_a_done_id() -> None:
    issues = validate_plan(
        reply(sub("S1", 1), sub("S5", 2, ["S1"])), agents=AGENTS, engines=ENGINES, max_subtasks=5,
        done=("S1",),
    )  # fmt: skip
    assert [(i.rule, i.subtask) for i in issues] == [("duplicate_id", "S1")]
    assert issues[0].message.startswith("subtask S1: the id 'S1' belongs to a subtask kept from the plan")


def test_a_replan_still_reports_dependencies_on_unknown_ids() -> None:
    assert _issues(reply(sub("S4", 1, ["S1", "S9"])), done=("S1",)) == [("dangling_dependency", "S4")]


# -- the correction round ------------------------------------------------------------------------------
def test_request_plan_sends_every_issue_back_once() -> None:
    answers = iter(['{"subtasks": [], "merge": {"strategy": "x"}}', '{"subtasks": [{"id": "S1"}]}'])
    asked: list[str] = []

    def ask(message: str) -> str:
        asked.append(message)
        return next(answers)

    def validate(data: Any) -> list[Any]:
        return validate_plan(data, agents=AGENTS, engines=ENGINES, max_subtasks=5)

    with pytest.raises(PlanInvalid) as caught:
        request_plan(ask, "plan it", validate)
    assert len(asked) == 2 and asked[0] == "plan it"
    assert asked[1].startswith("Your plan was rejected") and '"subtasks" list' in asked[1]
    rules = [i.rule for i in caught.value.issues]
    # no merge; S1 lacks title, objective, agent_key, engine, parallel_group and depends_on
    assert rules == ["shape"] + ["required"] * 6
    assert caught.value.reply == '{"subtasks": [{"id": "S1"}]}'
    assert isinstance(caught.value, PlanError)


def test_request_plan_turns_a_reply_without_json_into_a_shape_issue() -> None:
    asked: list[str] = []

    def ask(message: str) -> str:
        asked.append(message)
        return "no plan today" if len(asked) == 1 else '{"subtasks": [' + json.dumps(sub("S1")) + "],"

    with pytest.raises(PlanInvalid) as caught:
        request_plan(ask, "plan it", lambda data: [])
    assert "contains no JSON object: 'no plan today'" in asked[1] and "[rule: shape]" in asked[1]
    (issue,) = caught.value.issues
    assert issue.rule == "shape" and issue.subtask is None and "does not decode" in issue.message
