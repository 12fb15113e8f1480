"""MMARuntime: the controller's MMA side — planning threads, the active conductor, stored tracks.

Action handlers (main thread) validate, snapshot what the background work needs
from ``ctrl.state``, and hand off to a thread; threads report back with task dicts
(``show_track_proposal``, ``mma_state_update``, ``notify``) and events, never by
writing the state. One track runs at a time.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from manual_slop.automation import FeatureUnavailable, InvalidValue
from manual_slop.governance.cost import Budgets, CostWatch
from manual_slop.mma.client import MMAServices, TierCaller
from manual_slop.mma.conductor import ConductorConfig, ConductorEngine
from manual_slop.mma.dag import ExecutionEngine, TrackDAG
from manual_slop.mma.errors import Aborted, MMAError, PersistenceError
from manual_slop.mma.ladder import tier3_ladder
from manual_slop.mma.models import Priority, TicketStatus, TierUsage, Track, TrackStatus
from manual_slop.mma.persistence import TrackStore
from manual_slop.mma.planning import new_track_id, plan_epic, plan_track
from manual_slop.mma.tier4 import policy_check
from manual_slop.mma.worktree import discard_kept
from manual_slop.tools.security import PathPolicy
from manual_slop.usage.bindings import budgets, ledger_of

if TYPE_CHECKING:
    from manual_slop.controller import AppController

__all__ = ["ASKING_TIER1", "ASKING_TIER2", "BUILDING_CONTEXT", "MMARuntime", "MMASettings", "proposal_of"]

log = logging.getLogger(__name__)

# what a planning thread is doing (``mma_progress``; the dashboard shows "Planning… (…)")
BUILDING_CONTEXT = "building context"
ASKING_TIER1 = "asking Tier 1"
ASKING_TIER2 = "asking Tier 2"
EDITABLE = ("title", "description", "priority")  # what the user may change in a proposal
PRIORITIES = tuple(str(p) for p in Priority)

DEFAULT_SETTINGS: dict[str, Any] = {
    "tier1_model": "",
    "tier2_model": "",
    "tier3_models": [],
    "tier4_model": "",
    "max_workers": 4,
    "max_replans": 3,
    "tier4_patches": True,
    "backend": "threads",
    "ray_address": "",
    "ray_num_cpus": 1.0,
    "ray_max_retries": 2,
    "ray_runtime_env": {},
    "worktree_approvals": "ask",
}


class MMASettings:
    """Typed view of ``state.mma_settings`` (the project's ``[mma]`` table)."""

    def __init__(self, raw: dict[str, Any]) -> None:
        merged = {**DEFAULT_SETTINGS, **raw}
        self.tier1_model: str = merged["tier1_model"]
        self.tier2_model: str = merged["tier2_model"]
        self.tier3_models: tuple[str, ...] = tuple(merged["tier3_models"])
        self.tier4_model: str = merged["tier4_model"]
        self.max_workers: int = merged["max_workers"]
        self.max_replans: int = merged["max_replans"]
        self.tier4_patches: bool = merged["tier4_patches"]
        self.backend: str = merged["backend"]
        self.ray_address: str = merged["ray_address"]
        self.ray_num_cpus: float = float(merged["ray_num_cpus"])
        self.ray_max_retries: int = int(merged["ray_max_retries"])
        self.ray_runtime_env: dict[str, Any] = dict(merged["ray_runtime_env"])
        self.worktree_approvals: str = merged["worktree_approvals"]


class MMARuntime:
    """Owns the MMA threads of one controller; every public method runs on the main thread."""

    def __init__(self, ctrl: AppController, services: MMAServices) -> None:
        self.ctrl = ctrl
        self.services = services
        self.usage = TierUsage()
        self._session_lock = threading.Lock()
        self._caller: TierCaller | None = None
        self._callers: list[TierCaller] = []
        self._lock = threading.Lock()  # guards _tracks (planning threads add, the conductor saves)
        self._tracks: dict[str, Track] = {}
        self._planning: threading.Thread | None = None
        self._abort_planning = threading.Event()
        self.conductor: ConductorEngine | None = None
        self._ray: Any = None  # mma.backends.ray_attempts.RayAttempts once a Ray track ran
        # how a track of another kind is run: kind -> build(track, config) (plans register "plan")
        self.builders: dict[str, Callable[[Track, ConductorConfig], ConductorEngine]] = {}
        # a kind's own rule for DAG edits: (track, ticket id, wanted deps) -> the deps to set, or
        # InvalidValue; and what to do after an edit was saved while the track was not running
        self.dependency_rules: dict[str, Callable[[Track, str, list[str]], list[str]]] = {}
        self.after_edit: dict[str, Callable[[Track], None]] = {}

    # -- services ----------------------------------------------------------------------------
    def set_services(self, services: MMAServices) -> None:
        """Swap the AI client / context builder (tests; the app wires the real ones at start)."""
        self.services = services
        self._caller = None

    def caller(self) -> TierCaller:
        client = self.services.client
        if client is None:
            raise FeatureUnavailable(
                "MMA needs an AI client, and none is wired yet (lands with the AI client)"
            )
        if self._caller is None or self._caller.client is not client:
            self._caller = TierCaller(client, self.usage, self._session_lock)
            self._callers.append(self._caller)
        return self._caller

    def settings(self) -> MMASettings:
        return MMASettings(self.ctrl.state.mma_settings)

    def store(self) -> TrackStore:
        return TrackStore(self.ctrl.base_dir(), self.ctrl.redactor)

    # -- tracks --------------------------------------------------------------------------------
    def load_tracks(self) -> None:
        """Read every stored track (start-up, project reload); problems become notifications."""
        tracks, problems = self.store().load_all()
        with self._lock:
            self._tracks = {t.id: t for t in tracks}
        for problem in problems:
            self.ctrl.notify("error", f"MMA: {problem}")
        if tracks and self.ctrl.state.active_track is None:
            latest = max(tracks, key=lambda t: t.updated_at)
            self.ctrl.state.active_track = latest.summary()
            self.ctrl.state.mma_tickets = [t.to_dict() for t in latest.tickets]

    def switch_refusal(self) -> str | None:
        """Why the project may not be switched now (None = it may)."""
        if self.running():
            return "an MMA track is running; pause or abort it first"
        if self._planning is not None and self._planning.is_alive():
            return "MMA planning is in progress"
        return None

    def project_opened(self) -> None:
        """Another project is open: show its tracks, forget the old project's MMA view."""
        state = self.ctrl.state
        state.active_track = None
        state.mma_tickets = []
        state.proposed_tracks = []
        state.mma_status, state.mma_progress = "idle", ""
        self.load_tracks()

    def add_track(self, track: Track) -> None:
        """List a track saved elsewhere (an approved plan's) beside the epic's tracks."""
        with self._lock:
            self._tracks[track.id] = track

    def tracks(self) -> list[dict[str, Any]]:
        with self._lock:
            tracks = list(self._tracks.values())
        running = self.conductor.track.id if self.running() and self.conductor else None
        out = []
        for track in sorted(tracks, key=lambda t: (t.created_at, t.id)):
            if track.id == running and self.conductor is not None:
                out.append(self.conductor.snapshot()["track"])
            else:
                out.append(track.summary())
        return out

    def running(self) -> bool:
        return self.conductor is not None and self.conductor.is_alive()

    def running_track(self) -> str:
        """The id of the track a conductor is running now, '' when none (any thread: the usage
        ledger asks at each model call)."""
        conductor = self.conductor
        return conductor.track.id if conductor is not None and conductor.is_alive() else ""

    def track_copy(self, track_id: str) -> Track | None:
        """A copy of a listed track as it is now (the running one read under its conductor's
        lock), for readers such as the graph endpoint; None for an unknown id."""
        conductor = self.conductor
        if conductor is not None and self.running() and conductor.track.id == track_id:
            snapshot = conductor.snapshot()
            return Track.from_dict({**snapshot["track"], "tickets": snapshot["tickets"]})
        with self._lock:
            track = self._tracks.get(track_id)
            return None if track is None else Track.from_dict(track.to_dict())

    # -- Tier 1 ----------------------------------------------------------------------------------
    def plan_epic(self) -> None:
        """Tier 1 on a planning thread; this returns at once. The context is compiled there too
        (a large project takes seconds), and each phase is shown in ``mma_progress``."""
        state = self.ctrl.state
        epic = state.mma_epic_input.strip()
        if not epic:
            raise InvalidValue("the epic is empty: set mma_epic_input first")
        self._check_not_planning()
        caller = self.caller()
        settings = self.settings()
        request = self.ctrl.context.request()  # a cheap snapshot; compiling it is the slow part
        self._enter_planning("Tier 1")

        def work() -> None:
            try:
                context_md = self._compile_context(request)
                self._post_progress(ASKING_TIER1)
                tracks = plan_epic(
                    caller,
                    epic,
                    context_md=context_md,
                    model=settings.tier1_model,
                    abort=self._abort_planning,
                )
            except Aborted:
                return
            except Exception as exc:
                self._post_error(f"Plan Epic failed: {_describe(exc)}")
                return
            proposals = [proposal_of(t) for t in tracks]
            self.ctrl.post_gui_task({"action": "show_track_proposal", "tracks": proposals})
            self._post_idle()

        self._start_planning(work)

    # -- Tier 2 ----------------------------------------------------------------------------------
    def accept_tracks(self, indices: Sequence[int] | None) -> None:
        """Tier 2 plans the chosen proposals on a planning thread. A proposal leaves the list only
        once its track is planned and saved: a failed one stays, with its ``error``, to retry."""
        proposals = self.proposals()
        if not proposals:
            raise InvalidValue("there are no proposed tracks to accept")
        chosen = self._proposal_indices(indices, proposals)
        self._check_not_planning()
        caller = self.caller()
        settings = self.settings()
        store = self.store()
        request = self.ctrl.context.request()
        accepted: list[tuple[str, Track]] = []
        for index in chosen:
            proposal = proposals[index]
            title = str(proposal.get("title", "")).strip() or f"Track {index + 1}"
            track = Track(
                id=new_track_id(title),
                title=title,
                description=str(proposal.get("description", "")),
                priority=Priority(proposal.get("priority", "medium")),
            )
            accepted.append((str(proposal["id"]), track))
        self._enter_planning("Tier 2")

        def work() -> None:
            try:
                context_md = self._compile_context(request)
            except Aborted:
                return
            except Exception as exc:
                failed = {pid: _describe(exc) for pid, _ in accepted}
                self.ctrl.post_gui_task({"action": "mma_proposals_planned", "planned": [], "failed": failed})
                self._post_error(f"Accept tracks failed, the proposals are kept: {_describe(exc)}")
                return
            planned: list[Track] = []
            done: list[str] = []
            failed: dict[str, str] = {}
            for number, (proposal_id, track) in enumerate(accepted, 1):
                self._post_progress(f"{ASKING_TIER2} ({number}/{len(accepted)}: {track.title})")
                try:
                    track.tickets = plan_track(
                        caller,
                        track,
                        context_md=context_md,
                        model=settings.tier2_model,
                        abort=self._abort_planning,
                    )
                    store.save(track)
                    self.ctrl.session_log.mark("track_created")  # start-up pruning keeps this session
                except Aborted:
                    return
                except Exception as exc:
                    failed[proposal_id] = _describe(exc)
                    message = f"planning track {track.title!r} failed, nothing saved (the proposal is kept)"
                    self.ctrl.post_gui_task(
                        {"action": "notify", "level": "error", "message": f"{message}: {failed[proposal_id]}"}
                    )
                    continue
                with self._lock:
                    self._tracks[track.id] = track
                planned.append(track)
                done.append(proposal_id)
            self.ctrl.post_gui_task({"action": "mma_proposals_planned", "planned": done, "failed": failed})
            update: dict[str, Any] = {
                "status": "idle",
                "active_tier": None,
                "progress": "",
                "tier_usage": self.usage.snapshot(),
            }
            if planned:
                update.update(track=planned[0].summary(), tickets=[t.to_dict() for t in planned[0].tickets])
            self.ctrl.post_mma_state(update)

        self._start_planning(work)

    # -- proposals (main thread) --------------------------------------------------------------
    def proposals(self) -> list[dict[str, Any]]:
        """``state.proposed_tracks``, each given an ``id`` if it came without one (set by hand)."""
        proposals = self.ctrl.state.proposed_tracks
        for index, proposal in enumerate(proposals):
            if not proposal.get("id"):  # a new dict: the old one may be in a published event
                proposals[index] = {**proposal, "id": _proposal_id()}
        return proposals

    def edit_proposal(self, index: int, changes: dict[str, Any]) -> dict[str, Any]:
        """Change a proposal's title, description or priority before it is accepted."""
        self._check_not_planning()
        proposals = self.proposals()
        (index,) = self._proposal_indices([index], proposals)
        unknown = sorted(set(changes) - set(EDITABLE))
        if unknown:
            raise InvalidValue(
                f"a proposal's {', '.join(unknown)} cannot be edited; editable: {', '.join(EDITABLE)}"
            )
        edited = dict(proposals[index])
        for key, value in changes.items():
            if not isinstance(value, str):
                raise InvalidValue(f"{key} must be a string, got {type(value).__name__}")
            edited[key] = value.strip() if key == "title" else value
        if not edited.get("title"):
            raise InvalidValue("a proposal's title cannot be empty")
        if str(edited.get("priority", "medium")) not in PRIORITIES:
            raise InvalidValue(f"priority must be one of {', '.join(PRIORITIES)}, got {edited['priority']!r}")
        proposals[index] = edited
        return edited

    def reject_proposals(self, indices: Sequence[int] | None) -> None:
        """Drop proposals (default all) without planning them."""
        self._check_not_planning()
        proposals = self.proposals()
        if not proposals:
            raise InvalidValue("there are no proposed tracks to reject")
        chosen = set(self._proposal_indices(indices, proposals))
        self.ctrl.state.proposed_tracks = [p for i, p in enumerate(proposals) if i not in chosen]

    def proposals_planned(self, planned: Sequence[str], failed: dict[str, str]) -> None:
        """Task ``mma_proposals_planned``: planned proposals leave the list, failed ones keep
        the error to show beside them (main thread). ``track_proposal`` stays Tier 1's event:
        clients read the list as it changes from the ``proposed_tracks`` field."""
        state = self.ctrl.state
        gone = set(planned)
        kept = []
        for proposal in state.proposed_tracks:
            if proposal.get("id") in gone:
                continue
            if proposal.get("id") in failed:
                proposal = {**proposal, "error": failed[proposal["id"]]}
            kept.append(proposal)
        state.proposed_tracks = kept

    @staticmethod
    def _proposal_indices(indices: Sequence[int] | None, proposals: Sequence[Any]) -> list[int]:
        chosen = list(range(len(proposals))) if not indices else list(dict.fromkeys(indices))
        bad = [i for i in chosen if not 0 <= i < len(proposals)]
        if bad:
            last = f"0-{len(proposals) - 1}" if proposals else "none"
            raise InvalidValue(f"no proposed track at index {bad}; there are {len(proposals)} ({last})")
        return chosen

    # -- Tier 3: the conductor ------------------------------------------------------------------
    def archive_track(self, track_id: str) -> None:
        """Take a stored track off the list; its folder is moved aside, not deleted (main thread)."""
        if self.running() and self.conductor is not None and self.conductor.track.id == track_id:
            raise InvalidValue(f"track {track_id} is running; abort it first")
        with self._lock:
            if track_id not in self._tracks:
                raise InvalidValue(
                    f"no track {track_id!r}; tracks: {', '.join(sorted(self._tracks)) or 'none'}"
                )
        with self._lock:
            track = self._tracks[track_id]
        for ticket in track.tickets:  # trees kept for inspection go with the track
            if ticket.worktree:
                discard_kept(Path(ticket.worktree), self.ctrl.base_dir())
                ticket.worktree = ""
        try:
            moved = self.store().archive(track_id)
        except PersistenceError as exc:
            raise InvalidValue(str(exc)) from exc
        with self._lock:
            self._tracks.pop(track_id, None)
        state = self.ctrl.state
        if state.active_track and state.active_track.get("id") == track_id:
            state.active_track = None
            state.mma_tickets = []
        self.ctrl.notify("info", f"track {track_id} archived to {moved}")

    def start_track(self, track_id: str | None) -> None:
        if self.running():
            assert self.conductor is not None
            raise InvalidValue(f"track {self.conductor.track.id} is running; pause or abort it first")
        with self._lock:
            if not self._tracks:
                raise InvalidValue("there are no planned tracks; plan an epic and accept tracks first")
            if track_id:
                track = self._tracks.get(track_id)
                if track is None:
                    raise InvalidValue(f"no track {track_id!r}; tracks: {', '.join(sorted(self._tracks))}")
            else:
                track = min(self._tracks.values(), key=lambda t: (t.created_at, t.id))
        caller = self.caller()
        settings = self.settings()
        state = self.ctrl.state
        ledger = ledger_of(self.ctrl)
        policy = self._path_policy()
        config = ConductorConfig(
            base_dir=self.ctrl.base_dir(),
            max_workers=settings.max_workers,
            tier2_model=settings.tier2_model,
            tier3_models=tier3_ladder(settings.tier3_models, state.current_provider),
            tier4_model=settings.tier4_model,
            max_replans=settings.max_replans,
            tier4_patches=settings.tier4_patches,
            project_files=tuple(state.project_files),
            exclude=tuple(state.files_exclude),
            path_check=policy_check(policy),
            read_check=policy_check(policy, write=False),
            cost_watch=CostWatch(self.ctrl.clutch.cost_rules, ledger.spend, Budgets(*budgets(self.ctrl))),
            worktree_approvals=settings.worktree_approvals,
            remote_attempts=self._remote_attempts(settings),
        )
        try:
            builder = self.builders.get(track.kind)
            if builder is not None:
                conductor = builder(track, config)
            elif track.kind != "epic":
                raise InvalidValue(f"track {track.id} is a {track.kind} track; that feature is not loaded")
            else:
                conductor = ConductorEngine(
                    track,
                    self.ctrl.event_queue,
                    True,
                    host=self.ctrl,
                    caller=caller,
                    context_builder=self.services.context_builder,
                    config=config,
                    store=self.store(),
                )
        except MMAError as exc:
            raise InvalidValue(f"track {track.id} cannot start: {exc}") from exc
        for warning in conductor.engine.warnings:
            self.ctrl.notify("warning", f"track {track.id}: {warning}")
        ledger.set_track(self.running_track)  # its MMA calls are this track's while it runs
        self.conductor = conductor
        conductor.start()

    def _path_policy(self) -> PathPolicy:
        """The app's one path policy for this project: file tools and patches (main thread)."""
        state = self.ctrl.state
        return self.ctrl.path_policy(self.ctrl.base_dir(), state.project_files, state.files_exclude)

    def pause(self) -> None:
        self._active("pause").pause()

    def resume(self) -> None:
        if self.running():
            assert self.conductor is not None
            self.conductor.resume()
            return
        if self.conductor is None:
            raise InvalidValue("no track has run yet; start one with btn_mma_start_track")
        if self.conductor.track.status is TrackStatus.DONE:
            raise InvalidValue(f"track {self.conductor.track.id} is done")
        self.start_track(self.conductor.track.id)

    def abort(self, source: str) -> None:
        self._active("abort").abort(source=source)

    def abort_ticket(self, ticket_id: str, source: str) -> None:
        try:
            self._active("abort a ticket of").abort(ticket_id, source=source)
        except MMAError as exc:
            raise InvalidValue(str(exc)) from exc

    def block_ticket(self, ticket_id: str, reason: str) -> None:
        reason = reason or "blocked by the user"
        self._edit_ticket(
            ticket_id,
            lambda c: c.block_ticket(ticket_id, reason),
            lambda e: e.block(ticket_id, reason, manual=True),
        )

    def unblock_ticket(self, ticket_id: str) -> None:
        self._edit_ticket(ticket_id, lambda c: c.unblock_ticket(ticket_id), lambda e: e.unblock(ticket_id))

    def set_model_override(self, ticket_id: str, model: str) -> None:
        def offline(engine: ExecutionEngine) -> None:
            engine.dag.by_id[ticket_id].model_override = model

        self._edit_ticket(ticket_id, lambda c: c.set_model_override(ticket_id, model), offline)

    def set_dependencies(
        self, ticket_id: str, *, depends_on: Sequence[str] | None = None,
        add: Sequence[str] = (), remove: Sequence[str] = (), track_id: str = "",
    ) -> dict[str, Any]:  # fmt: skip
        """A DAG edit: replace a ticket's dependencies, or add and remove some (in ``track_id``, by
        default the track on the dashboard). A cycle, an unknown or dangling id, or a ticket already
        running or done is refused and changes nothing."""
        track = self._track_of(ticket_id, track_id)
        ticket = next(t for t in track.tickets if t.id == ticket_id)
        wanted = list(ticket.depends_on) if depends_on is None else list(depends_on)
        wanted = [d for d in dict.fromkeys([*wanted, *add]) if d not in set(remove)]
        missing = [d for d in remove if d not in ticket.depends_on]
        if missing:
            raise InvalidValue(f"ticket {ticket_id} does not depend on {', '.join(missing)}")
        if ticket_id in wanted:
            raise InvalidValue(f"ticket {ticket_id} cannot depend on itself (that is a cycle)")
        known = {t.id for t in track.tickets}
        unknown = [d for d in wanted if d not in known]
        if unknown:
            raise InvalidValue(f"track {track.id} has no ticket {', '.join(unknown)} to depend on")
        rule = self.dependency_rules.get(track.kind)
        if rule is not None:
            wanted = rule(track, ticket_id, wanted)
        self._edit_ticket(
            ticket_id,
            lambda c: c.set_dependencies(ticket_id, wanted),
            lambda e: _offline_dependencies(e, ticket_id, wanted),
            track,
        )
        running = self.running() and self.conductor is not None and self.conductor.track.id == track.id
        hook = self.after_edit.get(track.kind)
        if hook is not None and not running:
            hook(track)
        edited = next(t for t in track.tickets if t.id == ticket_id)
        return {"track_id": track.id, "ticket": edited.to_dict()}

    def _edit_ticket(self, ticket_id: str, live: Any, offline: Any, track: Track | None = None) -> None:
        conductor = self.conductor
        try:
            track = track or self._track_of(ticket_id)
            if conductor is not None and self.running() and conductor.track.id == track.id:
                live(conductor)
                return
            engine = ExecutionEngine(TrackDAG(track.tickets))
            offline(engine)
        except (MMAError, KeyError) as exc:
            raise InvalidValue(str(exc)) from exc
        track.touch()
        self.store().save(track)
        for ticket in track.tickets:
            if ticket.id == ticket_id:
                self.ctrl.publish("ticket_status", {"track_id": track.id, "ticket_id": ticket_id,
                                                    "status": str(ticket.status)})  # fmt: skip
        active = self.ctrl.state.active_track
        if active is None or active.get("id") == track.id:
            self.ctrl.state.active_track = track.summary()
            self.ctrl.state.mma_tickets = [t.to_dict() for t in track.tickets]

    def _track_of(self, ticket_id: str, track_id: str = "") -> Track:
        active = self.ctrl.state.active_track
        with self._lock:
            tracks = list(self._tracks.values())
        if track_id:
            track = next((t for t in tracks if t.id == track_id), None)
            if track is None:
                raise InvalidValue(f"no track {track_id!r}")
            if all(t.id != ticket_id for t in track.tickets):
                raise InvalidValue(f"track {track_id} has no ticket {ticket_id!r}")
            return track
        if active is not None:
            tracks.sort(key=lambda t: t.id != active.get("id"))
        for track in tracks:
            if any(t.id == ticket_id for t in track.tickets):
                return track
        raise InvalidValue(f"no ticket {ticket_id!r} in any track")

    def _active(self, verb: str) -> ConductorEngine:
        if not self.running() or self.conductor is None:
            raise InvalidValue(f"no track is running to {verb}")
        return self.conductor

    # -- threads ---------------------------------------------------------------------------------
    def _check_not_planning(self) -> None:
        if self._planning is not None and self._planning.is_alive():
            raise InvalidValue("a planning call is still running; wait for it to finish")

    def _enter_planning(self, tier: str) -> None:
        """Show that a planning thread is about to start (main thread)."""
        state = self.ctrl.state
        state.mma_status, state.active_tier, state.mma_progress = "planning", tier, BUILDING_CONTEXT
        update = {"status": "planning", "active_tier": tier, "progress": BUILDING_CONTEXT}
        self.ctrl.publish("mma_state", update)

    def _compile_context(self, request: Any) -> str:
        """The project context for a planning call, compiled on the planning thread (the
        progress already says ``building context``: :meth:`_enter_planning`)."""
        markdown = self.ctrl.context.compile(request, "preview").markdown
        if self._abort_planning.is_set():
            raise Aborted("planning was stopped")
        return markdown

    def _post_progress(self, text: str) -> None:
        self.ctrl.post_mma_state({"progress": text})

    def _start_planning(self, work: Any) -> None:
        self._planning = threading.Thread(target=work, name="slop-mma-plan", daemon=True)
        self._planning.start()

    def _post_error(self, message: str) -> None:
        log.warning("%s", message)
        self.ctrl.post_gui_task({"action": "notify", "level": "error", "message": message})
        self._post_idle()

    def _post_idle(self) -> None:
        self.ctrl.post_mma_state(
            {
                "status": "idle",
                "active_tier": None,
                "progress": "",
                "tier_usage": self.usage.snapshot(),
            }
        )

    def _remote_attempts(self, settings: MMASettings) -> Any:
        """Where attempts run: None for threads; for Ray the app's one connection (made again
        when its settings changed). InvalidValue, in one line, when Ray is not installed."""
        if settings.backend != "ray":
            return None
        from manual_slop.mma.backends.ray_backend import RaySettings, RayUnavailable, load_ray

        try:
            load_ray()
        except RayUnavailable as exc:
            raise InvalidValue(str(exc)) from None
        from manual_slop.mma.backends.ray_attempts import RayAttempts

        wanted = RaySettings(
            settings.ray_address, settings.ray_num_cpus, settings.ray_max_retries, settings.ray_runtime_env
        )
        current = self._ray
        if current is not None and current.settings != wanted:
            current.stop()
            current = None
        if current is None:
            ctrl = self.ctrl
            current = RayAttempts(
                wanted,
                lambda: ctrl.call_on_main(ctrl.ai_settings, timeout=5.0),
                on_workers=lambda rows: ctrl.post_gui_task({"action": "mma_ray_workers", "workers": rows}),
            )
        self._ray = current
        return current

    def shutdown(self, timeout: float = 1.0) -> None:
        """Stop the conductor (in-flight tickets back to todo, saved) and planning; bounded joins."""
        self._abort_planning.set()
        if self.conductor is not None and not self.conductor.stop(timeout):
            log.warning("MMA workers still running at shutdown: %s", self.conductor.pool.active())
        if self._ray is not None:  # the Ray cluster this app started goes with it
            self._ray.stop()
            self._ray = None
        if self._planning is not None:
            self._planning.join(timeout)
        for caller in self._callers:
            caller.shutdown(0.2)


def _offline_dependencies(engine: ExecutionEngine, ticket_id: str, depends_on: list[str]) -> None:
    """Set a ticket's dependencies in a track that is not running, after checking the new graph."""
    ticket = engine.dag.by_id[ticket_id]
    if ticket.status not in (TicketStatus.TODO, TicketStatus.BLOCKED):
        raise MMAError(f"ticket {ticket_id} is {ticket.status}; only a waiting ticket's dependencies change")
    trial = [t.copy() for t in engine.dag.tickets]
    next(t for t in trial if t.id == ticket_id).depends_on = list(depends_on)
    ExecutionEngine(TrackDAG(trial))  # DagError (a cycle) before anything changes
    ticket.depends_on = list(depends_on)
    ticket.updated_at = time.time()


def proposal_of(track: Track) -> dict[str, Any]:
    """A Tier 1 track as a proposal the user may edit, reject or accept (its ``id`` is stable
    while the list changes around it)."""
    return {"id": _proposal_id(), "title": track.title, "description": track.description,
            "priority": str(track.priority)}  # fmt: skip


def _proposal_id() -> str:
    return f"p_{secrets.token_hex(4)}"


def _describe(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, MMAError) else f"{type(exc).__name__}: {exc}"
