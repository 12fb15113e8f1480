"""Plan and subtask records: dict round trips, errors that name the key, file names."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

import pytest

from manual_slop.mma.models import ID_PATTERN
from manual_slop.plan.model import (
    SLUG_MAX,
    Plan,
    PlanError,
    PlanStatus,
    Subtask,
    SubtaskStatus,
    plan_file_name,
    plan_slug,
)


def _subtask(sid: str = "S1", group: int = 1, depends_on: list[str] | None = None, **kw: Any) -> Subtask:
    return Subtask(sid, f"title {sid}", f"objective {sid}", "architect", "llm", group, depends_on or [], **kw)


def _plan() -> Plan:
    return Plan(
        id="20250118-142305_build-rest-api",
        goal="Build REST API",
        subtasks=[
            _subtask("S1"),
            _subtask("S2", 2, ["S1"], tools=["read_file"], status=SubtaskStatus.COMPLETED),
            _subtask("S3", 2, ["S1"], status=SubtaskStatus.FAILED, error="boom"),
        ],
        merge_strategy="Combine schema, code and tests",
        status=PlanStatus.RUNNING,
        metadata={"goal": "Build REST API", "created_at": "2025-01-18T14:23:05", "replan_count": 0},
    )


def test_statuses_are_the_documented_sets() -> None:
    assert [s.value for s in SubtaskStatus] == ["pending", "running", "completed", "failed", "killed"]
    assert [s.value for s in PlanStatus] == [
        "planning", "proposed", "running", "paused", "merging", "judging", "done", "failed", "aborted",
        "rejected", "invalid",
    ]  # fmt: skip


def test_subtask_round_trips_with_keys_in_field_order() -> None:
    subtask = _subtask(
        "S2", 3, ["S1"], tools=["grep"], notes="n", status=SubtaskStatus.COMPLETED, result_path="r/S2.md",
        error=None, started_at=10.0, finished_at=12.5, usage={"input_tokens": 7, "output_tokens": 3},
        attempts=2,
    )  # fmt: skip
    data = subtask.to_dict()
    assert list(data) == [
        "id", "title", "objective", "agent_key", "engine", "parallel_group", "depends_on", "tools", "notes",
        "files",
        "status", "result_path", "error", "started_at", "finished_at", "usage", "attempts",
    ]  # fmt: skip
    assert data["status"] == "completed" and type(data["status"]) is str
    assert Subtask.from_dict(json.loads(json.dumps(data))) == subtask


def test_subtask_defaults() -> None:
    subtask = Subtask.from_dict(
        {"id": "S1", "title": "t", "objective": "o", "agent_key": "a", "engine": "e", "parallel_group": 1,
         "depends_on": []}
    )  # fmt: skip
    assert subtask.status is SubtaskStatus.PENDING and subtask.tools is None and subtask.notes == ""
    assert subtask.usage == {"input_tokens": 0, "output_tokens": 0} and subtask.attempts == 0
    # each subtask gets its own usage dict
    assert subtask.usage is not _subtask().usage


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("id", "has space", r"subtask\.id: expected an id"),
        ("title", None, r"subtask S1\.title: missing"),
        ("objective", "  ", r"subtask S1\.objective: must not be empty"),
        ("engine", 3, r"subtask S1\.engine: expected a string, got int"),
        ("parallel_group", True, r"subtask S1\.parallel_group: expected an integer >= 1"),
        ("parallel_group", 0, r"subtask S1\.parallel_group: expected an integer >= 1"),
        ("depends_on", "S0", r"subtask S1\.depends_on: expected a list of strings"),
        ("depends_on", ["bad id"], r"subtask S1\.depends_on: expected an id"),
        ("tools", [1], r"subtask S1\.tools: expected a list of strings"),
        ("status", "done", r"subtask S1\.status: expected one of pending, running"),
        ("started_at", "noon", r"subtask S1\.started_at: expected a number"),
        ("usage", {"input_tokens": -1}, r"subtask S1\.usage\.input_tokens: expected a non-negative integer"),
        ("usage", {"cost": 1}, r"subtask S1\.usage: unknown keys \['cost'\]"),
        ("attempts", 1.0, r"subtask S1\.attempts: expected a non-negative integer"),
        ("error", 5, r"subtask S1\.error: expected a string"),
    ],
)
def test_subtask_from_dict_names_the_bad_key(key: str, value: object, message: str) -> None:
    data = _subtask().to_dict()
    data[key] = value
    with pytest.raises(PlanError, match=message):
        Subtask.from_dict(data)


def test_subtask_from_dict_refuses_a_non_object() -> None:
    with pytest.raises(PlanError, match=r"subtask: expected an object, got list"):
        Subtask.from_dict([])  # type: ignore[arg-type]


def test_plan_file_shape_and_round_trip() -> None:
    plan = _plan()
    data = plan.to_dict()
    assert list(data) == ["id", "status", "subtasks", "merge", "metadata"]
    assert data["merge"] == {"strategy": "Combine schema, code and tests"}
    assert data["status"] == "running" and [s["id"] for s in data["subtasks"]] == ["S1", "S2", "S3"]
    assert next(iter(data["metadata"])) == "goal" and data["metadata"]["goal"] == "Build REST API"
    again = Plan.from_dict(json.loads(json.dumps(data)))
    assert again == plan and again.to_dict() == data


def test_plan_to_dict_copies_and_uses_the_goal_field() -> None:
    plan = _plan()
    plan.metadata["judge"] = {"score": 8, "reasons": ["ok"]}
    plan.goal = "Build a REST API"
    data = plan.to_dict()
    assert data["metadata"]["goal"] == "Build a REST API"
    data["metadata"]["judge"]["reasons"].append("changed")
    data["subtasks"][0]["depends_on"].append("X")
    assert plan.metadata["judge"]["reasons"] == ["ok"] and plan.subtasks[0].depends_on == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(id="a/b"), r"plan\.id: expected an id"),
        (lambda d: d.update(status="finished"), r"plan \S+\.status: expected one of planning, proposed"),
        (lambda d: d.pop("metadata"), r"plan \S+\.metadata: expected an object, got NoneType"),
        (lambda d: d["metadata"].pop("goal"), r"plan \S+\.metadata\.goal: missing"),
        (lambda d: d.update(merge={"strategy": 1}), r"plan \S+\.merge\.strategy: expected a string"),
        (lambda d: d.update(subtasks={}), r"plan \S+\.subtasks: expected a list, got dict"),
        (lambda d: d["subtasks"][2].update(id="S2"), r"plan \S+\.subtasks: the id 'S2' is used twice"),
        (lambda d: d["subtasks"][1].update(title=""), r"subtasks\[1\] S2\.title: must not be empty"),
    ],
)
def test_plan_from_dict_names_the_bad_key(change: Any, message: str) -> None:
    data = _plan().to_dict()
    change(data)
    with pytest.raises(PlanError, match=message):
        Plan.from_dict(data)


def test_groups_subtask_and_counts() -> None:
    plan = _plan()
    plan.subtasks.insert(0, _subtask("S0", 3))
    assert [(n, [s.id for s in group]) for n, group in plan.groups()] == [
        (1, ["S1"]),
        (2, ["S2", "S3"]),
        (3, ["S0"]),
    ]
    assert plan.subtask("S3").error == "boom"
    with pytest.raises(PlanError, match=r"has no subtask 'S9'"):
        plan.subtask("S9")
    assert plan.counts() == {"pending": 2, "running": 0, "completed": 1, "failed": 1, "killed": 0}


@pytest.mark.parametrize(
    ("goal", "slug"),
    [
        ("Build REST API", "build-rest-api"),
        ("  Café — déjà vu!  ", "cafe-deja-vu"),
        ("fix bug #42 (again)", "fix-bug-42-again"),
        ("", "plan"),
        ("!!!", "plan"),
        ("日本語", "plan"),
    ],
)
def test_plan_slug(goal: str, slug: str) -> None:
    assert plan_slug(goal) == slug


def test_long_slugs_are_cut_at_a_word() -> None:
    slug = plan_slug("Refactor the authentication layer and add integration tests for every endpoint")
    assert slug == "refactor-the-authentication-layer-and-add"
    assert len(slug) <= SLUG_MAX
    one_word = plan_slug("x" * 100)
    assert one_word == "x" * SLUG_MAX


def test_plan_file_name_stem_is_a_valid_plan_id() -> None:
    now = datetime(2025, 1, 18, 14, 23, 5)
    assert plan_file_name("Build REST API", now) == "20250118-142305_build-rest-api.json"
    longest = plan_file_name("x" * 100, now).removesuffix(".json")
    assert len(longest) == 64 and re.fullmatch(ID_PATTERN, longest)
    assert Plan(longest, "g", [], "").id == longest
