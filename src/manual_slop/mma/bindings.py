"""The MMA automation surface: fields and actions registered on the controller.

``register(ctrl)`` (listed in ``manual_slop.bindings.FEATURE_REGISTRARS``) builds the
controller's :class:`~manual_slop.mma.runtime.MMARuntime`, loads the stored tracks,
and registers the MMA buttons and fields used by the GUI, the Hook API and
simulations. :func:`default_services` is where the real AI client and Tier 3
context builder are wired.
"""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING, Any

from manual_slop.automation import ActionCall, InvalidValue
from manual_slop.config import PROJECT_SCHEMA
from manual_slop.mma.client import AIClientAdapter, ContextRequest, MMAServices
from manual_slop.mma.ladder import tier3_ladder
from manual_slop.mma.runtime import DEFAULT_SETTINGS, MMARuntime
from manual_slop.schema import Field

if TYPE_CHECKING:
    from manual_slop.controller import AppController

__all__ = ["default_services", "mma_runtime", "register"]

_TICKET_ID = Field(str, "", pattern=r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}", pattern_doc="a ticket id")


def default_services(ctrl: AppController) -> MMAServices:
    """The AI client (the controller's backend) and the Tier 3 context builder MMA uses.

    The builder runs on worker threads: the user's per-file views and mask patterns are
    read through the main-thread trampoline, then files are aggregated with the context
    service's AST cache.
    """
    from manual_slop.ai.rag import inject_rag_context
    from manual_slop.context.aggregate import build_tier3_context
    from manual_slop.memory.index_engine import IndexEngine

    def snapshot() -> tuple[dict[str, Any], list[str], Any]:
        state, memory = ctrl.state, ctrl.memory
        settings = memory.settings() if memory is not None and memory.service is not None else None
        return copy.deepcopy(state.file_views), list(state.mask_patterns), settings

    def context_builder(request: ContextRequest) -> str:
        views, masks, memory_settings = ctrl.call_on_main(snapshot, timeout=5.0)
        markdown = build_tier3_context(
            request.focus_files,
            request.base_dir,
            request.project_files,
            request.exclude,
            views=views,
            mask_patterns=masks,
            cache=ctrl.context.cache,
            policy=ctrl.path_policy(Path(request.base_dir)),
        )
        service = ctrl.memory.service if ctrl.memory is not None else None
        if memory_settings is None or not memory_settings.rag_enabled or service is None or not request.query:
            return markdown
        # the index's passages closest to what the ticket asks for (its focus files are whole)
        engine = IndexEngine(service, memory_settings.rag_top_k, skip=request.focus_files)
        return inject_rag_context(markdown, request.query, engine)

    def settings() -> Any:
        return ctrl.call_on_main(ctrl.ai_settings, timeout=5.0)

    def tools_context(folder: Path | None) -> Any:
        from manual_slop.tools.approval import build_execution_context

        # a ticket attempt's tools are confined to its scratch tree by the project's own policy
        return build_execution_context(ctrl, tier="Tier 3", base_dir=folder)

    # The controller's backend (the app wires ai_client); none means MMA actions say so.
    client = AIClientAdapter(ctrl.backend, settings, tools_context) if ctrl.backend is not None else None
    return MMAServices(client=client, context_builder=context_builder)


def mma_runtime(ctrl: AppController) -> MMARuntime:
    """The controller's MMA runtime (created by :func:`register`)."""
    runtime = getattr(ctrl, "mma", None)
    if not isinstance(runtime, MMARuntime):
        raise LookupError("MMA is not registered on this controller")
    return runtime


def register(ctrl: AppController) -> None:
    runtime = MMARuntime(ctrl, default_services(ctrl))
    ctrl.mma = runtime  # type: ignore[attr-defined]
    ctrl.on_shutdown(runtime.shutdown)
    ctrl.on_project_opened(runtime.project_opened, runtime.switch_refusal)
    _register_fields(ctrl, runtime)
    _register_actions(ctrl, runtime)

    def ray_workers(task: dict[str, Any]) -> None:
        ctrl.state.mma_ray_workers = list(task["workers"])

    ctrl.register_task_handler("mma_ray_workers", ray_workers)
    ctrl.register_task_handler(
        "mma_proposals_planned",
        lambda task: runtime.proposals_planned(list(task.get("planned", [])), dict(task.get("failed", {}))),
    )
    runtime.load_tracks()


def _register_fields(ctrl: AppController, runtime: MMARuntime) -> None:
    state = ctrl.state
    reg = ctrl.fields.register
    reg(
        "mma_tracks",
        Field(list, [], "Stored tracks with status and ticket counts (read-only)"),
        runtime.tracks,
    )
    reg(
        "mma_active_track",
        Field(dict, {}, "The track shown on the dashboard (read-only)"),
        lambda: dict(state.active_track or {}),
    )
    reg(
        "mma_tickets",
        Field(list, [], "Tickets of the active track (read-only)"),
        lambda: [dict(t) for t in state.mma_tickets],
    )
    reg(
        "mma_active_tier",
        Field(str, "", "Tier working now ('' = none)"),
        lambda: state.active_tier or "",
    )
    reg(
        "mma_progress",
        Field(str, "", "What MMA planning is doing: 'building context', 'asking Tier 1', … ('' = nothing)"),
        lambda: state.mma_progress,
    )
    reg(
        "mma_tier3_ladder",
        Field(list, [], "Tier 3 models by attempt as a run would use them ([] = active model)", items=str),
        lambda: list(tier3_ladder(runtime.settings().tier3_models, state.current_provider)),
    )
    reg("mma_tier_usage", Field(dict, {}, "Tokens per tier (read-only)"), lambda: dict(state.tier_usage))
    reg(
        "mma_ray_workers",
        Field(
            list, [], "Ray attempts: ticket, node, started, last_event, starts (2+: a node died) (read-only)"
        ),
        lambda: [dict(w) for w in state.mma_ray_workers],
    )
    for key in DEFAULT_SETTINGS:
        spec = PROJECT_SCHEMA[f"mma.{key}"]
        reg(f"mma_{key}", spec, _getter(state, key), _setter(state, key))


def _getter(state: Any, key: str) -> Any:
    return lambda: state.mma_settings.get(key, DEFAULT_SETTINGS[key])


def _setter(state: Any, key: str) -> Any:
    def set_value(value: Any) -> None:
        if key == "backend" and value == "ray" and importlib.util.find_spec("ray") is None:
            from manual_slop.mma.backends.ray_backend import RAY_MISSING

            raise InvalidValue(RAY_MISSING)
        state.mma_settings[key] = value

    return set_value


def _register_actions(ctrl: AppController, runtime: MMARuntime) -> None:
    reg = ctrl.actions.register

    def block(call: ActionCall) -> None:
        data = _ticket_args(call.user_data, "reason")
        runtime.block_ticket(data["ticket_id"], data.get("reason", ""))

    def set_model(call: ActionCall) -> None:
        data = _ticket_args(call.user_data, "model")
        runtime.set_model_override(data["ticket_id"], data.get("model", ""))

    reg("btn_mma_plan_epic", lambda call: runtime.plan_epic(), "Ask Tier 1 to split the epic into tracks")
    reg(
        "btn_mma_accept_tracks",
        lambda call: runtime.accept_tracks(call.user_data),
        "Accept proposed tracks (user_data: indices, default all); Tier 2 plans and saves each; "
        "a proposal stays listed until its track is saved",
        user_data=Field(list, [], items=int),
    )
    reg(
        "btn_mma_edit_track_proposal",
        lambda call: runtime.edit_proposal(*_proposal_edit(call.user_data)),
        "Edit a proposed track before accepting it (user_data: {index, title?, description?, priority?})",
        user_data=Field(dict, {}),
    )
    reg(
        "btn_mma_reject_tracks",
        lambda call: runtime.reject_proposals(call.user_data),
        "Reject proposed tracks (user_data: indices, default all); they are dropped unplanned",
        user_data=Field(list, [], items=int),
    )
    reg(
        "btn_mma_start_track",
        lambda call: runtime.start_track(call.user_data or None),
        "Start a track (user_data: track id, default the first)",
        user_data=Field(str, ""),
    )
    reg(
        "btn_mma_archive_track",
        lambda call: runtime.archive_track(call.user_data),
        "Take a track off the list (user_data: track id); its folder moves to conductor/tracks/archived/",
        user_data=_TICKET_ID,
    )
    reg("btn_mma_pause", lambda call: runtime.pause(), "Pause the running track (running tickets finish)")
    reg("btn_mma_resume", lambda call: runtime.resume(), "Resume the paused (or blocked) track")
    reg(
        "btn_mma_abort",
        lambda call: runtime.abort(call.source),
        "Abort the running track (kills in-flight tickets)",
    )
    reg(
        "btn_mma_abort_ticket",
        lambda call: runtime.abort_ticket(call.user_data, call.source),
        "Kill one ticket of the running track (user_data: ticket id)",
        user_data=_TICKET_ID,
    )
    reg(
        "btn_mma_block_ticket",
        block,
        "Block a ticket by hand (user_data: {ticket_id, reason})",
        user_data=Field(dict, {}, values=str),
    )
    reg(
        "btn_mma_unblock_ticket",
        lambda call: runtime.unblock_ticket(call.user_data),
        "Return a blocked or killed ticket to todo (user_data: ticket id)",
        user_data=_TICKET_ID,
    )
    reg(
        "btn_mma_set_dependencies",
        lambda call: runtime.set_dependencies(**_dependency_args(call.user_data)),
        "Edit a ticket's dependencies (user_data: {ticket_id, track_id?, depends_on?, add?, remove?}: "
        "the whole list, or links to add and remove); a cycle or a dangling id is refused",
        user_data=Field(dict, {}),
    )
    reg(
        "btn_mma_set_ticket_model",
        set_model,
        "Per-ticket model override (user_data: {ticket_id, model}; '' clears it)",
        user_data=Field(dict, {}, values=str),
    )


def _proposal_edit(data: Any) -> tuple[int, dict[str, Any]]:
    """``{index, title?, description?, priority?}`` -> (index, changes); the runtime checks values."""
    index = data.get("index") if isinstance(data, dict) else None
    if not isinstance(index, int) or isinstance(index, bool):
        raise InvalidValue(
            "user_data must be {'index': int, 'title'?: str, 'description'?: str, 'priority'?: str}"
        )
    changes = {k: v for k, v in data.items() if k != "index"}
    if not changes:
        raise InvalidValue("nothing to edit: give title, description or priority")
    return index, changes


def _dependency_args(data: Any) -> dict[str, Any]:
    """``{ticket_id, track_id?, depends_on? | add?, remove?}`` checked (the GUI's links, the API)."""
    if not isinstance(data, dict) or not isinstance(data.get("ticket_id"), str) or not data["ticket_id"]:
        raise InvalidValue(
            "user_data must be {'ticket_id': str, 'depends_on'?: [str], 'add'?: [str], 'remove'?: [str]}"
        )
    unknown = sorted(set(data) - {"ticket_id", "track_id", "depends_on", "add", "remove"})
    if unknown:
        raise InvalidValue(
            f"unknown user_data keys {unknown}; allowed: ticket_id, track_id, depends_on, add, remove"
        )
    if "depends_on" in data and ("add" in data or "remove" in data):
        raise InvalidValue("give either depends_on (the whole list) or add/remove, not both")
    out: dict[str, Any] = {"track_id": str(data.get("track_id") or "")}
    for key in ("depends_on", "add", "remove"):
        if key in data:
            value = data[key]
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise InvalidValue(f"{key} must be a list of ticket ids")
            out[key] = value
    return {"ticket_id": data["ticket_id"], **out}


def _ticket_args(data: Any, extra: str) -> dict[str, str]:
    from manual_slop.automation import InvalidValue

    if not isinstance(data, dict) or not data.get("ticket_id"):
        raise InvalidValue(f"user_data must be {{'ticket_id': str, '{extra}': str}}")
    unknown = set(data) - {"ticket_id", extra}
    if unknown:
        raise InvalidValue(f"unknown user_data keys {sorted(unknown)}; allowed: ticket_id, {extra}")
    return data
