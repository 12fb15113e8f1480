"""PlanConductor: a plan's subtasks run as a track by the MMA conductor, then merged and judged.

A plan becomes a track (``kind = "plan"``) whose tickets are its subtasks. Groups run in order
because each subtask of a group depends, in the ticket DAG, on every subtask of the group
before (beside the dependencies the planner gave): the DAG, the worker pool, pause, abort,
per-ticket retry (unblock), persistence and the dashboard are the MMA conductor's. What differs:

- a ticket runs on its subtask's engine (:class:`~manual_slop.plan.worker.SubtaskWorker`) with its
  agent's prompt, tools, memory categories and the execution phase's token limit;
- every save also rewrites the plan file (``conductor/plans/<id>.json``) from the tickets;
- a subtask that fails for good asks the planner to replan the remaining work (behind an
  ``mma_step`` approval, at most ``max_replans`` times);
- when every subtask is done the results are merged (one call) and, unless ``plan.judge`` is
  ``off``, scored by the judge; a judge answer that is not the expected JSON is reported in the
  plan, not fatal.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from manual_slop.agents.profiles import AgentProfile
from manual_slop.cancel import CancelToken
from manual_slop.dialogs import MMAApprovalDialog
from manual_slop.mma.client import TierCaller
from manual_slop.mma.conductor import (
    ConductorConfig,
    ConductorEngine,
    ConductorHost,
    ConductorStatus,
    StateSink,
)
from manual_slop.mma.dag import ExecutionEngine, TrackDAG
from manual_slop.mma.errors import Aborted, MMAError
from manual_slop.mma.models import Ticket, TicketStatus, Track
from manual_slop.mma.persistence import TrackStore
from manual_slop.plan.engines import Engine, EngineResult, SubtaskRun, describe_failure
from manual_slop.plan.model import Plan, PlanStatus, Subtask, SubtaskStatus
from manual_slop.plan.planner import PHASE_TIERS, PlanModels, request_plan
from manual_slop.plan.prompts import (
    judge_prompt,
    judge_schema,
    merge_prompt,
    parse_judge,
    plan_schema,
    replan_prompt,
    subtask_prompt,
)
from manual_slop.plan.store import PlanStore
from manual_slop.plan.validate import PLANNER_KEYS, PlanInvalid, validate_plan
from manual_slop.plan.worker import SubtaskWorker

__all__ = ["PlanConductor", "PlanServices", "group_barriers", "plan_tickets", "plan_track"]

_SUBTASK_STATUS = {
    TicketStatus.TODO: SubtaskStatus.PENDING,
    TicketStatus.IN_PROGRESS: SubtaskStatus.RUNNING,
    TicketStatus.COMPLETED: SubtaskStatus.COMPLETED,
    TicketStatus.BLOCKED: SubtaskStatus.FAILED,
    TicketStatus.KILLED: SubtaskStatus.KILLED,
}
_PLAN_STATUS = {
    ConductorStatus.IDLE: PlanStatus.RUNNING,
    ConductorStatus.RUNNING: PlanStatus.RUNNING,
    ConductorStatus.PAUSED: PlanStatus.PAUSED,
    ConductorStatus.STOPPED: PlanStatus.PAUSED,
    ConductorStatus.BLOCKED: PlanStatus.FAILED,
    ConductorStatus.ABORTED: PlanStatus.ABORTED,
    ConductorStatus.DONE: PlanStatus.DONE,
}


@dataclass(frozen=True, slots=True)
class PlanServices:
    """What a plan run needs from the app, snapshotted when it starts."""

    agents: Mapping[str, AgentProfile]
    engines: Mapping[str, Engine]
    models: PlanModels
    # (agent, phase) -> the AI settings a call is sent with (token limit, agent's prompt and model)
    settings_for: Callable[[AgentProfile | None, str], dict[str, Any]]
    plan_store: PlanStore
    judge: str = "off"
    max_subtasks: int = 12
    project_files: tuple[str, ...] = ()
    on_finished: Callable[[Plan], None] | None = None  # after merge and judge (any final status)
    # stores an engine's exchange as a conversation (engines that are no send of ours: aider)
    record: Callable[[str, SubtaskRun, str], None] | None = None


def group_barriers(
    subtasks: Sequence[Subtask], first_group_waits_for: Sequence[str] = ()
) -> dict[str, list[str]]:
    """For each subtask, the subtasks of the group before its own (the first group waits for
    ``first_group_waits_for``): what it waits for because groups run in order."""
    by_group: dict[int, list[Subtask]] = {}
    for subtask in subtasks:
        by_group.setdefault(subtask.parallel_group, []).append(subtask)
    barriers: dict[str, list[str]] = {}
    previous = list(first_group_waits_for)
    for _group, members in sorted(by_group.items()):
        for subtask in members:
            barriers[subtask.id] = list(previous)
        previous = [s.id for s in members]
    return barriers


def plan_tickets(subtasks: Sequence[Subtask], first_group_waits_for: Sequence[str] = ()) -> list[Ticket]:
    """Tickets of ``subtasks`` in group order: each depends on its declared dependencies and on
    every subtask of the group before it."""
    barriers = group_barriers(subtasks, first_group_waits_for)
    ordered = sorted(subtasks, key=lambda s: s.parallel_group)
    return [
        Ticket(
            id=subtask.id,
            description=f"{subtask.title}: {subtask.objective}",
            depends_on=list(dict.fromkeys([*subtask.depends_on, *barriers[subtask.id]])),
            target_files=list(subtask.files),
        )
        for subtask in ordered
    ]


def plan_track(plan: Plan) -> Track:
    """The track a plan runs as (same id; the goal as its title)."""
    title = " ".join(plan.goal.split())
    return Track(
        id=plan.id,
        title=title if len(title) <= 80 else title[:79] + "…",
        description=f"{plan.goal.strip()}\n\nMerge strategy: {plan.merge_strategy}",
        tickets=plan_tickets(plan.subtasks),
        kind="plan",
    )


class PlanConductor(ConductorEngine):
    """Runs one plan; see the module docstring."""

    def __init__(
        self,
        plan: Plan,
        track: Track,
        event_queue: StateSink | None,
        *,
        host: ConductorHost,
        caller: TierCaller,
        services: PlanServices,
        config: ConductorConfig,
        store: TrackStore,
    ) -> None:
        self.plan = plan
        self.services = services
        self._tokens: dict[str, CancelToken] = {}
        self._phase: PlanStatus | None = None  # merging / judging while they run, then the final one
        self._saved: dict[str, Any] | None = None  # the plan file as last written
        self._phase_token = CancelToken()
        super().__init__(track, event_queue, True, host=host, caller=caller, config=config, store=store)

    # -- the plan as the GUI and the API see it ------------------------------------------------
    def plan_status(self) -> PlanStatus:
        with self._lock:
            return self._phase or _PLAN_STATUS[self._status]

    def plan_snapshot(self) -> dict[str, Any]:
        """The plan as its file says (never ahead of it: a reader that sees "done" finds the file,
        merge and judge included, written)."""
        with self._lock:
            if self._saved is not None:
                return copy.deepcopy(self._saved)
            self._sync()
            return self.plan.to_dict()

    def snapshot(self) -> dict[str, Any]:
        out = super().snapshot()
        with self._lock:
            out["plan"] = {"id": self.plan.id, "goal": self.plan.goal, "status": str(self.plan_status())}
        return out

    # -- workers ---------------------------------------------------------------------------------
    def _worker_for(self, ticket: Ticket, abort: threading.Event) -> Callable[[], None]:
        token = CancelToken()
        self._tokens[ticket.id] = token
        return SubtaskWorker(self, ticket.id, abort, token).run

    def _cancel_worker(self, ticket_id: str, source: str, reason: str) -> None:
        super()._cancel_worker(ticket_id, source, reason)
        token = self._tokens.get(ticket_id)
        if token is not None:
            token.cancel(reason)

    def _cancel_all(self, source: str, reason: str) -> None:
        super()._cancel_all(source, reason)
        for token in list(self._tokens.values()):
            token.cancel(reason)
        self._phase_token.cancel(reason)

    def subtask_run(
        self, ticket_id: str, attempt: int, abort: threading.Event, cancel: CancelToken
    ) -> SubtaskRun:
        with self._lock:
            subtask = copy.deepcopy(self._subtask(ticket_id))
            by_id = self.engine.dag.by_id
            results = {d: by_id[d].result for d in subtask.depends_on if d in by_id and by_id[d].result}
            plan_view = copy.deepcopy(self.plan)
        agent = self.services.agents.get(subtask.agent_key)
        settings = self.services.settings_for(agent, "execution")
        tools = _allowed_tools(subtask.tools, agent.tools if agent is not None else None)
        return SubtaskRun(
            plan_id=self.plan.id,
            subtask_id=subtask.id,
            title=subtask.title,
            prompt=subtask_prompt(plan_view, subtask, results),
            system_prompt=str(settings.get("system_prompt") or ""),
            base_dir=self.config.base_dir,
            abort=abort,
            ask=lambda dialog: self.ask(dialog, abort),
            agent_key=subtask.agent_key,
            tools=tools,
            files=tuple(subtask.files),
            max_tokens=int(settings.get("max_tokens") or 0),
            settings=settings,
            attempt=attempt,
            cancel=cancel,
            memory_categories=agent.memory_categories if agent is not None else (),
        )

    def engine_for(self, ticket_id: str) -> Engine:
        with self._lock:
            name = self._subtask(ticket_id).engine
        engine = self.services.engines.get(name)
        if engine is None:
            raise MMAError(f"subtask {ticket_id}: no engine {name!r}")
        return engine

    def subtask_finished(
        self, ticket_id: str, abort: threading.Event, result: EngineResult, run: SubtaskRun
    ) -> None:
        self.add_usage(ticket_id, dict(result.usage))
        if not result.conversation and self.services.record is not None:
            try:
                self.services.record(f"plan:{self.plan.id}:{ticket_id}:{run.attempt}", run, result.text)
            except Exception as exc:  # the result file below still keeps it
                self._notify("warning", f"subtask {ticket_id}: its exchange was not stored: {exc}")
        try:
            path = self.services.plan_store.write_result(self.plan.id, ticket_id, result.text)
        except OSError as exc:
            self.block(ticket_id, abort, f"its result could not be saved: {exc}", failed=False)
            return
        with self._lock:
            if not self._owned(ticket_id, abort):
                return
            self._subtask(ticket_id).result_path = path
            self.engine.complete(ticket_id, result.text)
            self._changed([self._ticket(ticket_id)])

    def add_usage(self, ticket_id: str, usage: dict[str, int]) -> None:
        inp, out = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
        self.tier_usage.add(PHASE_TIERS["execution"], inp, out)
        with self._lock:
            subtask = self._subtask(ticket_id)
            subtask.usage["input_tokens"] += inp
            subtask.usage["output_tokens"] += out
            self._dirty = True

    def record_phase_usage(self, phase: str, usage: Mapping[str, int]) -> None:
        inp, out = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
        self.tier_usage.add(PHASE_TIERS.get(phase, "Tier 2"), inp, out)
        with self._lock:
            totals = self.plan.metadata.setdefault("usage", {})
            entry = totals.setdefault(phase, {"input_tokens": 0, "output_tokens": 0})
            entry["input_tokens"] += inp
            entry["output_tokens"] += out
            self._dirty = True

    # -- saving ---------------------------------------------------------------------------------
    def _capture(self) -> Any:
        self._sync()
        return copy.deepcopy(self.track), copy.deepcopy(self.plan)

    def _persist(self, captured: Any) -> None:
        track, plan = captured
        super()._persist(track)
        try:
            self.services.plan_store.save(plan)
        except OSError as exc:
            self._notify("error", f"plan {plan.id}: the plan file could not be written: {exc}")
        with self._lock:
            self._saved = plan.to_dict()
        self.host.post_gui_task({"action": "plan_update", "plan": plan.summary()})  # the plan list
        self.host.publish(
            "plan_status", {"plan_id": plan.id, "status": str(plan.status), "counts": plan.counts()}
        )

    def _sync(self) -> None:
        """The plan's subtasks and status from the tickets (under the lock)."""
        subtasks = {s.id: s for s in self.plan.subtasks}
        barriers = group_barriers(self.plan.subtasks)
        for ticket in self.track.tickets:
            subtask = subtasks.get(ticket.id)
            if subtask is None:
                continue
            # what the planner (or a DAG edit) asked for, beside what the group order implies
            implied = set(barriers.get(ticket.id, ())) - set(subtask.depends_on)
            subtask.depends_on = [d for d in ticket.depends_on if d not in implied]
            cascaded = ticket.status is TicketStatus.BLOCKED and bool(ticket.blocked_by)
            subtask.status = SubtaskStatus.PENDING if cascaded else _SUBTASK_STATUS[ticket.status]
            subtask.started_at = ticket.started_at or None
            subtask.finished_at = ticket.finished_at or None
            subtask.error = ticket.blocked_reason or None
            subtask.attempts = ticket.retry_count + (1 if ticket.started_at or ticket.finished_at else 0)
        self.plan.status = self._phase or _PLAN_STATUS[self._status]
        self.plan.metadata["replan_count"] = self.track.replan_count

    def _subtask(self, ticket_id: str) -> Subtask:
        return self.plan.subtask(ticket_id)

    def objective(self, ticket_id: str) -> str:
        """What the subtask is asked to do (the recovery dialog's editable description)."""
        with self._lock:
            return self._subtask(ticket_id).objective

    def edit_description(self, ticket_id: str, abort: threading.Event, description: str) -> None:
        """A human edited the subtask in the recovery dialog: its objective is the new text."""
        with self._lock:
            subtask = self._subtask(ticket_id)
            subtask.objective = description
            self._dirty = True
        super().edit_description(ticket_id, abort, f"{subtask.title}: {description}")

    # -- after the last subtask: merge and judge -------------------------------------------------
    def _after_run(self, final: ConductorStatus) -> ConductorStatus:
        if final is ConductorStatus.DONE:
            try:
                self._merge_and_judge()
            except Aborted:
                final = ConductorStatus.ABORTED
                self._set_phase(None)
        else:
            self._set_phase(None)
        if self.services.on_finished is not None:
            with self._lock:
                self._sync()
                finished = copy.deepcopy(self.plan)
            finished.status = self._phase or _PLAN_STATUS[final]
            self.services.on_finished(finished)
        return final

    def _set_phase(self, phase: PlanStatus | None) -> None:
        with self._lock:
            self._phase = phase
            self._dirty = True
        self._flush()

    def _merge_and_judge(self) -> None:
        services, plan = self.services, self.plan
        with self._lock:
            results = [(t.id, self._subtask(t.id).title, t.result) for t in self.track.tickets]
            strategy = plan.merge_strategy
        self._set_phase(PlanStatus.MERGING)
        try:
            merged = services.models.ask(
                "merge", merge_prompt(plan.goal, results, strategy),
                conversation=f"plan:{plan.id}:merge", cancel=self._phase_token,
            )  # fmt: skip
            path = services.plan_store.write_result(plan.id, "merge", merged)
        except Aborted:
            raise
        except Exception as exc:
            with self._lock:
                plan.metadata["merge_error"] = describe_failure(exc)
            self._notify("error", f"plan {plan.id}: the merge failed: {describe_failure(exc)}")
            self._set_phase(PlanStatus.FAILED)
            return
        with self._lock:
            plan.metadata["merge_result_path"] = path
            plan.metadata["merged_at"] = time.time()
        if services.judge != "off":
            self._judge(merged)
        self._set_phase(PlanStatus.DONE)

    def _judge(self, merged: str) -> None:
        plan = self.plan
        self._set_phase(PlanStatus.JUDGING)
        with self._lock:
            self._sync()
            view = copy.deepcopy(plan)
        try:
            answer = self.services.models.ask(
                "judge", judge_prompt(view, merged), conversation=f"plan:{plan.id}:judge",
                schema=judge_schema(), cancel=self._phase_token, provider=self.services.judge,
            )  # fmt: skip
            score = parse_judge(answer)
        except Aborted:
            raise
        except Exception as exc:  # a bad answer or a failed call: reported, the plan still stands
            with self._lock:
                plan.metadata["judge_error"] = describe_failure(exc)
            self._notify(
                "warning", f"plan {plan.id}: the judge's answer was not usable: {describe_failure(exc)}"
            )
            return
        with self._lock:
            plan.metadata["judge"] = {**score.to_dict(), "provider": self.services.judge}

    # -- replanning the remaining work -----------------------------------------------------------
    def _replan(self, ticket_id: str, error: str) -> None:
        with self._lock:
            if self.track.replan_count >= self.config.max_replans or ticket_id not in self.engine.dag.by_id:
                return
            self._sync()
            failed = copy.deepcopy(self._subtask(ticket_id))
            kept = [
                t.id
                for t in self.track.tickets
                if t.status in (TicketStatus.COMPLETED, TicketStatus.IN_PROGRESS)
            ]
            done = [copy.deepcopy(s) for s in self.plan.subtasks if s.id in kept]
            remaining = [copy.deepcopy(s) for s in self.plan.subtasks if s.id not in kept]
            view = copy.deepcopy(self.plan)
            self._tiers["Tier 1"] += 1  # the planner replans
            self._dirty = True
        self._flush()
        services = self.services
        number = view.metadata.get("replan_count", 0) + 1

        def validate(data: Any) -> list:
            return validate_plan(
                data, agents=services.agents.keys(), engines=_availability(services.engines),
                max_subtasks=services.max_subtasks, done=kept,
            )  # fmt: skip

        def ask(message: str) -> str:
            return services.models.ask(
                "planner", message, conversation=f"plan:{view.id}:replan{number}",
                schema=plan_schema(sorted(services.agents), _usable(services.engines), services.max_subtasks),
                cancel=self._phase_token,
            )  # fmt: skip

        try:
            data, _reply = request_plan(ask, replan_prompt(view, failed, error, done, remaining), validate)
        except Aborted:
            return
        except PlanInvalid as exc:
            self._notify("error", f"plan {view.id}: the replan after {ticket_id} stayed invalid:\n{exc}")
            return
        except Exception as exc:
            self._notify(
                "warning", f"plan {view.id}: replanning after {ticket_id} failed: {describe_failure(exc)}"
            )
            return
        finally:
            with self._lock:
                self._tiers["Tier 1"] -= 1
                self._dirty = True
        payload = {"replan": number, "replaces": [s.id for s in remaining], **data}
        decision = self.ask(MMAApprovalDialog(view.id, json.dumps(payload, indent=2)), self._abort_all)
        if decision is None or decision.abort or not decision.approved:
            if decision is not None and decision.abort:
                self.abort(source=decision.decider)
            self._notify("info", f"plan {view.id}: the replan after {ticket_id} was not applied")
            return
        try:
            edited = json.loads(decision.payload["payload"])
            issues = validate(edited)
        except (json.JSONDecodeError, TypeError) as exc:
            self._notify("error", f"plan {view.id}: the edited replan is not valid JSON ({exc}); not applied")
            return
        if issues:
            text = "\n".join(i.message for i in issues)
            self._notify("error", f"plan {view.id}: the edited replan is invalid; not applied:\n{text}")
            return
        self._apply_replan(edited)

    def _apply_replan(self, data: Mapping[str, Any]) -> None:
        new = [
            Subtask.from_dict({k: item[k] for k in PLANNER_KEYS if k in item}, f"replan.subtasks[{i}]")
            for i, item in enumerate(data["subtasks"])
        ]  # only what a planner may say: a reply cannot preset results, usage or errors
        with self._lock:
            running = set(self.engine.in_progress())
            keep = running | {t.id for t in self.track.tickets if t.status is TicketStatus.COMPLETED}
            kept = [s for s in self.plan.subtasks if s.id in keep]
            last = max((s.parallel_group for s in kept), default=0)
            for subtask in new:  # the new groups come after the kept ones, in run order
                subtask.parallel_group += last
            waits_for = [s.id for s in kept if s.parallel_group == last]
            tickets = [t for t in self.track.tickets if t.id in keep] + plan_tickets(new, waits_for)
            try:  # a kept ticket may have been aborted meanwhile: validate before replacing anything
                engine = ExecutionEngine(TrackDAG(tickets))
            except MMAError as exc:
                self._notify("error", f"plan {self.plan.id}: the replan no longer fits ({exc}); not applied")
                return
            self.plan.subtasks = kept + new
            self.plan.merge_strategy = str(data["merge"]["strategy"])
            self.track.tickets = tickets
            self.track.replan_count += 1
            self.engine = engine
            self._changed(self.track.tickets)


def _allowed_tools(
    subtask_tools: list[str] | None, agent_tools: tuple[str, ...] | None
) -> tuple[str, ...] | None:
    """The subtask's tools within its agent's (the agent's list wins where both are given)."""
    if subtask_tools is None:
        return agent_tools
    if agent_tools is None:
        return tuple(subtask_tools)
    return tuple(t for t in subtask_tools if t in agent_tools)


def _availability(engines: Mapping[str, Engine]) -> dict[str, str | None]:
    return {name: engine.availability() for name, engine in engines.items()}


def _usable(engines: Mapping[str, Engine]) -> list[str]:
    return [name for name, why in _availability(engines).items() if why is None]
