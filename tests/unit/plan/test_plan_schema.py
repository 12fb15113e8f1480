"""The plan schema a local model is held to makes plans valid by construction, and fits the
planner's token limit; a project without agent profiles plans with the built-in general agent."""

from __future__ import annotations

import copy

import pytest
from jsonschema import Draft202012Validator

from manual_slop.plan.prompts import SCHEMA_MAX_SUBTASKS, plan_schema
from manual_slop.plan.runtime import DEFAULT_AGENT
from manual_slop.plan.validate import validate_plan

ENGINES = {"llm": None, "aider": "aider is not installed"}


def answer(count: int) -> dict:
    subtasks = [
        {"id": f"S{i}", "title": f"Part {i}", "objective": f"Do part {i} of it", "agent_key": "coder",
         "engine": "llm", "parallel_group": i, "depends_on": [f"S{i - 1}"] if i > 1 else []}
        for i in range(1, count + 1)
    ]  # fmt: skip
    return {"subtasks": subtasks, "merge": {"strategy": "join the parts"}}


@pytest.mark.parametrize("count", range(1, SCHEMA_MAX_SUBTASKS + 1))
def test_what_the_schema_allows_passes_validation(count: int) -> None:
    schema = Draft202012Validator(plan_schema(["coder"], ["llm"], 12))
    data = answer(count)
    assert list(schema.iter_errors(data)) == []
    assert validate_plan(data, agents=["coder"], engines=ENGINES, max_subtasks=12) == []


@pytest.mark.parametrize(
    ("change", "what"),
    [
        (lambda d: d["subtasks"][0].update(depends_on=["S2"]), "a dependency on a later subtask"),
        (lambda d: d["subtasks"][1].update(parallel_group=1), "two subtasks in one group"),
        (lambda d: d["subtasks"][1].update(id="S7"), "an id out of order"),
        (lambda d: d["subtasks"][1].update(agent_key="nobody"), "an unknown agent"),
        (lambda d: d["subtasks"][1].update(engine="aider"), "an engine that is not available"),
        (lambda d: d["subtasks"][1].update(objective="x" * 201), "an objective too long to fit"),
        (lambda d: d["subtasks"].extend(answer(SCHEMA_MAX_SUBTASKS + 1)["subtasks"][2:]), "too many"),
    ],
)
def test_the_schema_refuses_what_validation_would_or_what_would_not_fit(change, what: str) -> None:
    data = copy.deepcopy(answer(2))
    change(data)
    assert list(Draft202012Validator(plan_schema(["coder"], ["llm"], 12)).iter_errors(data)), what


def test_the_configured_maximum_bounds_the_schema_too() -> None:
    schema = Draft202012Validator(plan_schema(["coder"], ["llm"], 2))
    assert list(schema.iter_errors(answer(3)))
    assert list(schema.iter_errors(answer(2))) == []


def test_the_general_agent_stands_in_for_missing_profiles() -> None:
    assert DEFAULT_AGENT.key == "general" and DEFAULT_AGENT.system_prompt.strip()
    assert DEFAULT_AGENT.tools is None  # every tool, each mutating call still asks
