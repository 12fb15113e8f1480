"""The planner's reply: finding its JSON, one test per validation rule, building the plan."""

from __future__ import annotations

import json
from typing import Any

import pytest

from manual_slop.plan.model import PlanError, PlanStatus, SubtaskStatus
from manual_slop.plan.validate import (
    RULES,
    PlanInvalid,
    PlanIssue,
    build_plan,
    issues_text,
    parse_plan_reply,
    validate_plan,
)

AGENTS = {"architect", "coder"}
ENGINES: dict[str, str | None] = {"llm": None, "aider": "the aider executable is not on PATH"}


def _sub(sid: str, group: int = 1, depends_on: list[str] | None = None, **kw: Any) -> dict[str, Any]:
    return {
        "id": sid, "title": f"title {sid}", "objective": f"objective {sid}", "agent_key": "architect",
        "engine": "llm", "parallel_group": group, "depends_on": depends_on or [], **kw,
    }  # fmt: skip


def _reply(*subtasks: dict[str, Any]) -> dict[str, Any]:
    """S1 in group 1, S2 and S3 in group 2 depending on S1 unless other subtasks are given."""
    chosen = subtasks or (_sub("S1"), _sub("S2", 2, ["S1"]), _sub("S3", 2, ["S1"], engine="llm"))
    return {"subtasks": list(chosen), "merge": {"strategy": "Combine the results"}}


def _issues(data: Any, max_subtasks: int = 5) -> list[PlanIssue]:
    return validate_plan(data, agents=AGENTS, engines=ENGINES, max_subtasks=max_subtasks)


def _one(data: Any, rule: str, subtask: str | None, *, label: str = "", max_subtasks: int = 5) -> PlanIssue:
    """The only issue of ``data``, checked to have ``rule``, name ``subtask`` (shown as ``label``)
    and end with the rule's tag."""
    issues = _issues(data, max_subtasks)
    assert [(i.rule, i.subtask) for i in issues] == [(rule, subtask)], issues
    issue = issues[0]
    assert issue.message.startswith(f"subtask {label or subtask}: " if subtask else "plan: ")
    assert issue.message.endswith(f" [rule: {rule}]")
    return issue


# -- finding the JSON ----------------------------------------------------------------------------
def test_parse_plain_json() -> None:
    assert parse_plan_reply(json.dumps(_reply())) == _reply()


def test_parse_fenced_json_with_prose_around() -> None:
    text = f"Here is the plan:\n\n```json\n{json.dumps(_reply(), indent=2)}\n```\nGood luck {{you}}!"
    assert parse_plan_reply(text) == _reply()


def test_parse_prefers_the_object_with_subtasks() -> None:
    text = f'Each subtask looks like {{"id": "S1"}}. The plan:\n```\n{json.dumps(_reply())}\n```'
    assert parse_plan_reply(text) == _reply()
    assert parse_plan_reply('I think {"answer": 42} is it') == {"answer": 42}


def test_parse_without_json_names_the_problem_and_shows_the_reply_start() -> None:
    text = "I cannot plan this goal, sorry. " * 10
    with pytest.raises(PlanError, match=r"contains no JSON object: 'I cannot plan this goal") as caught:
        parse_plan_reply(text)
    shown = str(caught.value).split(": ", 1)[1]
    assert len(shown) < 90 and shown.endswith("…'")


def test_parse_broken_json_names_the_decode_error() -> None:
    with pytest.raises(PlanError, match=r"does not decode \(Expecting .* at line 2 column \d+\): '```json"):
        parse_plan_reply('```json\n{"subtasks": [}\n```')


def test_parse_a_cut_off_reply_fails_instead_of_returning_a_subtask() -> None:
    complete = json.dumps(_reply(), indent=2)
    with pytest.raises(PlanError, match=r"does not decode"):
        parse_plan_reply(complete[: complete.index('"merge"')])


# -- one test per rule -----------------------------------------------------------------------------
def test_rule_table_is_the_documented_one() -> None:
    assert list(RULES) == [
        "shape", "required", "type", "id_format", "duplicate_id", "unknown_agent", "unknown_engine",
        "engine_unavailable", "group_integer", "dangling_dependency", "cycle", "dependency_order",
        "too_many_subtasks",
    ]  # fmt: skip
    assert all(isinstance(text, str) and text and "\n" not in text for text in RULES.values())


def test_a_valid_reply_has_no_issues() -> None:
    assert _issues(_reply()) == []


def test_rule_shape() -> None:
    _one([_sub("S1")], "shape", None)
    _one({"subtasks": [], "merge": {"strategy": "x"}}, "shape", None)
    _one({"subtasks": [_sub("S1")], "merge": {"steps": []}}, "shape", None)
    _one({**_reply(_sub("S1")), "subtasks": [_sub("S1"), "S2"]}, "shape", "#2")


def test_rule_required() -> None:
    data = _reply(_sub("S1"), _sub("S2", 2, ["S1"]))
    data["subtasks"][1]["objective"] = "   "
    issue = _one(data, "required", "S2")
    assert '"objective" is required' in issue.message
    data["subtasks"][1]["objective"] = "o"
    del data["subtasks"][1]["depends_on"]
    assert '"depends_on" is required' in _one(data, "required", "S2").message
    data["subtasks"][1]["depends_on"] = []
    del data["subtasks"][1]["id"]
    assert '"id" is required' in _one(data, "required", "#2").message


def test_rule_type() -> None:
    issue = _one(_reply(_sub("S1", depends_on="S0")), "type", "S1")  # type: ignore[arg-type]
    assert '"depends_on" must be a list' in issue.message
    _one(_reply(_sub("S1", tools="grep")), "type", "S1")
    _one(_reply(_sub("S1", tools=["grep", 3])), "type", "S1")
    _one(_reply(_sub("S1", notes=["n"])), "type", "S1")
    _one(_reply(_sub("S1", title=7)), "type", "S1")


def test_rule_id_format() -> None:
    issue = _one(_reply(_sub("step 1")), "id_format", "step 1", label="'step 1'")
    assert "the id 'step 1' is not valid" in issue.message


def test_rule_duplicate_id() -> None:
    issue = _one(_reply(_sub("S1"), _sub("S2", 2), _sub("S1", 2)), "duplicate_id", "S1")
    assert "(#1, #3)" in issue.message


def test_rule_unknown_agent() -> None:
    issue = _one(_reply(_sub("S1", agent_key="wizard")), "unknown_agent", "S1")
    assert "'wizard'" in issue.message and "architect, coder" in issue.message


def test_rule_unknown_engine() -> None:
    issue = _one(_reply(_sub("S1", engine="smolagent")), "unknown_engine", "S1")
    assert "'smolagent'" in issue.message and "aider, llm" in issue.message


def test_rule_engine_unavailable() -> None:
    issue = _one(_reply(_sub("S1", engine="aider")), "engine_unavailable", "S1")
    assert "the aider executable is not on PATH" in issue.message


@pytest.mark.parametrize("group", [0, -1, 1.0, 1.5, True, "1"])
def test_rule_group_integer(group: object) -> None:
    _one(_reply(_sub("S1", group)), "group_integer", "S1")  # type: ignore[arg-type]


def test_rule_dangling_dependency() -> None:
    issue = _one(_reply(_sub("S1"), _sub("S2", 2, ["S1", "S9"])), "dangling_dependency", "S2")
    assert "'S9'" in issue.message


def test_rule_cycle_names_the_cycle_in_order() -> None:
    data = _reply(_sub("S0"), _sub("S1", 2, ["S3"]), _sub("S2", 3, ["S1"]), _sub("S3", 4, ["S2"]))
    issues = _issues(data)
    # groups cannot order a cycle, so one of its dependencies also points to a later group
    assert [(i.rule, i.subtask) for i in issues] == [("dependency_order", "S1"), ("cycle", "S1")]
    cycle = issues[1].message
    assert cycle.startswith("subtask S1: ") and cycle.endswith(" [rule: cycle]")
    assert "S1 → S3 → S2 → S1" in cycle


def test_rule_cycle_includes_depending_on_itself() -> None:
    issue = _one(_reply(_sub("S1", 1, ["S1"])), "cycle", "S1")
    assert "S1 → S1" in issue.message


def test_rule_dependency_order() -> None:
    issue = _one(_reply(_sub("S1"), _sub("S2", 1, ["S1"])), "dependency_order", "S2")
    assert "group 1" in issue.message and "S1" in issue.message
    _one(_reply(_sub("S1", 1, ["S2"]), _sub("S2", 2)), "dependency_order", "S1")


def test_rule_too_many_subtasks() -> None:
    issue = _one(_reply(), "too_many_subtasks", None, max_subtasks=2)
    assert "3 subtasks" in issue.message and "at most 2" in issue.message


# -- several issues, dangling dependencies, building -------------------------------------------------
def test_every_issue_is_reported_at_once() -> None:
    data = _reply(
        _sub("S1", agent_key="wizard", engine="aider"),
        _sub("S2", 0, ["S9"]),
        _sub("S3", 2, ["S3"], notes=3),
    )
    data["merge"] = {}
    rules = [(i.rule, i.subtask) for i in _issues(data)]
    assert rules == [
        ("shape", None),
        ("unknown_agent", "S1"),
        ("engine_unavailable", "S1"),
        ("group_integer", "S2"),
        ("type", "S3"),
        ("dangling_dependency", "S2"),
        ("cycle", "S3"),
    ]


def test_a_dangling_dependency_is_not_also_a_cycle_or_out_of_order() -> None:
    rules = [i.rule for i in _issues(_reply(_sub("S1", 1, ["S1x"]), _sub("S2", 1, ["S2x"])))]
    assert rules == ["dangling_dependency", "dangling_dependency"]


def test_plan_invalid_carries_every_issue() -> None:
    data = _reply(_sub("S1", agent_key="wizard"), _sub("S2", 2, ["S9"]))
    with pytest.raises(PlanInvalid) as caught:
        build_plan(data, plan_id="p1", goal="g", agents=AGENTS, engines=ENGINES, max_subtasks=5)
    assert [i.rule for i in caught.value.issues] == ["unknown_agent", "dangling_dependency"]
    assert str(caught.value) == "\n".join(i.message for i in caught.value.issues)
    assert isinstance(caught.value, PlanError)


def test_issues_text_has_an_intro_and_one_bullet_per_issue() -> None:
    issues = _issues(_reply(_sub("S1", agent_key="wizard"), _sub("S2", 2, ["S9"])))
    text = issues_text(issues)
    intro, *bullets = text.splitlines()
    assert "corrected JSON" in intro
    assert bullets == [f"- {i.message}" for i in issues]


def test_a_valid_plan_builds_in_groups() -> None:
    data = _reply()
    data["subtasks"][1]["status"] = "completed"  # a reply cannot preset a status
    plan = build_plan(
        data, plan_id="20250118-142305_build-rest-api", goal="Build REST API", agents=AGENTS,
        engines=ENGINES, max_subtasks=5, metadata={"planner_model": "m", "goal": "ignored"},
    )  # fmt: skip
    assert plan.status is PlanStatus.PROPOSED and plan.merge_strategy == "Combine the results"
    assert [(n, [s.id for s in group]) for n, group in plan.groups()] == [(1, ["S1"]), (2, ["S2", "S3"])]
    assert plan.subtask("S2").depends_on == ["S1"] and plan.subtask("S2").status is SubtaskStatus.PENDING
    assert plan.metadata == {"goal": "Build REST API", "planner_model": "m"}
