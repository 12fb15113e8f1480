"""PlanConductor's parts: groups as ticket dependencies, the plan's track, the tools a subtask may
use, and a run through the real conductor loop with a scripted engine and a fake host (the plan
file rewritten at every status change, retries counted, a rejection not retried, a failed
merge reported)."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from manual_slop.agents.profiles import AgentProfile
from manual_slop.dialogs import Decision, PendingDialog
from manual_slop.mma.client import TierCaller
from manual_slop.mma.conductor import ConductorConfig
from manual_slop.mma.models import TicketStatus, TierUsage
from manual_slop.mma.persistence import TrackStore
from manual_slop.plan.conductor import (
    PlanConductor,
    PlanServices,
    _allowed_tools,
    group_barriers,
    plan_tickets,
    plan_track,
)
from manual_slop.plan.engines import EngineError, EngineRejected, EngineResult, SubtaskRun
from manual_slop.plan.model import Plan, PlanStatus, Subtask
from manual_slop.plan.planner import PlanModels
from manual_slop.plan.store import PlanStore
from tests.unit.mma.fake_client import FakeTierClient


def sub(sid: str, group: int, depends_on: list[str] | None = None, **kw: Any) -> Subtask:
    return Subtask(sid, f"title {sid}", f"objective {sid}", kw.pop("agent_key", "coder"), "llm", group,
                   list(depends_on or []), **kw)  # fmt: skip


# -- groups as dependencies ------------------------------------------------------------------------
def test_group_barriers_wait_for_the_whole_group_before() -> None:
    subtasks = [sub("D", 5), sub("A", 1), sub("B", 2), sub("C", 2)]  # out of order, a gap in the numbers
    assert group_barriers(subtasks) == {"A": [], "B": ["A"], "C": ["A"], "D": ["B", "C"]}
    assert group_barriers(subtasks, ["K1", "K2"])["A"] == ["K1", "K2"]
    assert group_barriers([]) == {}


def test_plan_tickets_keep_declared_dependencies_beside_the_barrier() -> None:
    subtasks = [
        sub("S1", 1), sub("S2", 2, ["S1"], files=["app.py"]), sub("S3", 2), sub("S4", 3, ["S1", "S2"]),
    ]  # fmt: skip
    tickets = plan_tickets(subtasks)
    assert [t.id for t in tickets] == ["S1", "S2", "S3", "S4"]
    deps = {t.id: t.depends_on for t in tickets}
    assert deps == {"S1": [], "S2": ["S1"], "S3": ["S1"], "S4": ["S1", "S2", "S3"]}  # no duplicates
    s2 = tickets[1]
    assert s2.description == "title S2: objective S2" and s2.target_files == ["app.py"]
    assert [t.id for t in plan_tickets([sub("B", 2), sub("A", 1), sub("C", 2)])] == ["A", "B", "C"]
    # a replan's first group waits for what is still running
    assert plan_tickets([sub("N1", 1, ["S1"])], ["S3"])[0].depends_on == ["S1", "S3"]


def test_plan_track_is_a_plan_kind_track_titled_by_the_goal() -> None:
    plan = Plan("20250118-142305_build", "Build  a\nREST   API", [sub("S1", 1), sub("S2", 2)], "combine")
    track = plan_track(plan)
    assert track.kind == "plan" and track.id == plan.id
    assert track.title == "Build a REST API"
    assert "Merge strategy: combine" in track.description and track.description.startswith("Build  a\nREST")
    assert [(t.id, t.depends_on) for t in track.tickets] == [("S1", []), ("S2", ["S1"])]
    long = plan_track(Plan("p1", "word " * 40, [sub("S1", 1)], "m"))
    assert len(long.title) == 80 and long.title.endswith("…")


@pytest.mark.parametrize(
    ("subtask_tools", "agent_tools", "allowed"),
    [
        (None, None, None),  # every tool
        (None, ("read_file", "list_directory"), ("read_file", "list_directory")),
        (["read_file", "write_file"], None, ("read_file", "write_file")),
        (["write_file", "read_file", "shell"], ("read_file", "ls", "shell"), ("read_file", "shell")),
        ([], ("read_file",), ()),  # none at all
        (["write_file"], ("read_file",), ()),  # the agent's list wins
    ],
)
def test_a_subtask_uses_only_tools_its_agent_has(
    subtask_tools: list[str] | None, agent_tools: tuple[str, ...] | None, allowed: tuple[str, ...] | None
) -> None:
    assert _allowed_tools(subtask_tools, agent_tools) == allowed


# -- a run through the real conductor loop -------------------------------------------------------------
class FakeHost:
    """The controller as the conductor sees it: approvals rejected, events and tasks recorded."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.tasks: list[dict[str, Any]] = []
        self.dialogs: list[PendingDialog] = []
        self._lock = threading.Lock()

    def request_approval(self, dialog: PendingDialog, timeout: float | None = None) -> Decision:
        with self._lock:
            self.dialogs.append(dialog)
        return Decision(False, {}, "test", time.time())

    def publish(self, event_type: str, payload: Mapping[str, Any] | None = None) -> int:
        with self._lock:
            self.events.append((event_type, dict(payload or {})))
            return len(self.events)

    def post_gui_task(self, task: dict[str, Any]) -> str | None:
        with self._lock:
            self.tasks.append(task)
        return None


class RecordingStore(PlanStore):
    """A PlanStore that remembers what each save wrote (plan status, subtask statuses)."""

    def __init__(self, base_dir: Path) -> None:
        super().__init__(base_dir)
        self.saves: list[tuple[str, dict[str, str]]] = []

    def save(self, plan: Plan) -> Path:
        self.saves.append((str(plan.status), {s.id: str(s.status) for s in plan.subtasks}))
        return super().save(plan)


Outcome = str | Exception


class ScriptedEngine:
    """An engine answering each subtask from a script; a subtask with a gate waits for it first."""

    name = "llm"

    def __init__(self, script: dict[str, list[Outcome]], gates: dict[str, threading.Event] | None = None):
        self.script = script
        self.gates = gates or {}
        self.runs: list[SubtaskRun] = []
        self._lock = threading.Lock()

    def availability(self) -> str | None:
        return None

    def run(self, run: SubtaskRun) -> EngineResult:
        with self._lock:
            self.runs.append(run)
            outcomes = self.script[run.subtask_id]
            outcome = outcomes[min(run.attempt - 1, len(outcomes) - 1)]
        gate = self.gates.get(run.subtask_id)
        if gate is not None:
            assert gate.wait(10), f"{run.subtask_id}: the test never opened its gate"
        if isinstance(outcome, Exception):
            raise outcome
        return EngineResult(outcome, {"input_tokens": 10, "output_tokens": 5})


class FakeModelClient:
    def __init__(self, answer: Callable[[str], str]) -> None:
        self.answer = answer
        self.prompts: list[str] = []

    def send(self, _md: str, prompt: str, **_options: Any) -> str:
        self.prompts.append(prompt)
        return self.answer(prompt)

    def get_token_usage(self) -> dict[str, int]:
        return {"input_tokens": 3, "output_tokens": 2}


class FakeAccess:
    """ModelAccess for the merge and judge calls."""

    def __init__(self, answer: Callable[[str], str]) -> None:
        self.model = FakeModelClient(answer)

    @contextlib.contextmanager
    def client(self, settings: Mapping[str, Any]) -> Iterator[FakeModelClient]:
        yield self.model

    def tools_context(self, run: SubtaskRun) -> None:
        return None

    def memory_block(self, run: SubtaskRun, conversation: str) -> None:
        return None

    def provider_problem(self, provider: str) -> str | None:
        return None


AGENTS = {
    "architect": AgentProfile("architect", "You are the architect."),
    "coder": AgentProfile("coder", "You are the coder.", tools=("read_file", "list_directory")),
}


@pytest.fixture
def run_plan(tmp_path: Path) -> Iterator[Callable[..., tuple[PlanConductor, RecordingStore, list[Plan]]]]:
    """``run_plan(plan, engine, merge=...)`` → (conductor, store, finished plans); started."""
    made: list[tuple[PlanConductor, TierCaller]] = []

    def factory(
        plan: Plan,
        engine: ScriptedEngine,
        merge: Callable[[str], str] = lambda prompt: "merged answer",
        host: FakeHost | None = None,
    ) -> tuple[PlanConductor, RecordingStore, list[Plan]]:
        store = RecordingStore(tmp_path)
        store.save(plan)
        finished: list[Plan] = []

        def settings_for(agent: AgentProfile | None, phase: str) -> dict[str, Any]:
            return {"max_tokens": 321, "system_prompt": agent.system_prompt if agent else ""}

        services = PlanServices(
            agents=AGENTS, engines={"llm": engine},
            models=PlanModels(FakeAccess(merge), lambda phase: {}), settings_for=settings_for,
            plan_store=store, judge="off", on_finished=finished.append,
        )  # fmt: skip
        caller = TierCaller(FakeTierClient(), TierUsage())
        conductor = PlanConductor(
            plan, plan_track(plan), None, host=host or FakeHost(), caller=caller, services=services,
            config=ConductorConfig(base_dir=tmp_path, max_replans=0), store=TrackStore(tmp_path),
        )  # fmt: skip
        made.append((conductor, caller))
        conductor.start()
        return conductor, store, finished

    yield factory
    for conductor, caller in made:
        if conductor.is_alive():
            conductor.abort(wait=3.0)
        assert conductor.join(3.0)
        caller.shutdown(1.0)


def on_disk(store: PlanStore, plan_id: str) -> dict[str, Any]:
    return json.loads(store.path(plan_id).read_text())


def wait_for(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def three_subtasks() -> Plan:
    return Plan(
        "20250118-142305_build",
        "Build a REST API",
        [
            sub("S1", 1, agent_key="architect"),
            sub("S2", 2, ["S1"], tools=["read_file", "write_file"]),
            sub("S3", 2, ["S1"]),
        ],
        "combine them",
    )


def test_the_plan_file_is_rewritten_at_every_status_change(run_plan) -> None:
    gates = {sid: threading.Event() for sid in ("S1", "S2", "S3")}
    engine = ScriptedEngine({sid: [f"{sid} result"] for sid in gates}, gates)
    plan = three_subtasks()
    conductor, store, finished = run_plan(plan, engine)

    def file_says(sid: str, status: str) -> Callable[[], bool]:
        return lambda: {s["id"]: s["status"] for s in on_disk(store, plan.id)["subtasks"]}[sid] == status

    wait_for(file_says("S1", "running"))
    assert on_disk(store, plan.id)["status"] == "running"
    assert {s["id"]: s["status"] for s in on_disk(store, plan.id)["subtasks"]} == {
        "S1": "running", "S2": "pending", "S3": "pending",
    }  # fmt: skip
    gates["S1"].set()
    wait_for(file_says("S1", "completed"))
    wait_for(file_says("S2", "running"))
    wait_for(file_says("S3", "running"))  # group 2 runs side by side
    gates["S2"].set()
    wait_for(file_says("S2", "completed"))
    assert {s["id"]: s["status"] for s in on_disk(store, plan.id)["subtasks"]}["S3"] == "running"
    gates["S3"].set()
    assert conductor.join(5.0)

    final = on_disk(store, plan.id)
    assert final["status"] == "done"
    assert all(s["status"] == "completed" and s["attempts"] == 1 for s in final["subtasks"])
    assert all(s["usage"] == {"input_tokens": 10, "output_tokens": 5} for s in final["subtasks"])
    for subtask in final["subtasks"]:
        assert (store.base_dir / subtask["result_path"]).read_text() == f"{subtask['id']} result\n"
    assert (store.base_dir / final["metadata"]["merge_result_path"]).read_text() == "merged answer\n"
    statuses = [status for status, _ in store.saves]
    assert "merging" in statuses and statuses[-1] == "done"
    assert statuses.index("running") < statuses.index("merging") < len(statuses) - 1
    (done,) = finished
    assert done.status is PlanStatus.DONE and done.metadata["merge_result_path"]


def test_each_subtask_runs_with_its_agent_and_the_results_it_depends_on(run_plan) -> None:
    engine = ScriptedEngine({"S1": ["the schema"], "S2": ["the routes"], "S3": ["the tests"]})
    merged: list[str] = []
    conductor, _, _ = run_plan(three_subtasks(), engine, merge=lambda p: merged.append(p) or "merged")
    assert conductor.join(5.0)
    runs = {run.subtask_id: run for run in engine.runs}
    assert runs["S1"].system_prompt == "You are the architect." and runs["S1"].tools is None
    assert runs["S2"].system_prompt == "You are the coder." and runs["S2"].tools == ("read_file",)
    assert runs["S3"].tools == ("read_file", "list_directory")
    assert runs["S2"].max_tokens == 321 and runs["S2"].attempt == 1
    assert "Result of S1 (this subtask builds on it):\nthe schema" in runs["S2"].prompt
    assert "Result of" not in runs["S1"].prompt
    (prompt,) = merged
    assert "S2 (title S2):\nthe routes" in prompt and "MERGE STRATEGY: combine them" in prompt


def test_failed_attempts_are_retried_and_counted_in_the_plan_file(run_plan) -> None:
    failing = EngineError("the model said no")
    engine = ScriptedEngine({"S1": [failing, failing, "third time lucky"]})
    plan = Plan("p-retry", "goal", [sub("S1", 1)], "m")
    conductor, store, _ = run_plan(plan, engine)
    assert conductor.join(5.0)
    (subtask,) = on_disk(store, plan.id)["subtasks"]
    assert subtask["status"] == "completed" and subtask["attempts"] == 3
    assert [run.attempt for run in engine.runs] == [1, 2, 3]
    assert on_disk(store, plan.id)["status"] == "done"


def test_a_subtask_that_keeps_failing_fails_the_plan(run_plan) -> None:
    engine = ScriptedEngine({"S1": [EngineError("the model said no")], "S2": ["never"]})
    plan = Plan("p-fail", "goal", [sub("S1", 1), sub("S2", 2)], "m")
    conductor, store, finished = run_plan(plan, engine)
    assert conductor.join(5.0)
    data = on_disk(store, plan.id)
    assert data["status"] == "failed"
    s1, s2 = data["subtasks"]
    assert s1["status"] == "failed" and s1["attempts"] == 3  # max_retries 2
    assert "llm engine, attempt 3: the model said no" in s1["error"]
    assert s2["status"] == "pending"  # it never ran: waiting behind a failed subtask
    assert [run.subtask_id for run in engine.runs] == ["S1", "S1", "S1"]
    assert finished[0].status is PlanStatus.FAILED


class EditingHost(FakeHost):
    """A human who answers the recovery dialog with an edited objective (and rejects the rest)."""

    def request_approval(self, dialog: PendingDialog, timeout: float | None = None) -> Decision:
        if dialog.kind != "recovery":
            return super().request_approval(dialog, timeout)
        with self._lock:
            self.dialogs.append(dialog)
        dialog.resolve(True, {"choice": "edit", "description": "objective S1, with the fix"}, decider="hook")
        assert dialog.decision is not None
        return dialog.decision


def test_a_subtask_whose_attempts_are_spent_asks_a_human_who_edits_it(run_plan) -> None:
    failure = EngineError("the model said no")
    engine = ScriptedEngine({"S1": [failure, failure, failure, "fixed it"], "S2": ["two"]})
    plan = Plan("p-edit", "goal", [sub("S1", 1), sub("S2", 2)], "m")
    host = EditingHost()
    conductor, store, _ = run_plan(plan, engine, host=host)
    assert conductor.join(5.0)
    (dialog,) = [d for d in host.dialogs if d.kind == "recovery"]
    assert dialog.payload["ticket_id"] == "S1" and dialog.payload["description"] == "objective S1"
    assert dialog.payload["failure"] == "send_failed"
    data = on_disk(store, plan.id)
    assert data["status"] == "done" and [s["status"] for s in data["subtasks"]] == ["completed", "completed"]
    assert data["subtasks"][0]["objective"] == "objective S1, with the fix"
    assert "objective S1, with the fix" in engine.runs[3].prompt  # the fourth attempt ran the edit


def test_a_rejected_result_is_not_retried(run_plan) -> None:
    engine = ScriptedEngine({"S1": [EngineRejected("the diff was refused"), "never"]})
    plan = Plan("p-rejected", "goal", [sub("S1", 1)], "m")
    conductor, store, _ = run_plan(plan, engine)
    assert conductor.join(5.0)
    (subtask,) = on_disk(store, plan.id)["subtasks"]
    assert subtask["status"] == "failed" and subtask["attempts"] == 1
    assert "rejected by the user: the diff was refused" in subtask["error"]
    assert len(engine.runs) == 1 and on_disk(store, plan.id)["status"] == "failed"


def test_a_failed_merge_fails_the_plan_and_says_why(run_plan) -> None:
    def merge(prompt: str) -> str:
        raise RuntimeError("the merge model is down")

    engine = ScriptedEngine({"S1": ["one"]})
    plan = Plan("p-merge", "goal", [sub("S1", 1)], "m")
    conductor, store, finished = run_plan(plan, engine, merge=merge)
    assert conductor.join(5.0)
    data = on_disk(store, plan.id)
    assert data["status"] == "failed" and data["subtasks"][0]["status"] == "completed"
    assert data["metadata"]["merge_error"] == "RuntimeError: the merge model is down"
    assert "merge_result_path" not in data["metadata"]
    assert finished[0].status is PlanStatus.FAILED


# -- applying an approved replan (on a conductor that is not started) ----------------------------------
def replanned(tmp_path: Path, data: dict[str, Any]) -> tuple[PlanConductor, TierCaller]:
    """S1 (group 1) completed, S2 (group 2) running, S3 (group 2) failed for good; ``data`` applied."""
    plan = Plan("p-replan", "goal", [sub("S1", 1), sub("S2", 2, ["S1"]), sub("S3", 2, ["S1"])], "m")
    track = plan_track(plan)
    s1, _, s3 = track.tickets
    s1.status, s1.result = TicketStatus.COMPLETED, "S1 result"
    s3.status, s3.blocked_reason = TicketStatus.BLOCKED, "failed three times"
    caller = TierCaller(FakeTierClient(), TierUsage())
    services = PlanServices(
        agents=AGENTS, engines={"llm": ScriptedEngine({})}, models=PlanModels(FakeAccess(str), lambda p: {}),
        settings_for=lambda agent, phase: {}, plan_store=PlanStore(tmp_path),
    )  # fmt: skip
    conductor = PlanConductor(
        plan, track, None, host=FakeHost(), caller=caller, services=services,
        config=ConductorConfig(base_dir=tmp_path), store=TrackStore(tmp_path),
    )  # fmt: skip
    with conductor._lock:
        conductor.engine.start("S2", "worker-1")  # S2 is running when the replan is applied
    conductor._apply_replan(data)
    return conductor, caller


def new_subtask(**extra: Any) -> dict[str, Any]:
    return {"id": "N1", "title": "again", "objective": "do S3's work another way", "agent_key": "coder",
            "engine": "llm", "parallel_group": 1, "depends_on": ["S1"], **extra}  # fmt: skip


def test_an_applied_replan_replaces_the_failed_work(tmp_path: Path) -> None:
    conductor, caller = replanned(tmp_path, {"subtasks": [new_subtask()], "merge": {"strategy": "m2"}})
    try:
        deps = {t.id: t.depends_on for t in conductor.track.tickets}
        assert deps == {"S1": [], "S2": ["S1"], "N1": ["S1", "S2"]}  # N1 also waits for the running S2
        data = conductor.plan_snapshot()
        assert [s["id"] for s in data["subtasks"]] == ["S1", "S2", "N1"]
        assert data["merge"]["strategy"] == "m2" and conductor.track.replan_count == 1
        assert data["metadata"]["replan_count"] == 1
    finally:
        caller.shutdown(1.0)


def test_a_replan_cannot_preset_results_usage_or_errors(tmp_path: Path) -> None:
    """Like build_plan ("a reply cannot preset status or results"): only the planner's keys count."""
    preset = new_subtask(
        status="completed", result_path="conductor/plans/p-replan/forged.md", error="preset error",
        usage={"input_tokens": 999_999, "output_tokens": 999_999}, attempts=7, started_at=1.0,
    )  # fmt: skip
    conductor, caller = replanned(tmp_path, {"subtasks": [preset], "merge": {"strategy": "m2"}})
    try:
        n1 = next(s for s in conductor.plan_snapshot()["subtasks"] if s["id"] == "N1")
        assert n1["status"] == "pending" and n1["attempts"] == 0
        assert n1["result_path"] is None and n1["error"] is None
        assert n1["usage"] == {"input_tokens": 0, "output_tokens": 0}
    finally:
        caller.shutdown(1.0)


def test_after_a_replan_the_groups_still_read_in_run_order(tmp_path: Path) -> None:
    """The replan numbers its groups from 1 again; in the plan (its groups, the dashboard's summary)
    the new subtasks must still come after the kept ones they wait for, not beside them."""
    conductor, caller = replanned(tmp_path, {"subtasks": [new_subtask()], "merge": {"strategy": "m2"}})
    try:
        groups = Plan.from_dict(conductor.plan_snapshot()).summary()["groups"]
        position = {sid: index for index, group in enumerate(groups) for sid in group}
        assert position["S1"] < position["S2"] < position["N1"], groups
    finally:
        caller.shutdown(1.0)


def test_after_a_replan_a_new_subtask_keeps_the_dependencies_it_was_planned_with(tmp_path: Path) -> None:
    conductor, caller = replanned(tmp_path, {"subtasks": [new_subtask()], "merge": {"strategy": "m2"}})
    try:
        n1 = next(s for s in conductor.plan_snapshot()["subtasks"] if s["id"] == "N1")
        assert n1["depends_on"] == ["S1"]  # as planned; waiting for the running S2 is implied
    finally:
        caller.shutdown(1.0)
