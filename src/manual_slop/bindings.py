"""The controller's task catalog and its automation surface (fields, actions, list boxes).

:func:`register_task_handlers` maps every task-dict ``action`` the main thread
understands to its handler; :func:`register_core_bindings` declares the fields,
buttons and list boxes that the GUI, the Hook API and simulations share. Every
handler here runs on the main thread, inside ``process_pending`` or a frame.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from manual_slop.automation import (
    ActionCall,
    ActionRegistry,
    FieldRegistry,
    InvalidValue,
    SelectorRegistry,
    attr_getter,
    attr_setter,
)
from manual_slop.config import GLOBAL_SCHEMA, PROVIDER_NAMES
from manual_slop.request_flow import CUT_MARK, FALLBACK_MARK, ChatBackend
from manual_slop.schema import Field

if TYPE_CHECKING:
    from manual_slop.clutch import ExecutionClutch
    from manual_slop.config import AppPaths
    from manual_slop.context.service import ContextService
    from manual_slop.redaction import Redactor
    from manual_slop.session_log import SessionLog
    from manual_slop.state import AppState

__all__ = [
    "FEATURE_REGISTRARS",
    "BindingHost",
    "register_all",
    "register_core_bindings",
    "register_task_handlers",
]

URL_PATTERN = r"|https?://[^\s/]{1,255}[^\s]{0,2000}"  # a host, then at most 2,000 characters


class BindingHost(Protocol):
    """What the core task handlers, fields and actions reach on the app (the controller).

    The controller imports this module to register them, so it is typed here by what it
    offers, not imported."""

    state: AppState
    fields: FieldRegistry
    actions: ActionRegistry
    listboxes: SelectorRegistry
    tab_bars: SelectorRegistry
    context: ContextService
    clutch: ExecutionClutch
    redactor: Redactor
    session_log: SessionLog

    @property
    def paths(self) -> AppPaths: ...

    @property
    def backend(self) -> ChatBackend | None: ...

    def register_task_handler(self, action: str, handler: Callable[[dict[str, Any]], None]) -> None: ...

    def setting(self, dotted: str) -> Any: ...

    def set_ai_status(self, status: str) -> None: ...

    def submit_user_message(self, prompt: str) -> str: ...

    def cancel_request(self, request_id: str) -> str: ...

    def update_request(self, request_id: str, **changes: Any) -> None: ...

    def notify(self, level: str, message: str) -> None: ...

    def publish(self, event_type: str, payload: Mapping[str, Any] | None = None) -> int: ...

    def flush(self) -> None: ...

    def reload_project(self) -> None: ...

    def open_project(self, project_file: Path) -> None: ...

    def new_project(self, project_file: Path) -> None: ...

    def recent_projects(self) -> list[str]: ...


# Each feature package adds its fields and actions with a ``register(ctrl)`` function
# listed here (e.g. ``manual_slop.context.bindings.register``); names reserved in
# ``_register_actions`` as unavailable are removed when their feature lands.
FEATURE_REGISTRARS: tuple[str, ...] = (
    "manual_slop.ai.bindings.register",
    "manual_slop.context.bindings.register",
    "manual_slop.mma.bindings.register",
    "manual_slop.memory.bindings.register",
    "manual_slop.file_view.register",
    "manual_slop.agents.bindings.register",
    "manual_slop.skills.bindings.register",
    "manual_slop.plan.bindings.register",
    "manual_slop.governance.metrics_bindings.register",
    "manual_slop.usage.bindings.register",
    "manual_slop.governance.bindings.register",
    "manual_slop.mcp.serve_binding.register",
    "manual_slop.mcp.bindings.register",
    "manual_slop.sessions.bindings.register",
)


def register_all(ctrl: BindingHost) -> None:
    """Task handlers, core bindings, then every feature's bindings."""
    import importlib

    register_task_handlers(ctrl)
    register_core_bindings(ctrl)
    for dotted in FEATURE_REGISTRARS:
        module_name, _, function = dotted.rpartition(".")
        getattr(importlib.import_module(module_name), function)(ctrl)


# ======================================================================================
# task catalog
# ======================================================================================
def register_task_handlers(ctrl: BindingHost) -> None:
    state = ctrl.state

    def set_value(task: dict[str, Any]) -> None:
        ctrl.fields.set(_required(task, "item"), task.get("value"))

    def click(task: dict[str, Any]) -> None:
        ctrl.actions.invoke(_required(task, "item"), task.get("user_data"), str(task.get("source", "gui")))

    def select_list_item(task: dict[str, Any]) -> None:
        ctrl.listboxes.select(_required(task, "listbox"), _required(task, "item"))

    def select_tab(task: dict[str, Any]) -> None:
        ctrl.tab_bars.select(_required(task, "tab_bar"), _required(task, "tab"))

    def custom_callback(task: dict[str, Any]) -> None:
        result = task["callback"](*task.get("args", ()))
        future = task.get("future")
        if isinstance(future, Future) and not future.done():
            future.set_result(result)

    def handle_ai_response(task: dict[str, Any]) -> None:
        request_id = task.get("request_id")
        text = ctrl.redactor.redact(str(task.get("text", "")))
        status = str(task.get("status", "done"))
        failed, cut = status == "error", status == "cancelled"
        if cut:  # the answer as far as it got, marked as cut
            mark = CUT_MARK.format(reason=task.get("reason") or "stopped")
            text = f"{text.rstrip()}\n\n{mark}" if text.strip() else ""
            state.ai_response = text or mark
        else:
            if task.get("fallback"):  # not the active provider: said in the answer itself
                text = f"{FALLBACK_MARK.format(**task)}\n\n{text}"
            state.ai_response = text
        if task.get("provider"):
            state.ai_answered_by = f"{task['provider']} / {task.get('model') or '?'}"
        ctrl.set_ai_status({"error": "error", "cancelled": "cancelled"}.get(status, "done"))
        if request_id:
            ctrl.update_request(
                request_id,
                state=status if status in ("error", "cancelled") else "done",
                response=None if failed else text,
                error=ctrl.redactor.redact(str(task.get("error"))) if failed else None,
                finished=time.time(),
                provider=task.get("provider") or None,
                model=task.get("model") or None,
                fallback=task.get("fallback") if task.get("provider") else None,
            )
        if state.active_request_id == request_id:
            state.active_request_id = None
        if state.auto_add and not failed and text:
            role = state.role(1, "AI")
            ctrl.context.discussions.append(role, text, task.get("discussion") or None, label="AI reply")
        if failed:
            ctrl.publish("error", {"request_id": request_id, "message": text})
        ctrl.publish("response", {"request_id": request_id, "text": text, "status": status})

    def ai_stream_chunk(task: dict[str, Any]) -> None:
        request_id = task.get("request_id")
        if request_id is None or request_id != state.active_request_id:
            return  # a late chunk of a request that already finished
        text = str(task.get("text", ""))
        # not per chunk alone: a key may arrive split over several chunks
        shown = "" if task.get("seq", 0) == 0 else state.ai_response
        state.ai_response = ctrl.redactor.redact_appended(shown, text)
        ctrl.publish("ai_stream_chunk", {"request_id": request_id, "seq": task.get("seq", 0), "text": text})

    def show_track_proposal(task: dict[str, Any]) -> None:
        state.proposed_tracks = list(task.get("tracks", []))
        state.proposal_round += 1
        ctrl.publish("track_proposal", {"tracks": state.proposed_tracks})

    def mma_state_update(task: dict[str, Any]) -> None:
        if "status" in task:
            state.mma_status = str(task["status"])
        if "active_tier" in task:
            state.active_tier = task["active_tier"]
        if "progress" in task:
            state.mma_progress = str(task["progress"] or "")
        if "tier_usage" in task:
            state.tier_usage = dict(task["tier_usage"])
        if "tickets" in task:
            state.mma_tickets = list(task["tickets"])
        if "track" in task:
            state.active_track = task["track"]
        event = task.get("event")
        if isinstance(event, dict):  # prepared by post_mma_state on the posting thread
            ctrl.journal.publish_snapshot("mma_state", event, task.get("event_size"))
        else:
            internal = ("action", "event", "event_size")
            ctrl.publish("mma_state", {k: v for k, v in task.items() if k not in internal})

    def pending_added(task: dict[str, Any]) -> None:
        dialog = dict(task["dialog"])
        if all(d["id"] != dialog["id"] for d in state.pending_dialogs):
            state.pending_dialogs.append(dialog)

    def pending_resolved(task: dict[str, Any]) -> None:
        uid = task["dialog"]["id"]
        state.pending_dialogs = [d for d in state.pending_dialogs if d["id"] != uid]

    def refresh_api_metrics(task: dict[str, Any]) -> None:
        state.api_metrics.update(task.get("metrics", {}))

    def notify(task: dict[str, Any]) -> None:
        ctrl.notify(str(task.get("level", "info")), str(task.get("message", "")))

    handlers: dict[str, Callable[[dict[str, Any]], None]] = {
        "set_value": set_value,
        "click": click,
        "select_list_item": select_list_item,
        "select_tab": select_tab,
        "custom_callback": custom_callback,
        "refresh_from_project": lambda task: ctrl.reload_project(),
        "handle_ai_response": handle_ai_response,
        "ai_stream_chunk": ai_stream_chunk,
        "show_track_proposal": show_track_proposal,
        "mma_state_update": mma_state_update,
        # Dialogs are registered by the clutch on the requesting thread; these keep
        # the GUI's mirror of the pending list (the catalog names are aliases).
        "pending_added": pending_added,
        "ask": pending_added,
        "mma_step_approval": pending_added,
        "mma_spawn_approval": pending_added,
        "pending_resolved": pending_resolved,
        "clear_ask": pending_resolved,
        "refresh_api_metrics": refresh_api_metrics,
        "notify": notify,
    }
    for action, handler in handlers.items():  # in this order: the task catalog's order
        ctrl.register_task_handler(action, handler)


def _set_model(ctrl: BindingHost, model: str) -> None:
    """The local provider takes only models it has: an unknown name is refused with the list."""
    if ctrl.state.current_provider == "local":
        from manual_slop.ai.providers.local import unknown_model_message

        refusal = unknown_model_message(model, str(ctrl.setting("providers.local.model_path") or ""))
        if refusal is not None:
            raise InvalidValue(refusal)
    ctrl.state.current_model = model


def _required(task: dict[str, Any], key: str) -> Any:
    if key not in task:
        raise InvalidValue(f"task {task.get('action')!r} needs {key!r}")
    return task[key]


# ======================================================================================
# fields, actions, list boxes
# ======================================================================================
def register_core_bindings(ctrl: BindingHost) -> None:
    _register_fields(ctrl)
    _register_actions(ctrl)
    ctrl.listboxes.register(
        "discussions",
        lambda: sorted(ctrl.state.discussions),
        lambda name: _switch_discussion(ctrl, name),
        "Discussion list; selecting one makes it the active discussion",
    )
    _register_gui_tab_bars(ctrl)


def _register_gui_tab_bars(ctrl: BindingHost) -> None:
    """The desktop window's tab bars for ``select_tab``: its dock tabs (``panels``, by window
    title) and the tab bars inside panels. Selecting records the choice in
    ``state.tab_requests`` (headless too); the window shows and focuses the panel, or
    selects the tab, at its next frame."""
    from manual_slop.config import DEFAULT_WINDOWS
    from manual_slop.mma.models import TIERS
    from manual_slop.session_log import LOG_STREAMS

    state = ctrl.state

    def show_panel(title: str) -> None:
        state.show_windows[title] = True
        state.tab_requests["panels"] = title

    def request(tab_bar: str) -> Callable[[str], None]:
        def select(tab: str) -> None:
            state.tab_requests[tab_bar] = tab

        return select

    register = ctrl.tab_bars.register
    register(
        "panels",
        lambda: list(DEFAULT_WINDOWS),
        show_panel,
        "The window's panels (dock tabs) by title; selecting one shows it and brings it to the front",
    )
    register(
        "tier_streams",
        lambda: ["main", *TIERS],
        request("tier_streams"),
        "The Tier Streams panel's tabs (main conversation, Tiers 1-4); selecting one shows that tier",
    )
    register(
        "log_streams",
        lambda: list(LOG_STREAMS),
        request("log_streams"),
        "Session Replay's raw log tabs (once a replay is open); selecting one shows that stream",
    )


def _register_fields(ctrl: BindingHost) -> None:
    state = ctrl.state
    reg = ctrl.fields.register

    # appearance, saved in [gui]; the window applies a change before its next frame
    for name, key, attr in (
        ("theme", "gui.theme", "theme"),
        ("theme_accent", "gui.accent", "accent"),
        ("font_scale", "gui.font_scale", "font_scale"),
    ):
        reg(name, GLOBAL_SCHEMA[key], attr_getter(state, attr), attr_setter(state, attr))

    reg(
        "current_provider",
        Field(str, "local", "Active AI provider", choices=PROVIDER_NAMES),
        attr_getter(state, "current_provider"),
        attr_setter(state, "current_provider"),
    )
    reg(
        "current_model",
        Field(str, "", "Model of the active provider"),
        attr_getter(state, "current_model"),
        lambda value: _set_model(ctrl, value),
    )
    reg(
        "provider_base_url",
        Field(
            str,
            "",
            "Endpoint of the active provider ('' = its default)",
            pattern=URL_PATTERN,
            pattern_doc="'' or an http(s):// URL (a host of at most 255 characters, then at most 2,000)",
        ),
        attr_getter(state, "provider_base_url"),
        attr_setter(state, "provider_base_url"),
    )
    reg(
        "temperature",
        Field(float, 0.0, "Sampling temperature", minimum=0.0, maximum=2.0),
        attr_getter(state, "temperature"),
        attr_setter(state, "temperature"),
    )
    reg(
        "top_p",
        Field(float, 1.0, "Nucleus sampling mass", minimum=0.0, maximum=1.0),
        attr_getter(state, "top_p"),
        attr_setter(state, "top_p"),
    )
    reg(
        "max_tokens",
        Field(int, 8192, "Maximum output tokens", minimum=1, maximum=1_000_000),
        attr_getter(state, "max_tokens"),
        attr_setter(state, "max_tokens"),
    )
    reg(
        "history_trunc_limit",
        Field(int, 8000, "Characters kept of old tool outputs", minimum=0, maximum=10_000_000),
        attr_getter(state, "history_trunc_limit"),
        attr_setter(state, "history_trunc_limit"),
    )
    reg(
        "approval_policy",
        Field(str, "manual", "Execution Clutch policy", choices=("manual", "allow_list", "auto")),
        attr_getter(state, "approval_policy"),
        lambda value: _set_policy(ctrl, value),
    )
    reg(
        "ai_input",
        Field(str, "", "The message box"),
        attr_getter(state, "ai_input"),
        attr_setter(state, "ai_input"),
    )
    reg("ai_response", Field(str, "", "The last response (read-only)"), attr_getter(state, "ai_response"))
    reg("ai_status", Field(str, "idle", "Status line (read-only)"), attr_getter(state, "ai_status"))
    reg(
        "ai_answered_by",
        Field(str, "", "Provider / model that gave the last answer (read-only)"),
        attr_getter(state, "ai_answered_by"),
    )
    reg(
        "system_prompt",
        Field(str, "", "Project system prompt"),
        attr_getter(state, "system_prompt"),
        attr_setter(state, "system_prompt"),
    )
    reg(
        "project_name",
        Field(str, "", "Project name"),
        attr_getter(state, "project_name"),
        attr_setter(state, "project_name"),
    )
    reg(
        "files_base_dir",
        Field(str, ".", "Root of tracked files, relative to the project file"),
        attr_getter(state, "files_base_dir"),
        attr_setter(state, "files_base_dir"),
    )

    def undoable(attr: str) -> Any:
        return lambda value: ctrl.context.set_file_list(attr, value)

    reg(
        "project_files",
        Field(list, [], "Tracked files and globs, relative to files_base_dir", items=str),
        lambda: list(state.project_files),
        undoable("project_files"),
    )
    reg(
        "files_exclude",
        Field(list, [], "Globs excluded from the tracked files", items=str),
        lambda: list(state.files_exclude),
        undoable("files_exclude"),
    )
    reg(
        "output_dir",
        Field(str, "md_gen", "Where MD Only writes, relative to files_base_dir"),
        attr_getter(state, "output_dir"),
        attr_setter(state, "output_dir"),
    )
    reg(
        "screenshots",
        Field(list, [], "Screenshots attached to requests", items=str),
        lambda: list(state.screenshots),
        undoable("screenshots"),
    )
    reg(
        "auto_add",
        Field(bool, True, "Append sent messages and responses to the discussion"),
        attr_getter(state, "auto_add"),
        attr_setter(state, "auto_add"),
    )
    reg(
        "discussion_roles",
        Field(list, [], "Roles offered for discussion entries", items=str),
        lambda: list(state.discussion_roles),
        attr_setter(state, "discussion_roles"),
    )
    reg(
        "active_discussion",
        Field(str, "main", "The discussion being edited and sent"),
        attr_getter(state, "active_discussion"),
        lambda name: _switch_discussion(ctrl, name),
    )
    reg(
        "discussions",
        Field(list, [], "Discussion names (read-only)", items=str),
        lambda: sorted(state.discussions),
    )
    reg(
        "mma_epic_input",
        Field(str, "", "Epic text for Plan Epic"),
        attr_getter(state, "mma_epic_input"),
        attr_setter(state, "mma_epic_input"),
    )
    reg("mma_status", Field(str, "idle", "MMA engine status (read-only)"), attr_getter(state, "mma_status"))
    reg(
        "proposed_tracks",
        Field(list, [], "Tracks proposed by Tier 1 (read-only)"),
        lambda: list(state.proposed_tracks),
    )
    reg(
        "pending_dialogs",
        Field(list, [], "Dialogs waiting for a decision, oldest first (read-only)"),
        lambda: [dict(d) for d in state.pending_dialogs],
    )
    reg(
        "notifications",
        Field(list, [], "Messages for the user (read-only)"),
        lambda: [n.to_dict() for n in state.notifications],
    )
    reg(
        "project_file",
        Field(str, "", "Path of the open project file (read-only)"),
        lambda: str(ctrl.paths.project_file),
    )
    reg(
        "recent_projects",
        Field(list, [], "Recently opened project files, newest first (read-only)", items=str),
        ctrl.recent_projects,
    )
    reg(
        "session_dir",
        Field(str, "", "This session's log folder (read-only)"),
        lambda: str(ctrl.session_log.root),
    )


def _set_policy(ctrl: BindingHost, policy: str) -> None:
    ctrl.state.approval_policy = policy
    ctrl.clutch.set_policy(policy)
    if policy == "auto":
        ctrl.notify("warning", "approval policy is AUTO: scripts, edits and MMA steps run without asking")


def _switch_discussion(ctrl: BindingHost, name: str) -> None:
    if name not in ctrl.state.discussions:
        known = ", ".join(sorted(ctrl.state.discussions))
        raise InvalidValue(f"no discussion named {name!r}; discussions: {known}")
    ctrl.state.active_discussion = name


def _register_actions(ctrl: BindingHost) -> None:
    state = ctrl.state
    reg = ctrl.actions.register

    def gen_send(call: ActionCall) -> None:
        if not state.ai_input.strip():
            raise InvalidValue("the message box is empty")
        ctrl.submit_user_message(state.ai_input)
        state.ai_input = ""

    def reset_session(call: ActionCall) -> None:
        if ctrl.backend is not None:
            ctrl.backend.reset_session()
        state.ai_response = ""
        ctrl.set_ai_status("idle")

    def decide(approved: bool) -> Any:
        def handler(call: ActionCall) -> None:
            front = ctrl.clutch.front()
            if front is None:
                raise InvalidValue("nothing is waiting for approval")
            ctrl.clutch.resolve(front.uid, approved, decider=call.source)

        return handler

    def dismiss_notifications(call: ActionCall) -> None:
        state.notifications.clear()

    def cancel_request(call: ActionCall) -> None:
        request_id = call.user_data or state.active_request_id
        if not request_id:
            raise InvalidValue("no request is running")
        try:
            ctrl.cancel_request(str(request_id))
        except (LookupError, ValueError) as exc:
            raise InvalidValue(str(exc)) from None

    reg("btn_gen_send", gen_send, "Send the message box with the compiled context")
    reg(
        "btn_cancel_request",
        cancel_request,
        "Stop a request (the running one by default): it ends as cancelled, its partial answer kept",
        user_data=Field(str, ""),
    )
    reg("btn_reset_session", reset_session, "Forget the provider session; keeps project and discussion")
    reg("btn_save", lambda call: ctrl.flush(), "Save project, discussions and global config now")
    reg("btn_approve", decide(True), "Approve the oldest pending dialog as it stands")
    reg("btn_reject", decide(False), "Reject the oldest pending dialog")
    reg("btn_reload_project", lambda call: ctrl.reload_project(), "Re-read the project and history files")
    project_path = Field(str, "", pattern=r"\S.*\.toml", pattern_doc="a path ending in .toml")
    reg(
        "btn_open_project",
        lambda call: ctrl.open_project(Path(_need_user_data(call))),
        "Save the current project and open another (user_data: its .toml path)",
        user_data=project_path,
    )
    reg(
        "btn_new_project",
        lambda call: ctrl.new_project(Path(_need_user_data(call))),
        "Create a project file with defaults and open it (user_data: the new .toml path)",
        user_data=project_path,
    )
    reg("btn_dismiss_notifications", dismiss_notifications, "Clear the notification list")


def _need_user_data(call: ActionCall) -> Any:
    if call.user_data is None:
        raise InvalidValue("this action needs user_data")
    return call.user_data
