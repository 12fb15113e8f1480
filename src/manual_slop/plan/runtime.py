"""PlanRuntime: the controller's ``/plan`` side — planning threads, approval, runs, the plan list.

``start(goal)`` (main thread) snapshots what the planner needs (agents, engines, memory, settings),
saves the plan file at once (``planning``) and plans on a thread: the planner's answer is
validated (one correction round), saved as ``proposed`` and shown for approval as an editable
``mma_step`` dialog. An approved plan runs as a track of the MMA runtime
(:class:`~manual_slop.plan.conductor.PlanConductor`), so the dashboard, the DAG view and the
MMA actions (pause, resume, abort, per-ticket retry) work on it. A plan that stays invalid, or
that the user rejects, is saved with its status and never runs. Threads report back with task
dicts (``plan_update``, ``plan_approved``, ``plan_finished``) and events, never by writing the state.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
import threading
import time
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from manual_slop.agents.bindings import apply_profile
from manual_slop.agents.profiles import AgentProfile
from manual_slop.automation import InvalidValue
from manual_slop.cancel import CancelToken
from manual_slop.dialogs import Decider, MMAApprovalDialog
from manual_slop.mma.conductor import ConductorConfig, ConductorEngine
from manual_slop.mma.errors import Aborted
from manual_slop.mma.models import Track
from manual_slop.plan.conductor import PlanConductor, PlanServices, group_barriers, plan_track
from manual_slop.plan.engines import Engine, describe_failure
from manual_slop.plan.llm_engine import ModelAccess
from manual_slop.plan.model import Plan, PlanError, PlanStatus, SubtaskStatus
from manual_slop.plan.planner import PlanModels, request_plan
from manual_slop.plan.prompts import plan_schema, planner_prompt, system_info
from manual_slop.plan.store import PlanStore
from manual_slop.plan.validate import PlanInvalid, build_plan, validate_plan
from manual_slop.token_profiles import TokenProfiles

if TYPE_CHECKING:
    from manual_slop.controller import AppController

__all__ = ["DEFAULT_AGENT", "ENGINE_DESCRIPTIONS", "MAX_GOAL_CHARS", "PlanRuntime", "PlanSettings"]

log = logging.getLogger(__name__)

MAX_GOAL_CHARS = 4000
ENGINE_DESCRIPTIONS = {
    "llm": "our tool loop: the agent's model with its prompt and allowed tools (edits behind approval)",
    "aider": "the Aider CLI editing the subtask's files in a scratch copy; its diff applied after approval",
    "gemini_cli": "one run of the Gemini CLI with its own tools, each call asking for approval",
}


# the agent a project without agent profiles plans with (agents/<key>/ folders replace it)
DEFAULT_AGENT = AgentProfile(
    key="general",
    system_prompt="You are a careful software engineer. Do the one subtask you are given; say what you did.",
    description="a general engineer (the project has no agent profiles in agents/)",
    scope="builtin",
)


@dataclasses.dataclass(frozen=True, slots=True)
class PlanSettings:
    """The project's ``[plan]`` table."""

    max_subtasks: int = 12
    judge: str = "off"
    engine_timeout_s: float = 600.0

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> PlanSettings:
        return cls(
            max_subtasks=int(raw.get("max_subtasks", 12)),
            judge=str(raw.get("judge", "off")),
            engine_timeout_s=float(raw.get("engine_timeout_s", 600.0)),
        )


@dataclasses.dataclass(frozen=True, slots=True)
class _Snapshot:
    """What a plan needs from the main thread, taken when it starts (or resumes)."""

    base_dir: Path
    agents: Mapping[str, AgentProfile]
    settings: dict[str, Any]  # ctrl.ai_settings()
    profiles: TokenProfiles
    plan: PlanSettings
    memory_summary: str
    project_files: tuple[str, ...]

    def settings_for(self, agent: AgentProfile | None, phase: str) -> dict[str, Any]:
        settings = copy.deepcopy(self.settings)
        profiles = self.profiles
        if agent is not None and agent.token_profile:
            profiles = TokenProfiles(agent.token_profile, profiles.custom)
        apply_profile(settings, agent, profiles, phase)
        return settings


class PlanRuntime:
    """Owns the plans of one controller; public methods run on the main thread."""

    def __init__(self, ctrl: AppController, access: ModelAccess, engines: Mapping[str, Engine]) -> None:
        self.ctrl = ctrl
        self.access = access
        self.engines = dict(engines)
        self._lock = threading.Lock()  # guards _plans (planning threads and conductors report in)
        self._plans: dict[str, dict[str, Any]] = {}  # id -> summary, newest last
        self._threads: dict[str, threading.Thread] = {}
        self._stop = threading.Event()
        self._cancel = CancelToken()  # stops the planner's call in flight at shutdown
        self._open: dict[str, MMAApprovalDialog] = {}  # proposals waiting for a decision
        self._checked: tuple[float, dict[str, str | None]] | None = None  # (when, engine availability)
        self._installing: Any = None  # the Aider install's future while it runs
        self._install_cancel = threading.Event()

    # -- the list --------------------------------------------------------------------------------
    def store(self) -> PlanStore:
        return PlanStore(self.ctrl.base_dir(), self.ctrl.redactor)

    def load(self) -> None:
        """Read every stored plan (start-up, project switch); problems become notifications."""
        store = self.store()
        plans, problems = store.load_all()
        for plan in plans:  # the app ended while these were under way: say so in their files
            interrupted = _INTERRUPTED.get(plan.status)
            if interrupted is not None and self._conductor(plan.id) is None:
                plan.status = interrupted
                plan.metadata["interrupted"] = "the app ended while the plan was under way"
                for subtask in plan.subtasks:  # their workers died with the app, as MMA's tickets do
                    if subtask.status is SubtaskStatus.RUNNING:
                        subtask.status = SubtaskStatus.PENDING
                try:
                    store.save(plan)
                except OSError as exc:
                    problems.append(f"{store.path(plan.id)} cannot be written: {exc}")
        with self._lock:
            self._plans = {p.id: p.summary() for p in plans}
        for problem in problems:
            self.ctrl.notify("error", f"plans: {problem}")
        self._publish_list()

    def summaries(self) -> list[dict[str, Any]]:
        with self._lock:
            return [copy.deepcopy(s) for s in self._plans.values()]

    def get(self, plan_id: str) -> dict[str, Any]:
        """The plan file's content (the live one while it runs), with its merged answer. Any
        thread: it reads files and the running conductor, never the GUI state."""
        conductor = self._conductor(plan_id)
        if conductor is not None:
            data = conductor.plan_snapshot()
        else:
            try:
                data = self.store().load(plan_id).to_dict()
            except PlanError as exc:
                raise LookupError(str(exc)) from None
        merged = data["metadata"].get("merge_result_path")
        if merged:
            try:
                data["merge_result"] = self.store().read_result(merged)
            except (OSError, PlanError) as exc:
                data["merge_result"] = f"(the merged result cannot be read: {exc})"
        return data

    def _conductor(self, plan_id: str) -> PlanConductor | None:
        mma = getattr(self.ctrl, "mma", None)
        conductor = getattr(mma, "conductor", None)
        if isinstance(conductor, PlanConductor) and conductor.plan.id == plan_id:
            return conductor
        return None

    # -- planning (main thread → planner thread) ----------------------------------------------
    def start(self, goal: str) -> str:
        """Plan ``goal`` on a thread; the new plan's id. InvalidValue names what is wrong."""
        goal = " ".join(goal.split()) if "\n" not in goal else goal.strip()
        if not goal:
            raise InvalidValue("/plan needs a goal: /plan <what to build>")
        if len(goal) > MAX_GOAL_CHARS:
            raise InvalidValue(f"the goal is {len(goal):,} characters; at most {MAX_GOAL_CHARS:,}")
        if self.ctrl.backend is None:
            raise InvalidValue("no AI provider is available to plan with")
        goal = self.ctrl.redactor.redact(goal)  # it names files, folders and events: never a key
        # one planner at a time; plans that only wait for your approval do not hold up a new one
        busy = [pid for pid, t in self._threads.items() if t.is_alive() and pid not in self._open]
        if busy:
            raise InvalidValue(f"plan {busy[0]} is still being planned; wait for its proposal")
        snapshot = self._snapshot()
        store = self.store()
        plan = Plan(
            id=store.new_id(goal),
            goal=goal,
            subtasks=[],
            merge_strategy="",
            status=PlanStatus.PLANNING,
            metadata={"created_at": datetime.now().isoformat(timespec="seconds")},
        )
        try:
            store.save(plan)
        except OSError as exc:
            raise InvalidValue(f"the plan file cannot be written: {exc}") from None
        self._remember(plan)
        thread = threading.Thread(
            target=self._plan, args=(plan, snapshot, store), name=f"slop-plan-{plan.id[:24]}", daemon=True
        )
        self._threads[plan.id] = thread
        thread.start()
        return plan.id

    def _snapshot(self) -> _Snapshot:
        ctrl = self.ctrl
        binding = getattr(ctrl, "agents", None)
        catalog = binding.reload() if binding is not None else None
        agents = dict(catalog.agents) if catalog is not None else {}
        if not agents:  # no profiles yet: /plan still works, every subtask as one general agent
            agents = {DEFAULT_AGENT.key: DEFAULT_AGENT}
        profiles = binding.token_profiles() if binding is not None else TokenProfiles()
        return _Snapshot(
            base_dir=ctrl.base_dir(),
            agents=agents,
            settings=ctrl.ai_settings(),
            profiles=profiles,
            plan=PlanSettings.of(ctrl.state.plan_settings),
            memory_summary=self._memory_summary(),
            project_files=tuple(ctrl.state.project_files),
        )

    def _memory_summary(self) -> str:
        memory = getattr(self.ctrl, "memory", None)
        service = getattr(memory, "service", None)
        if service is None:
            return "no memory store"
        try:
            conversations = service.store.conversations()
            notes = service.notes.all()
            profile = service.profile.lines()
        except Exception as exc:  # a broken store must not stop planning
            return f"unavailable ({type(exc).__name__})"
        kinds: dict[str, int] = {}
        for conversation in conversations:
            kinds[conversation["kind"]] = kinds.get(conversation["kind"], 0) + 1
        categories = sorted({n.category for n in notes})
        parts = [
            f"{len(conversations)} stored conversations ({', '.join(f'{n} {k}' for k, n in kinds.items())})"
        ]
        parts.append(f"{len(notes)} notes" + (f" in {', '.join(categories)}" if categories else ""))
        parts.append(f"a profile of {len(profile)} lines")
        return "; ".join(parts)

    def _models(self, snapshot: _Snapshot, usage: Any = None) -> PlanModels:
        return PlanModels(self.access, lambda phase: snapshot.settings_for(None, phase), usage)

    def _availability(self) -> dict[str, str | None]:
        return {name: engine.availability() for name, engine in self.engines.items()}

    def engine_availability(self, max_age_s: float = 2.0) -> dict[str, str | None]:
        """Each engine and why it cannot run here, checked at most every ``max_age_s`` (a panel
        may ask every frame; the checks look for programs and files)."""
        now = time.monotonic()
        if self._checked is None or now - self._checked[0] > max_age_s:
            self._checked = (now, self._availability())
        return dict(self._checked[1])

    def _plan(self, plan: Plan, snapshot: _Snapshot, store: PlanStore) -> None:
        """The planner thread: plan, validate (one correction), propose, wait for the decision."""
        availability = self._availability()
        usable = [name for name, why in availability.items() if why is None]
        agents = sorted(snapshot.agents)
        limit = snapshot.plan.max_subtasks
        usage: dict[str, int] = {"input_tokens": 0, "output_tokens": 0}

        def count(_phase: str, used: Mapping[str, int]) -> None:
            for key in usage:
                usage[key] += int(used.get(key, 0))

        models = self._models(snapshot, count)
        prompt = planner_prompt(
            plan.goal,
            agents=[{"key": k, "description": snapshot.agents[k].description} for k in agents],
            engines={name: ENGINE_DESCRIPTIONS.get(name, name) for name in usable},
            memory_summary=snapshot.memory_summary,
            info=system_info(),
            max_subtasks=limit,
        )

        def ask(message: str) -> str:
            return models.ask(
                "planner", message, conversation=f"plan:{plan.id}:planner",
                schema=plan_schema(agents, usable, limit), cancel=self._cancel,
            )  # fmt: skip

        def validate(data: Any) -> list[Any]:
            return validate_plan(data, agents=agents, engines=availability, max_subtasks=limit)

        settings = snapshot.settings_for(None, "planner")
        plan.metadata.update(
            planner_provider=settings.get("provider", ""), planner_model=settings.get("model", "")
        )
        try:
            data, _reply = request_plan(ask, prompt, validate)
            proposed = build_plan(
                data, plan_id=plan.id, goal=plan.goal, agents=agents, engines=availability,
                max_subtasks=limit, metadata=plan.metadata,
            )  # fmt: skip
        except PlanInvalid as exc:
            self._finish_unrun(plan, store, PlanStatus.INVALID, exc, reply=exc.reply, usage=usage)
            return
        except Exception as exc:
            status = PlanStatus.ABORTED if self._stop.is_set() else PlanStatus.FAILED
            self._finish_unrun(plan, store, status, exc, usage=usage)
            return
        proposed.metadata["usage"] = {"planner": dict(usage)}
        self._save(proposed, store)
        if self._stop.is_set():
            return
        self._propose(proposed, store, agents, availability, limit)

    def _propose(
        self, plan: Plan, store: PlanStore, agents: list[str], engines: Mapping[str, str | None], limit: int
    ) -> None:
        view = {"plan": plan.id, "goal": plan.goal, **_planner_view(plan)}
        dialog = MMAApprovalDialog(plan.id, json.dumps(view, indent=2, ensure_ascii=False))
        dialog.source_tier = "Tier 1"
        self._open[plan.id] = dialog
        try:
            decision = self.ctrl.request_approval(dialog)
        finally:
            self._open.pop(plan.id, None)
        if self._stop.is_set():
            return  # the app is closing: the plan stays proposed (btn_plan_propose asks again)
        if decision.abort or not decision.approved:
            plan.status = PlanStatus.REJECTED
            plan.metadata["rejected"] = decision.reason or f"rejected by {decision.decider}"
            self._save(plan, store)
            self._notify("info", f"plan {plan.id} was not approved; nothing ran")
            return
        try:
            edited = json.loads(decision.payload["payload"])
            approved = build_plan(
                edited, plan_id=plan.id, goal=plan.goal, agents=agents, engines=engines,
                max_subtasks=limit, metadata=plan.metadata,
            )  # fmt: skip
        except (json.JSONDecodeError, TypeError) as exc:
            self._finish_unrun(
                plan, store, PlanStatus.INVALID, PlanError(f"the edited plan is not JSON: {exc}")
            )
            return
        except PlanError as exc:
            self._finish_unrun(plan, store, PlanStatus.INVALID, exc)
            return
        approved.metadata["approved_by"] = decision.decider
        approved.metadata["edited"] = decision.edited
        self._save(approved, store)
        self.ctrl.post_gui_task({"action": "plan_approved", "plan_id": approved.id})

    def _finish_unrun(
        self,
        plan: Plan,
        store: PlanStore,
        status: PlanStatus,
        error: BaseException,
        *,
        reply: str = "",
        usage: Mapping[str, int] | None = None,
    ) -> None:
        """A plan that will not run: saved with why (every issue), reported to the user."""
        if isinstance(error, Aborted):
            status = PlanStatus.ABORTED
        plan.status = status
        issues = getattr(error, "issues", None)
        plan.metadata["errors"] = [i.message for i in issues] if issues else [describe_failure(error)]
        if reply:
            plan.metadata["planner_reply"] = reply[:20_000]
        if usage is not None:
            plan.metadata["usage"] = {"planner": dict(usage)}
        self._save(plan, store)
        bullets = "\n".join(f"- {line}" for line in plan.metadata["errors"])
        self._notify("error", f"plan {plan.id} is {status}; nothing runs:\n{bullets}")

    # -- running (main thread) ------------------------------------------------------------------
    def run_approved(self, plan_id: str) -> None:
        """Start an approved plan as a track of the MMA runtime (the ``plan_approved`` task)."""
        plan = self.store().load(plan_id)
        track = plan_track(plan)
        mma = self.ctrl.mma  # type: ignore[attr-defined]
        mma.store().save(track)
        mma.add_track(track)
        try:
            mma.start_track(track.id)
        except InvalidValue as exc:
            plan.status = PlanStatus.PAUSED
            plan.metadata["waiting"] = str(exc)
            self._save(plan, self.store())
            self._notify("warning", f"plan {plan_id} is approved but cannot start now ({exc}); start it "
                                    f"from the MMA dashboard (btn_mma_start_track {plan_id})")  # fmt: skip

    def build_conductor(self, track: Track, config: ConductorConfig) -> ConductorEngine:
        """The conductor of a ``plan`` track (MMA's ``start_track`` asks, main thread)."""
        store = self.store()
        try:
            plan = store.load(track.id)
        except PlanError as exc:
            raise InvalidValue(f"track {track.id} is a plan, but {exc}") from None
        snapshot = self._snapshot()
        for engine in self.engines.values():  # external engines take the project's timeout
            if hasattr(engine, "timeout_s"):
                engine.timeout_s = snapshot.plan.engine_timeout_s
        holder: dict[str, PlanConductor] = {}
        services = PlanServices(
            agents=snapshot.agents,
            engines=self.engines,
            models=self._models(snapshot, lambda phase, used: holder["c"].record_phase_usage(phase, used)),
            settings_for=snapshot.settings_for,
            plan_store=store,
            judge=snapshot.plan.judge,
            max_subtasks=snapshot.plan.max_subtasks,
            project_files=snapshot.project_files,
            on_finished=self._finished,
            record=self.access.record,
        )
        mma = self.ctrl.mma  # type: ignore[attr-defined]
        conductor = PlanConductor(
            plan, track, self.ctrl.event_queue, host=self.ctrl, caller=mma.caller(),
            services=services, config=config, store=mma.store(),
        )  # fmt: skip
        holder["c"] = conductor
        plan.status = PlanStatus.RUNNING
        self._remember(plan)
        return conductor

    def _finished(self, plan: Plan) -> None:
        """A run ended (conductor thread): the plan list, the answer and a notification, on main."""
        self.ctrl.post_gui_task({"action": "plan_finished", "plan": plan.to_dict()})

    def finished(self, data: Mapping[str, Any]) -> None:
        """The ``plan_finished`` task (main thread)."""
        plan = Plan.from_dict(data)
        self._remember(plan)
        state = self.ctrl.state
        merged = plan.metadata.get("merge_result_path")
        judge = plan.metadata.get("judge")
        if plan.status is PlanStatus.DONE and merged:
            try:
                state.ai_response = self.store().read_result(merged)
            except (OSError, PlanError) as exc:
                state.ai_response = f"(the merged result cannot be read: {exc})"
            score = f"; judge: {judge['score']:g}/10 ({judge['verdict']})" if isinstance(judge, dict) else ""
            self.ctrl.notify("info", f"plan {plan.id} is done{score}")
        else:
            self.ctrl.notify("warning", f"plan {plan.id} ended {plan.status}")
        self.ctrl.publish(
            "plan_status", {"plan_id": plan.id, "status": str(plan.status), "counts": plan.counts()}
        )

    # -- DAG edits of a plan's track (MMA's set_dependencies asks, main thread) -------------------
    def check_dependencies(self, track: Track, ticket_id: str, wanted: list[str]) -> list[str]:
        """A plan's rule for a DAG edit: a subtask keeps waiting for the group before its own, and
        depends only on subtasks of earlier groups. InvalidValue names the subtask and the rule."""
        try:
            plan = self.store().load(track.id)
        except PlanError as exc:
            raise InvalidValue(str(exc)) from None
        groups = {s.id: s.parallel_group for s in plan.subtasks}
        barrier = group_barriers(plan.subtasks).get(ticket_id, [])
        dropped = [d for d in barrier if d not in wanted]
        if dropped:
            raise InvalidValue(
                f"subtask {ticket_id}: groups run in order, so it waits for {', '.join(dropped)} of the "
                "group before its own; change its parallel_group in the plan instead [rule: dependency_order]"
            )
        group = groups.get(ticket_id, 0)
        for dep in wanted:
            if groups.get(dep, 0) >= group:
                raise InvalidValue(
                    f"subtask {ticket_id}: it is in group {group} but would depend on {dep} in group "
                    f"{groups.get(dep)}; a subtask may depend only on subtasks of earlier groups "
                    "[rule: dependency_order]"
                )
        return wanted

    def sync_plan_file(self, track: Track) -> None:
        """After a DAG edit of a plan that is not running: its plan file says the same."""
        store = self.store()
        try:
            plan = store.load(track.id)
        except PlanError as exc:
            self.ctrl.notify("error", str(exc))
            return
        barriers = group_barriers(plan.subtasks)
        tickets = {t.id: t for t in track.tickets}
        for subtask in plan.subtasks:
            if subtask.id in tickets:
                implied = set(barriers.get(subtask.id, ())) - set(subtask.depends_on)
                subtask.depends_on = [d for d in tickets[subtask.id].depends_on if d not in implied]
        self._save(plan, store)

    # -- plumbing --------------------------------------------------------------------------------
    def _save(self, plan: Plan, store: PlanStore) -> None:
        try:
            store.save(plan)
        except OSError as exc:
            self._notify("error", f"plan {plan.id}: the plan file could not be written: {exc}")
        self.ctrl.post_gui_task({"action": "plan_update", "plan": plan.summary()})
        self.ctrl.publish(
            "plan_status", {"plan_id": plan.id, "status": str(plan.status), "counts": plan.counts()}
        )

    def _remember(self, plan: Plan) -> None:
        with self._lock:
            self._plans.pop(plan.id, None)
            self._plans[plan.id] = plan.summary()
        self._publish_list()

    def update(self, summary: Mapping[str, Any]) -> None:
        """The ``plan_update`` task (main thread)."""
        with self._lock:
            self._plans.pop(str(summary["id"]), None)
            self._plans[str(summary["id"])] = dict(summary)
        self._publish_list()

    def _publish_list(self) -> None:
        if self.ctrl.on_main_thread():
            self.ctrl.state.plans = self.summaries()

    def _notify(self, level: str, message: str) -> None:
        log.log(logging.ERROR if level == "error" else logging.INFO, "%s", message)
        self.ctrl.post_gui_task({"action": "notify", "level": level, "message": message})

    def switch_refusal(self) -> str | None:
        busy = [pid for pid, t in self._threads.items() if t.is_alive()]
        if not busy:
            return None
        waiting = busy[0] in self._open
        return f"plan {busy[0]} {'waits for your approval' if waiting else 'is being planned'}"

    def propose_again(self, plan_id: str) -> None:
        """Show a ``proposed`` plan's approval again (one left waiting when the app closed)."""
        try:
            plan = self.store().load(plan_id)
        except PlanError as exc:
            raise InvalidValue(str(exc)) from None
        if plan.status is not PlanStatus.PROPOSED:
            raise InvalidValue(f"plan {plan_id} is {plan.status}; only a proposed plan waits for approval")
        if plan_id in self._open or (plan_id in self._threads and self._threads[plan_id].is_alive()):
            raise InvalidValue(f"plan {plan_id} is already waiting for approval")
        snapshot = self._snapshot()
        agents, limit = sorted(snapshot.agents), snapshot.plan.max_subtasks
        thread = threading.Thread(
            target=self._propose, args=(plan, self.store(), agents, self._availability(), limit),
            name=f"slop-plan-{plan_id[:24]}", daemon=True,
        )  # fmt: skip
        self._threads[plan_id] = thread
        thread.start()

    def install_aider(self) -> None:
        """Install the pinned Aider into ``.tools/aider`` in the background (the engine's first use
        on this machine); a notification says how it went."""
        from manual_slop.plan.aider_install import install_aider

        if self._installing is not None and not self._installing.done():
            raise InvalidValue("Aider is already being installed")
        tools_dir = getattr(self.engines.get("aider"), "tools_dir", None)

        def done(changed: bool) -> None:
            self._checked = None
            self.ctrl.notify("info", "Aider is installed" if changed else "Aider was already installed")

        def failed(exc: BaseException) -> None:
            self.ctrl.notify("error", f"Aider could not be installed: {exc}")

        self.ctrl.notify("info", "installing Aider into .tools/aider (about a minute) ...")
        self._installing = self.ctrl.run_in_background(
            lambda: install_aider(tools_dir, log=log.info, cancel=self._install_cancel), done, failed
        )

    def shutdown(self, timeout: float = 1.0) -> None:
        """Stop planning threads: the planner's call is cancelled, open proposals are closed (they
        stay ``proposed`` on disk); bounded joins."""
        self._stop.set()
        self._install_cancel.set()  # an Aider install in progress is killed, its folder left unstamped
        self._cancel.cancel("the app is shutting down")
        for dialog in list(self._open.values()):
            dialog.resolve(False, decider=Decider.SHUTDOWN, reason="the app is shutting down")
        deadline = time.monotonic() + timeout
        for thread in list(self._threads.values()):
            thread.join(max(0.0, deadline - time.monotonic()))


# what a plan found under way at start becomes (its track can be resumed from the dashboard)
_INTERRUPTED = {
    PlanStatus.PLANNING: PlanStatus.FAILED,
    PlanStatus.RUNNING: PlanStatus.PAUSED,
    PlanStatus.MERGING: PlanStatus.PAUSED,
    PlanStatus.JUDGING: PlanStatus.PAUSED,
}


def _planner_view(plan: Plan) -> dict[str, Any]:
    """The plan as the planner wrote it (what the approval dialog shows and lets the user edit)."""
    keys = ("id", "title", "objective", "agent_key", "engine", "parallel_group", "depends_on")
    subtasks = []
    for subtask in plan.subtasks:
        item = {key: getattr(subtask, key) for key in keys}
        if subtask.tools is not None:
            item["tools"] = list(subtask.tools)
        if subtask.files:
            item["files"] = list(subtask.files)
        if subtask.notes:
            item["notes"] = subtask.notes
        subtasks.append(item)
    return {"subtasks": subtasks, "merge": {"strategy": plan.merge_strategy}}
