"""PlanStore: plan files under ``conductor/plans/`` — round trip, fresh ids, corrupt files moved
aside and reported, result files read only from inside the plans folder."""

from __future__ import annotations

import json
import os
import re
from datetime import datetime
from pathlib import Path

import pytest

from manual_slop.mma.models import check_id
from manual_slop.plan.model import Plan, PlanError, PlanStatus, Subtask, SubtaskStatus
from manual_slop.plan.store import PLANS_DIR, PlanStore

NOW = datetime(2025, 1, 18, 14, 23, 5)


def full_plan(plan_id: str = "20250118-142305_build-rest-api") -> Plan:
    return Plan(
        id=plan_id,
        goal="Build REST API",
        subtasks=[
            Subtask("S1", "Design", "Design the API", "architect", "llm", 1, [],
                    status=SubtaskStatus.COMPLETED, result_path=f"conductor/plans/{plan_id}/S1.md",
                    started_at=1.5, finished_at=2.5, usage={"input_tokens": 7, "output_tokens": 3},
                    attempts=2),
            Subtask("S2", "Code", "Code the routes", "coder", "aider", 2, ["S1"], tools=["read_file"],
                    notes="keep it small", files=["app.py"], status=SubtaskStatus.FAILED,
                    error="it broke — ünïcode"),
        ],
        merge_strategy="Combine",
        status=PlanStatus.FAILED,
        metadata={"created_at": "2025-01-18T14:23:05", "replan_count": 1, "judge": {"score": 7.0}},
    )  # fmt: skip


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    store = PlanStore(tmp_path)
    plan = full_plan()
    path = store.save(plan)
    assert path == tmp_path / PLANS_DIR / f"{plan.id}.json"
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n") and "ünïcode" in text  # readable, not escaped
    assert json.loads(text) == plan.to_dict()
    loaded = store.load(plan.id)
    assert loaded.subtasks == plan.subtasks and loaded.status is PlanStatus.FAILED
    assert loaded.to_dict() == plan.to_dict()  # (metadata.goal is always the goal)
    plan.status = PlanStatus.DONE
    store.save(plan)  # rewritten in place, no temp files left
    assert store.load(plan.id).status is PlanStatus.DONE
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_loading_a_missing_plan_names_it(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match=r"no plan 'nope' \(missing .*nope\.json\)"):
        PlanStore(tmp_path).load("nope")
    assert PlanStore(tmp_path).load_all() == ([], [])  # no folder yet: nothing, no problem


def test_ids_are_unique_within_one_second(tmp_path: Path) -> None:
    store = PlanStore(tmp_path)
    ids = []
    for _ in range(3):
        plan_id = store.new_id("Build REST API", NOW)
        store.save(Plan(plan_id, "Build REST API", [], "", PlanStatus.PLANNING))
        ids.append(plan_id)
    stem = "20250118-142305_build-rest-api"
    assert ids == [stem, f"{stem}-2", f"{stem}-3"]
    # a folder of results without its plan file also takes the id
    (tmp_path / PLANS_DIR / "20250118-142305_other").mkdir()
    assert store.new_id("Other", NOW) == "20250118-142305_other-2"
    next_second = datetime(2025, 1, 18, 14, 23, 6)
    assert store.new_id("Build REST API", next_second) == "20250118-142306_build-rest-api"


def test_a_long_goal_still_gives_valid_unique_ids(tmp_path: Path) -> None:
    store = PlanStore(tmp_path)
    goal = "implement " + "everything " * 30
    seen = set()
    for _ in range(11):
        plan_id = store.new_id(goal, NOW)
        assert len(plan_id) <= 64 and check_id(plan_id, "plan id") == plan_id
        assert plan_id not in seen
        seen.add(plan_id)
        store.save(Plan(plan_id, goal, [], "", PlanStatus.PLANNING))
    assert store.load_all()[1] == [] and len(store.load_all()[0]) == 11


CORRUPT = re.compile(r"\.json\.corrupt-\d{8}-\d{6}(-\d+)?$")


@pytest.mark.parametrize(
    "content",
    [
        b'{"id": "20250118-142305_bad", "status": "run',  # torn JSON
        b"\xff\xfe not utf-8",
        # no metadata.goal
        b'{"id": "20250118-142305_bad", "status": "running", "subtasks": [], "merge": {"strategy": ""}}',
        b'{"id": "20250118-142305_bad", "status": "exploded", "subtasks": [], "merge": {"strategy": ""},'
        b' "metadata": {"goal": "g"}}',
    ],
)
def test_a_corrupt_plan_file_is_moved_aside_and_reported(tmp_path: Path, content: bytes) -> None:
    store = PlanStore(tmp_path)
    good = full_plan()
    store.save(good)
    bad = store.path("20250118-142305_bad")
    bad.write_bytes(content)

    plans, problems = store.load_all()
    assert [p.id for p in plans] == [good.id]
    (problem,) = problems
    assert "20250118-142305_bad.json" in problem
    assert "moved aside to 20250118-142305_bad.json.corrupt-" in problem
    assert not bad.exists()
    (aside,) = [p for p in bad.parent.iterdir() if p.name.startswith("20250118-142305_bad")]
    assert CORRUPT.search(aside.name), aside.name
    assert aside.read_bytes() == content  # kept as it was, never overwritten
    plans, problems = store.load_all()  # reported once; the good plan is untouched
    assert [p.to_dict() for p in plans] == [good.to_dict()] and problems == []


def test_a_plan_file_under_another_name_is_reported(tmp_path: Path) -> None:
    store = PlanStore(tmp_path)
    store.save(full_plan("p-one"))
    os.replace(store.path("p-one"), store.path("p-two"))
    plans, problems = store.load_all()
    assert plans == [] and len(problems) == 1
    assert "id 'p-one' does not match its file name" in problems[0]


def test_results_are_written_and_read_inside_the_plans_folder(tmp_path: Path) -> None:
    store = PlanStore(tmp_path)
    relative = store.write_result("p1", "S1", "the result")
    assert relative == "conductor/plans/p1/S1.md"
    assert store.read_result(relative) == "the result\n"
    assert store.read_result(store.write_result("p1", "merge", "merged\n")) == "merged\n"


@pytest.mark.parametrize(
    "relative",
    [
        "manual_slop.toml",  # in the project, not a result
        "conductor/plans/../../manual_slop.toml",
        "../outside.txt",
        "/etc/hostname",
        "conductor/plans/p1/../../../outside.txt",
    ],
)
def test_a_result_path_outside_the_plans_folder_is_refused(tmp_path: Path, relative: str) -> None:
    base = tmp_path / "project"
    base.mkdir()
    (base / "manual_slop.toml").write_text("secret = 1\n")
    (tmp_path / "outside.txt").write_text("outside\n")
    store = PlanStore(base)
    store.write_result("p1", "S1", "ok")
    with pytest.raises(PlanError, match="not a result file of this project's plans"):
        store.read_result(relative)


def test_a_symlink_out_of_the_plans_folder_is_refused(tmp_path: Path) -> None:
    base = tmp_path / "project"
    store = PlanStore(base)
    store.write_result("p1", "S1", "ok")
    (tmp_path / "secret.txt").write_text("secret\n")
    (base / PLANS_DIR / "p1" / "S2.md").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(PlanError, match="not a result file"):
        store.read_result("conductor/plans/p1/S2.md")
