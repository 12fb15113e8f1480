"""sim_plan: the /plan pipeline — two agents, a goal typed as ``/plan``, a plan corrected once,
approved with an edit, its groups run in order (the second one in parallel), merged and judged.

The user creates two agent profiles (``architect``, ``coder``) over ``PUT /api/agents/{key}``,
lets the scenario's own provider judge finished plans (``plan_judge``) and types
``/plan Build a tiny REST API`` into the message box. The scripted model (``turns/plan.toml``)
answers by content, since the calls of one group are in flight together: the planner first
gives S3 to an agent that does not exist, is told so (the correction names the subtask and the
rule ``unknown_agent``) and answers with a valid plan. The user reads the proposal in
``/api/pending`` and approves it with a merge strategy of their own. Checks: nothing ran before
the approval, group 1 finished before group 2 started and the two subtasks of group 2
overlapped, each request's ``max_tokens`` is its phase's limit in the ``balanced`` token
profile, each subtask ran as its agent and saw what it builds on, the merge request carries
every result and the user's strategy, the judge's score is in the plan file and the plan list,
and the MMA dashboard shows the plan as a track.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.fakes import Recorded

from manual_slop.hooks import HookError, HookWaitTimeout, NotFound
from simulation.sim_base import BaseSimulation

__all__ = ["PlanSimulation"]

GOAL = "Build a tiny REST API"
AGENTS: dict[str, dict[str, Any]] = {
    "architect": {
        "system_prompt": "You are the architect agent. Design the interface before any code exists.",
        "description": "Designs APIs and data shapes",
    },
    "coder": {
        "system_prompt": "You are the coder agent. Write small, tested code.",
        "description": "Writes code and its tests",
        "tools": ["read_file", "list_directory"],
    },
}
# max_tokens of each phase in the "balanced" token profile
LIMITS = {"planner": 768, "execution": 512, "merge": 2048, "judge": 1024}
USER_STRATEGY = "One answer: the schema first, then the routes, then the tests; keep it short"
TITLES = {"S1": "Design the API", "S2": "Implement routes", "S3": "Write tests"}
PLAN_TIMEOUT_S = 60.0
FINISHED = {"done", "failed", "aborted", "paused", "invalid", "rejected"}


def last_user(request: Recorded) -> str:
    """The last user message of an OpenAI-shaped request."""
    body = request.body if isinstance(request.body, dict) else {}
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return str(users[-1].get("content") or "") if users else ""


def phase_of(request: Recorded) -> str:
    """Which call of a plan ``request`` is, by what it asks: planner, execution, merge or judge."""
    user = last_user(request)
    if user.startswith(("You are the task planner", "Your plan was rejected.")):
        return "planner"
    if user.startswith("Overall goal:"):
        return "execution"
    if user.startswith("Synthesize the results of these subtasks"):
        return "merge"
    if "You are the judge" in user:
        return "judge"
    return "other"


def subtask_of(request: Recorded) -> str:
    """The subtask id an execution request names ('' for other requests)."""
    found = re.search(r"^Subtask (\S+): ", last_user(request), re.MULTILINE)
    return found.group(1) if found else ""


def route(request: Recorded) -> str | None:
    """The turn-file group that answers ``request``: its phase, or its subtask's id."""
    phase = phase_of(request)
    if phase == "execution":
        return subtask_of(request) or None
    return phase if phase != "other" else None


class PlanSimulation(BaseSimulation):
    name = "plan"
    title = "/plan: corrected once, approved with an edit, parallel groups, merged and judged"
    turn_file = "plan.toml"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.plan_id = ""
        self.proposal: dict[str, Any] = {}  # the plan as the approval dialog showed it
        self.final: dict[str, Any] = {}  # the plan file when the run ended
        self._agents_before: dict[str, dict[str, Any] | None] = {}  # attached: each agent as it was

    def setup(self) -> None:
        with self.step("create two agents: architect and coder"):
            for key, body in AGENTS.items():
                if self.target.attached:
                    self._agents_before[key] = self._agent(key)
                self.client.request("PUT", f"/api/agents/{key}", body)
            agents = {a["key"]: a for a in self.client.get("/api/agents")["agents"]}
            self.check({"architect", "coder"} <= set(agents), "both agents are listed", str(sorted(agents)))
            self.expect_equal(
                sorted(agents["coder"]["tools"] or []),
                ["list_directory", "read_file"],
                "the coder may use only its two tools",
            )
        with self.step("let the scenario's provider judge; the balanced token profile"):
            self.set_field("plan_judge", self.provider_name)
            self.set_field("token_profile", "balanced")
            if self.client.get_value("max_tokens") < max(LIMITS.values()):  # an attached app's ceiling
                self.set_field("max_tokens", 8192)
            self.expect_equal(self.client.get_value("plan_judge"), self.provider_name, "plan_judge is set")
            limits = self.client.get_value("token_limits")
            self.expect_equal(
                {phase: limits.get(phase) for phase in LIMITS},
                LIMITS,
                "token_limits: each phase's max_tokens",
            )

    def run(self) -> None:
        self.fake.answer_by(route)
        with self.step(f"type '/plan {GOAL}' and press Gen + Send"):
            response = self.send(f"/plan {GOAL}")
            self.expect_equal(response["status"], "done", "the command answered at once")
            found = re.match(r"Plan (\S+): the planner is writing a plan", response["text"])
            self.check(found, "the answer names the new plan", response["text"])
            self.plan_id = found.group(1) if found else ""
            plans = {p["id"]: p for p in self.client.get("/api/plans")["plans"]}
            self.check(self.plan_id in plans, "GET /api/plans lists it", str(list(plans)))
            self.expect_equal(plans[self.plan_id]["goal"], GOAL, "the plan's goal is what was typed")
        with self.step("the planner's invalid plan went back once, with the errors"):
            dialog = self.wait_dialog("mma_step", PLAN_TIMEOUT_S)
            planner = [c for c in self.fake.model_calls() if phase_of(c) == "planner"]
            self.expect_equal(len(planner), 2, "the planner was asked twice: the goal, then the correction")
            correction = last_user(planner[1])
            self.user.read(correction)
            self.check(
                correction.startswith("Your plan was rejected."),
                "the second request is the correction",
                correction,
            )
            self.check(
                "subtask S3: agent_key 'tester' names no available agent" in correction
                and "[rule: unknown_agent]" in correction,
                "the correction names subtask S3 and the rule unknown_agent",
                correction,
            )
            told = [
                m.get("content") or "" for m in planner[1].body["messages"] if m.get("role") == "assistant"
            ]
            self.check(
                any('"tester"' in text for text in told),
                "the correction came in the same conversation as the rejected plan",
                str(told)[:300],
            )
        with self.step("read the proposal in /api/pending"):
            pending = {d["id"]: d for d in self.client.pending()}
            self.check(dialog["id"] in pending, "the proposal waits in /api/pending", str(list(pending)))
            payload = pending[dialog["id"]]["payload"]
            self.expect_equal(payload["ticket_id"], self.plan_id, "the dialog is the plan's")
            self.proposal = json.loads(payload["payload"])
            self.user.read(payload["payload"])
            self.expect_equal(
                [(s["id"], s["agent_key"], s["parallel_group"]) for s in self.proposal["subtasks"]],
                [("S1", "architect", 1), ("S2", "coder", 2), ("S3", "coder", 2)],
                "the corrected plan is shown: S3 is the coder's now",
            )
            plan = self.plan()["plan"]
            self.expect_equal(plan["status"], "proposed", "the plan file says proposed")
            self.expect_equal(
                [phase_of(c) for c in self.fake.model_calls()],
                ["planner", "planner"],
                "nothing ran before the approval",
            )
        with self.step("approve it with a merge strategy of the user's own"):
            edited = {**self.proposal, "merge": {"strategy": USER_STRATEGY}}
            self.user.approve(dialog, {"payload": json.dumps(edited)})
            # The plan list, not GET /api/plans/{id}: the list changes once the run's files are
            # written, while the live plan can say "done" a moment before its file does.
            summary = self.wait_for(
                "GET /api/plans: the plan ran to an end",
                self.summary,
                lambda s: s.get("status") in FINISHED,
                PLAN_TIMEOUT_S,
            )
            self.expect_equal(summary["status"], "done", "the plan is done")
            self.final = self.plan()["plan"]

    def plan(self) -> dict[str, Any]:
        """GET /api/plans/{id}: the plan file (live while it runs) and its merged answer."""
        return self.client.get(f"/api/plans/{self.plan_id}")

    def summary(self) -> dict[str, Any]:
        """The plan's entry in GET /api/plans ({} when it is not listed)."""
        return next((p for p in self.client.get("/api/plans")["plans"] if p["id"] == self.plan_id), {})

    def verify(self) -> None:
        plan = self.final
        subtasks = {s["id"]: s for s in plan["subtasks"]}
        calls = self.fake.model_calls()
        by_phase: dict[str, list[Recorded]] = {}
        for call in calls:
            by_phase.setdefault(phase_of(call), []).append(call)
        with self.step("groups ran in order; group 2 ran side by side"):
            self.expect_equal(
                {sid: s["status"] for sid, s in subtasks.items()},
                dict.fromkeys(TITLES, "completed"),
                "every subtask completed",
            )
            s1, s2, s3 = subtasks["S1"], subtasks["S2"], subtasks["S3"]
            self.check(
                s1["finished_at"] <= min(s2["started_at"], s3["started_at"]),
                "S1 (group 1) finished before group 2 started",
                json.dumps({sid: (s["started_at"], s["finished_at"]) for sid, s in subtasks.items()}),
            )
            self.check(
                max(s2["started_at"], s3["started_at"]) < min(s2["finished_at"], s3["finished_at"]),
                "S2 and S3 (group 2) overlapped in time",
                json.dumps({sid: (s["started_at"], s["finished_at"]) for sid, s in subtasks.items()}),
            )
        with self.step("every request carried its phase's max_tokens"):
            self.expect_equal(
                {phase: len(recorded) for phase, recorded in by_phase.items()},
                {"planner": 2, "execution": 3, "merge": 1, "judge": 1},
                "the model was called 2 + 3 + 1 + 1 times (planner, subtasks, merge, judge)",
            )
            self.expect_equal(self.fake.remaining(), 0, "every scripted answer was used")
            for phase, limit in LIMITS.items():
                self.expect_equal(
                    sorted({c.body.get("max_tokens") for c in by_phase[phase]}),
                    [limit],
                    f"{phase} requests: max_tokens {limit}",
                )
        with self.step("each subtask ran as its agent, with what it builds on"):
            execution = {subtask_of(c): c for c in by_phase["execution"]}
            self.check(
                AGENTS["architect"]["system_prompt"] in json.dumps(execution["S1"].body),
                "S1 was sent with the architect's system prompt",
            )
            tools = sorted(t["function"]["name"] for t in execution["S2"].body.get("tools", []))
            self.expect_equal(tools, ["list_directory", "read_file"], "S2 was offered only the coder's tools")
            s1_result = self.result_text("S1")
            self.check(
                all(s1_result in last_user(execution[sid]) for sid in ("S2", "S3")),
                "S2 and S3 were given S1's result",
            )
        with self.step("the merge request carries every result and the user's strategy"):
            merge = last_user(by_phase["merge"][0])
            self.user.read(merge)
            for sid, title in TITLES.items():
                self.check(
                    f"{sid} ({title}):\n{self.result_text(sid)}" in merge, f"the merge carries {sid}'s result"
                )
            self.check(f"MERGE STRATEGY: {USER_STRATEGY}" in merge, "the merge carries the user's strategy")
        with self.step("the judge's score: in the plan file and the plan list"):
            path = self.workspace / "conductor" / "plans" / f"{self.plan_id}.json"
            on_disk = json.loads(path.read_text(encoding="utf-8"))
            judge = on_disk["metadata"].get("judge", {})
            self.expect_equal(
                (judge.get("score"), judge.get("verdict"), judge.get("reasons")),
                (8, "good", ["covers both endpoints", "has a test"]),
                "the plan file holds the judge's score, verdict and reasons",
            )
            self.expect_equal(on_disk["metadata"].get("edited"), True, "the plan file: approved with an edit")
            summary = self.summary()
            self.expect_equal(
                (summary.get("status"), summary.get("score")), ("done", 8), "GET /api/plans: done, 8"
            )
            merged = self.plan()["plan"].get("merge_result", "")
            self.check(merged.startswith("Merged: a tiny REST API"), "GET /api/plans/{id}: the merged answer")
            merged_file = self.workspace / on_disk["metadata"]["merge_result_path"]
            self.expect_equal(merged_file.read_text(encoding="utf-8"), merged, "the merged answer's file")
            self.expect_equal(self.client.get_value("ai_response"), merged, "the response view shows it")
            try:
                told = self.client.wait_for_event(
                    "notification", lambda n: self.plan_id in n.get("message", ""), timeout=5.0
                )["payload"]["message"]
            except HookWaitTimeout:
                told = ""
            self.expect_equal(
                told,
                f"plan {self.plan_id} is done; judge: 8/10 (good)",
                "the user is told: done, and the score",
            )
        with self.step("the MMA dashboard shows the plan as a track"):
            status = self.client.mma_status()
            track = status["active_track"] or {}
            self.expect_equal(
                (track.get("id"), track.get("kind")), (self.plan_id, "plan"), "the plan is the active track"
            )
            self.expect_equal(
                [(t["id"], t["status"], t["depends_on"]) for t in status["tickets"]],
                [("S1", "completed", []), ("S2", "completed", ["S1"]), ("S3", "completed", ["S1"])],
                "its tickets: S1, then S2 and S3 after it, all completed",
            )
            titles = {t["id"]: t["title"] for t in self.client.get_value("mma_tracks")}
            self.expect_equal(titles.get(self.plan_id), GOAL, "the track list shows it under its goal")
        with self.step("comms.log records every call of the plan"):
            requests = [
                e["payload"].get("message", "")
                for e in self.log_entries("comms")
                if e.get("kind") == "request" and e.get("direction") == "OUT"
            ]
            self.expect_equal(
                sorted(text.split("\n", 1)[0][:40] for text in requests),
                sorted(last_user(c).split("\n", 1)[0][:40] for c in calls),
                "one request entry per model call, with what it asked",
            )

    def result_text(self, subtask: str) -> str:
        """What a subtask answered, from its result file."""
        item = next(s for s in self.final["subtasks"] if s["id"] == subtask)
        return Path(self.workspace, item["result_path"]).read_text(encoding="utf-8").strip()

    # -- attached: agents were created in the app's own project --------------------------------------
    def _agent(self, key: str) -> dict[str, Any] | None:
        try:
            return self.client.get(f"/api/agents/{key}")["agent"]
        except NotFound:
            return None

    def _restore_attached(self) -> list[str]:
        problems: list[str] = []
        for key, before in self._agents_before.items():
            try:
                if before is not None and before.get("scope") == "project":
                    body = {k: v for k, v in before.items() if k not in ("key", "path") and v is not None}
                    self.client.request("PUT", f"/api/agents/{key}", body)
                else:
                    self.client.request("DELETE", f"/api/agents/{key}")
            except HookError as exc:
                problems.append(f"agent {key} could not be put back: {exc}")
        if self._agents_before:
            self.note(
                "attached: the agents architect and coder were put back as they were (one that was new "
                "was deleted: its folder is in the app project's .slop_cache/deleted_agents)"
            )
        return problems + super()._restore_attached()
