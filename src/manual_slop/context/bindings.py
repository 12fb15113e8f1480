"""The context package's automation surface: fields, actions, the takes tab bar, task handlers.

Registered by :func:`register` (listed in ``manual_slop.bindings.FEATURE_REGISTRARS``).
The GUI and the Hook API reach every operation through these names. Actions that
take several parameters take a table as ``user_data``; each key is checked against
its own :class:`~manual_slop.schema.Field` and unknown keys are refused, so a typo
never passes silently. Errors of the context package come back as ``InvalidValue``
with the package's message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from manual_slop.automation import (
    ActionCall,
    InvalidValue,
    ParamSpec,
    attr_getter,
    attr_setter,
    check_params,
    params_doc,
)
from manual_slop.config import CONTEXT_STRATEGIES
from manual_slop.context.aggregate import MIN_TOKEN_BUDGET
from manual_slop.context.errors import ContextError
from manual_slop.context.items import ViewMode
from manual_slop.schema import Field

if TYPE_CHECKING:
    from manual_slop.controller import AppController

__all__ = ["ACTION_PARAMS", "register"]

_INDEX = Field(int, 0, "entry index (0 = first)", minimum=0)
_DISCUSSION = Field(str, "", "discussion name (default: the active one)")
_NAME = Field(
    str,
    "",
    "a name of 1-100 characters",
    pattern=r"\S(?:.{0,98}\S)?",
    pattern_doc="a name of 1-100 characters",
)

# Keys each table-taking action accepts: key -> (field, required)
ACTION_PARAMS: dict[str, ParamSpec] = {
    "btn_set_view_mode": {
        "path": (Field(str, "", "file path as listed in context_files"), True),
        "mode": (Field(str, "full", "view mode", choices=tuple(m.value for m in ViewMode)), True),
        "slices": (Field(list, [], "[[start, end], …] 1-based line ranges (custom)", items=list), False),
        "annotation": (Field(str, "", "a note shown with the file"), False),
    },
    "btn_rename_discussion": {"new_name": (_NAME, True), "discussion": (_DISCUSSION, False)},
    "btn_add_entry": {
        "content": (Field(str, "", "entry text"), True),
        "role": (Field(str, "", "one of discussion_roles (default: the first)"), False),
        "discussion": (_DISCUSSION, False),
    },
    "btn_insert_entry": {
        "index": (_INDEX, True),
        "content": (Field(str, "", "entry text"), False),
        "role": (Field(str, "", "one of discussion_roles (default: the first)"), False),
        "discussion": (_DISCUSSION, False),
    },
    "btn_edit_entry": {
        "index": (_INDEX, True),
        "content": (Field(str, "", "new text"), True),
        "discussion": (_DISCUSSION, False),
    },
    "btn_delete_entry": {"index": (_INDEX, True), "discussion": (_DISCUSSION, False)},
    "btn_set_entry_role": {
        "index": (_INDEX, True),
        "role": (Field(str, "", "one of discussion_roles"), True),
        "discussion": (_DISCUSSION, False),
    },
    "btn_move_entry": {
        "index": (_INDEX, True),
        "to": (Field(int, 0, "new position", minimum=0), True),
        "discussion": (_DISCUSSION, False),
    },
    "btn_collapse_entry": {
        "index": (_INDEX, True),
        "collapsed": (Field(bool, True, "collapse (true) or expand (false); default: toggle"), False),
        "discussion": (_DISCUSSION, False),
    },
    "btn_branch_take": {
        "index": (Field(int, 0, "branch after this entry (default: the last)", minimum=0), False),
        "discussion": (_DISCUSSION, False),
    },
}


def _params(action: str, data: Any) -> dict[str, Any]:
    return check_params(action, ACTION_PARAMS[action], data)


def _table_doc(action: str, what: str) -> str:
    return params_doc(ACTION_PARAMS[action], what)


def _guard(handler: Callable[[Any], Any]) -> Callable[[Any], None]:
    """``handler`` (an action or a field setter) with ContextError reported as InvalidValue."""

    def guarded(arg: Any) -> None:
        try:
            handler(arg)
        except ContextError as exc:
            raise InvalidValue(str(exc)) from exc

    return guarded


def register(ctrl: AppController) -> None:
    """Add the context package's fields, actions, tab bar and task handlers to ``ctrl``."""
    _register_fields(ctrl)
    _register_context_actions(ctrl)
    _register_discussion_actions(ctrl)
    service = ctrl.context
    ctrl.tab_bars.register(
        "discussion_takes",
        lambda: _takes_tabs(ctrl),
        lambda name: service.discussions.switch(name),
        "The active discussion's main line and its takes; selecting one switches to it",
    )
    ctrl.register_task_handler("context_compiled", service.apply_compiled)
    ctrl.register_task_handler("md_only_written", service.apply_md_only)
    ctrl.register_task_handler("commit_stamped", service.discussions.apply_commit)
    ctrl.register_task_handler("discussion_compressed", service.discussions.apply_compression)


def _takes_tabs(ctrl: AppController) -> list[str]:
    from manual_slop.context.discussions import root_of

    state = ctrl.state
    if state.active_discussion not in state.discussions:
        return []
    root = root_of(state.discussions, state.active_discussion)
    return [root, *ctrl.context.discussions.takes(root)]


# ======================================================================================
# fields
# ======================================================================================
def _register_fields(ctrl: AppController) -> None:
    state = ctrl.state
    service = ctrl.context
    reg = ctrl.fields.register

    reg(
        "context_strategy",
        Field(str, "auto", "Aggregation strategy for files in full mode", choices=CONTEXT_STRATEGIES),
        attr_getter(state, "context_strategy"),
        service.set_strategy,
    )
    reg(
        "context_token_budget",
        Field(
            int,
            100_000,
            "auto: the files section stays within this many tokens",
            minimum=MIN_TOKEN_BUDGET,
            maximum=10_000_000,
        ),
        attr_getter(state, "context_token_budget"),
        attr_setter(state, "context_token_budget"),
    )
    reg(
        "context_full_threshold",
        Field(
            int, 4_000, "auto: files up to this many tokens are sent in full", minimum=1, maximum=10_000_000
        ),
        attr_getter(state, "context_full_threshold"),
        attr_setter(state, "context_full_threshold"),
    )
    reg(
        "image_max_edge",
        Field(
            int, 1568, "Screenshots are downscaled to this longest edge (pixels)", minimum=64, maximum=8000
        ),
        attr_getter(state, "image_max_edge"),
        attr_setter(state, "image_max_edge"),
    )
    reg(
        "mask_patterns",
        Field(list, [], "Regexes: matching lines of masked files are hidden", items=str),
        lambda: list(state.mask_patterns),
        _guard(service.set_mask_patterns),
    )
    reg(
        "subagent_summaries",
        Field(bool, False, "summarize: the provider summarizes very large files"),
        attr_getter(state, "subagent_summaries"),
        attr_setter(state, "subagent_summaries"),
    )
    reg(
        "file_views",
        Field(dict, {}, "Per-file views by path (read-only; set with btn_set_view_mode)"),
        lambda: {k: dict(v) for k, v in state.file_views.items()},
    )
    reg(
        "context_files",
        Field(list, [], "Last compile: per file path, mode, effective_mode, tokens, kind (read-only)"),
        lambda: [dict(f) for f in state.context_files],
    )
    reg(
        "context_tokens",
        Field(int, 0, "Last compile: estimated tokens (read-only)"),
        attr_getter(state, "context_tokens"),
    )
    reg(
        "context_status",
        Field(str, "idle", "idle, compiling..., done or error (read-only)"),
        attr_getter(state, "context_status"),
    )
    reg(
        "context_fit",
        Field(
            dict,
            {},
            "Last send: the answering model's window and what was shortened (degraded) or left out "
            "(dropped) to fit it (read-only)",
        ),
        lambda: _fit_copy(state.context_fit),
    )
    reg(
        "context_preview",
        Field(str, "", "Last compiled context Markdown (read-only)"),
        attr_getter(state, "context_preview"),
    )
    reg(
        "last_md_path",
        Field(str, "", "File written by the last MD Only (read-only)"),
        attr_getter(state, "last_md_path"),
    )
    reg(
        "context_presets",
        Field(list, [], "Saved context presets (read-only)", items=str),
        lambda: sorted(state.context_presets),
    )
    reg(
        "discussion_entries",
        Field(list, [], "Entries of the active discussion (read-only)"),
        lambda: [dict(e) for e in state.discussions.get(state.active_discussion, {}).get("history", [])],
    )
    reg(
        "discussion_takes",
        Field(list, [], "Takes of the active discussion's main line (read-only)", items=str),
        lambda: service.discussions.takes() if state.active_discussion in state.discussions else [],
    )
    reg(
        "discussion_commit",
        Field(str, "", "Git commit stamped on the active discussion (read-only)"),
        lambda: service.discussions.commit_of(),
    )
    reg(
        "discussion_status",
        Field(str, "idle", "idle, compressing... or reading git HEAD... (read-only)"),
        attr_getter(state, "discussion_status"),
    )
    reg(
        "undo_history",
        Field(dict, {}, "Labels of undoable and redoable steps, most recent first (read-only)"),
        service.undo_state,
    )


# ======================================================================================
# actions
# ======================================================================================
def _register_context_actions(ctrl: AppController) -> None:
    service = ctrl.context
    reg = ctrl.actions.register
    name_field = Field(
        str, "", "a preset name", pattern=r"\S(?:.{0,98}\S)?", pattern_doc="a name of 1-100 characters"
    )

    def set_view(call: ActionCall) -> None:
        p = _params("btn_set_view_mode", call.user_data)
        view = {"mode": p["mode"], "slices": p.get("slices", []), "annotation": p.get("annotation", "")}
        service.set_view(p["path"], view)

    def require(call: ActionCall, what: str) -> Any:
        if call.user_data is None:
            raise InvalidValue(f"user_data must name the {what}")
        return call.user_data

    reg("btn_md_only", _guard(lambda call: service.md_only()), "Write the compiled context to output_dir")
    reg(
        "btn_refresh_context",
        _guard(lambda call: service.refresh_preview()),
        "Compile the context in the background and show it (context_preview, context_files)",
    )
    reg(
        "btn_set_view_mode",
        _guard(set_view),
        _table_doc("btn_set_view_mode", "Set how one file is shown"),
        user_data=Field(dict, {}),
    )
    reg(
        "btn_save_preset",
        _guard(lambda call: service.save_preset(require(call, "preset"))),
        "Save the tracked files, excludes and views as a preset (user_data: name)",
        user_data=name_field,
    )
    reg(
        "btn_load_preset",
        _guard(lambda call: service.load_preset(require(call, "preset"))),
        "Replace the tracked files, excludes and views by a preset (user_data: name)",
        user_data=name_field,
    )
    reg(
        "btn_delete_preset",
        _guard(lambda call: service.delete_preset(require(call, "preset"))),
        "Delete a preset (user_data: name)",
        user_data=name_field,
    )
    reg("btn_undo", _guard(lambda call: service.undo()), "Undo the last discussion or context edit (Ctrl+Z)")
    reg("btn_redo", _guard(lambda call: service.redo()), "Redo the last undone edit (Ctrl+Y)")


def _register_discussion_actions(ctrl: AppController) -> None:
    ops = ctrl.context.discussions
    reg = ctrl.actions.register

    def table_action(name: str, what: str, run: Callable[[dict[str, Any]], Any]) -> None:
        reg(
            name,
            _guard(lambda call: run(_params(name, call.user_data))),
            _table_doc(name, what),
            Field(dict, {}),
        )

    def disc(p: Mapping[str, Any]) -> str | None:
        return p.get("discussion") or None

    reg(
        "btn_new_discussion",
        _guard(lambda call: ops.create(call.user_data)),
        "Create a discussion (user_data: its name) and switch to it",
        user_data=_NAME,
    )
    table_action("btn_rename_discussion", "Rename a discussion; its takes follow",
                 lambda p: ops.rename(p["new_name"], disc(p)))  # fmt: skip
    reg(
        "btn_delete_discussion",
        _guard(lambda call: ops.delete(call.user_data)),
        "Delete a discussion (user_data: name, default the active one); its takes stay",
        user_data=_NAME,
    )
    table_action("btn_add_entry", "Append an entry",
                 lambda p: ops.add(p["content"], p.get("role"), disc(p)))  # fmt: skip
    table_action("btn_insert_entry", "Insert an entry before index",
                 lambda p: ops.insert(p["index"], p.get("content", ""), p.get("role"), disc(p)))  # fmt: skip
    table_action("btn_edit_entry", "Replace an entry's text",
                 lambda p: ops.edit(p["index"], p["content"], disc(p)))  # fmt: skip
    table_action("btn_delete_entry", "Delete an entry", lambda p: ops.delete_entry(p["index"], disc(p)))
    table_action("btn_set_entry_role", "Change an entry's role",
                 lambda p: ops.set_role(p["index"], p["role"], disc(p)))  # fmt: skip
    table_action("btn_move_entry", "Move an entry to another position",
                 lambda p: ops.move(p["index"], p["to"], disc(p)))  # fmt: skip
    table_action("btn_collapse_entry", "Collapse or expand an entry",
                 lambda p: ops.collapse(p["index"], p.get("collapsed"), disc(p)))  # fmt: skip
    reg(
        "btn_collapse_all",
        _guard(lambda call: ops.collapse_all(True if call.user_data is None else call.user_data)),
        "Collapse (user_data true, the default) or expand (false) every entry of the active discussion",
        user_data=Field(bool, True),
    )
    table_action("btn_branch_take", "Branch a take at an entry and switch to it",
                 lambda p: ops.branch(p.get("index"), disc(p)))  # fmt: skip
    reg(
        "btn_promote_take",
        _guard(lambda call: ops.promote(call.user_data)),
        "Make a take (user_data: name, default the active one) the main line; the take keeps the old one",
        user_data=_NAME,
    )
    reg(
        "btn_update_commit",
        _guard(lambda call: ops.update_commit(call.user_data)),
        "Record the project's git HEAD on a discussion (user_data: name, default the active one)",
        user_data=_NAME,
    )
    reg(
        "btn_compress_discussion",
        _guard(lambda call: ops.compress(call.user_data)),
        "Summarize a discussion with the provider, tools disabled (user_data: name, default the active one)",
        user_data=_NAME,
    )


def _fit_copy(fit: dict[str, Any]) -> dict[str, Any]:
    """A copy the reader may keep (its lists are copied too)."""
    return {k: [dict(d) for d in v] if isinstance(v, list) else v for k, v in fit.items()}
