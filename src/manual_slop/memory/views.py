"""The Memory panel's side of the memory feature: one search over the project index, the
stored conversations and the notes; the notes and profile lists the user edits.

A search runs in the background and lands in ``state.memory_results`` at the next frame
(the newest search wins over an older one still running). The notes and profile lists are
copied into the state whenever the store says they changed, whoever changed them: the
panel, the model's ``record_note``, the Hook API or profile learning.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
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
from manual_slop.schema import Field

if TYPE_CHECKING:
    from manual_slop.controller import AppController
    from manual_slop.memory.service import MemoryService, MemorySettings

__all__ = ["ACTION_PARAMS", "MemoryViews", "register_views"]

_ID = Field(int, 1, "its id (as listed)", minimum=1, maximum=2**53)
_NOTE_TEXT = Field(str, "", "the note's text")
_CATEGORY = Field(str, "general", "its category (letters, digits, space, _, - and .)")
_LINE = Field(str, "", "one statement of preference")

ACTION_PARAMS: dict[str, ParamSpec] = {
    "btn_memory_search": {
        "query": (Field(str, "", "what to look for (default: memory_query)"), False),
        "top_k": (Field(int, 5, "results per kind", minimum=1, maximum=50), False),
    },
    "btn_memory_note_add": {"content": (_NOTE_TEXT, True), "category": (_CATEGORY, False)},
    "btn_memory_note_edit": {
        "id": (_ID, True),
        "content": (_NOTE_TEXT, False),
        "category": (_CATEGORY, False),
    },
    "btn_memory_note_delete": {"id": (_ID, True)},
    "btn_memory_profile_add": {"content": (_LINE, True)},
    "btn_memory_profile_edit": {"id": (_ID, True), "content": (_LINE, True)},
    "btn_memory_profile_delete": {"id": (_ID, True)},
}


class MemoryViews:
    """Search and the editable lists of the open project's memory (actions run on the main thread)."""

    def __init__(
        self,
        ctrl: AppController,
        service: Callable[[], MemoryService | None],
        settings: Callable[[], MemorySettings],
    ) -> None:
        self.ctrl = ctrl
        self._open_service = service  # the open project's memory (None between projects)
        self._settings = settings
        self._searches = itertools.count(1)
        self._latest = 0

    # -- the lists ---------------------------------------------------------------------------------
    def attach(self, service: MemoryService) -> None:
        """Follow ``service``'s notes and profile (main thread: when a project's memory opens)."""
        service.store.on_change = lambda table: self._post_lists(service, table)
        for table in ("notes", "profile"):
            self.apply_lists({"table": table, "rows": self._rows(service, table)})

    def _post_lists(self, service: MemoryService, table: str) -> None:
        # read on the writer's thread; the main thread only swaps the list in
        rows = self._rows(service, table)
        self.ctrl.post_gui_task({"action": "memory_lists", "table": table, "rows": rows})

    @staticmethod
    def _rows(service: MemoryService, table: str) -> list[dict[str, Any]]:
        if table == "notes":
            return [n.to_dict() for n in service.notes.all()]
        return [line.to_dict() for line in service.profile.lines()]

    def apply_lists(self, task: dict[str, Any]) -> None:
        """Main thread: the lists a ``memory_lists`` task carries become GUI state."""
        state = self.ctrl.state
        rows = list(task.get("rows") or [])
        if task.get("table") == "notes":
            state.memory_notes = rows
        else:
            state.memory_profile_lines = rows

    # -- search --------------------------------------------------------------------------------------
    def search(self, query: str, top_k: int = 5) -> None:
        service = self._service()
        query = query.strip()
        if not query:
            raise InvalidValue("btn_memory_search: type something to search for (memory_query is empty)")
        state, redact = self.ctrl.state, self.ctrl.redactor.redact
        threshold = self._settings().relevance_threshold
        seq = self._latest = next(self._searches)
        state.memory_search_status = "searching..."

        def done(results: list[dict[str, Any]]) -> None:
            if seq != self._latest:  # a newer search was started meanwhile
                return
            state.memory_results = [{**r, "text": redact(str(r.get("text", "")))} for r in results]
            state.memory_search_status = f"{len(results)} result{'' if len(results) == 1 else 's'}"

        def failed(exc: BaseException) -> None:
            if seq == self._latest:
                state.memory_results = []
                state.memory_search_status = f"error: {exc}"

        self.ctrl.run_in_background(
            lambda: service.search(query, top_k=top_k, relevance_threshold=threshold), done, failed
        )

    # -- edits ---------------------------------------------------------------------------------------
    def _service(self) -> MemoryService:
        service = self._open_service()
        if service is None:
            raise InvalidValue("no project memory is open")
        return service

    def edit(self, action: str, params: dict[str, Any]) -> None:
        """One change to the notes or the profile; the store's error becomes InvalidValue."""
        service = self._service()
        notes, profile = service.notes, service.profile
        try:
            if action == "btn_memory_note_add":
                notes.add(params["content"], params.get("category", "general"), agent="user")
            elif action == "btn_memory_note_edit":
                notes.edit(params["id"], params.get("content"), params.get("category"))
            elif action == "btn_memory_note_delete":
                notes.delete(params["id"])
            elif action == "btn_memory_profile_add":
                if profile.add(params["content"], "user") is None:
                    raise InvalidValue("the profile already says that")
            elif action == "btn_memory_profile_edit":
                profile.edit(params["id"], params["content"])
            else:
                profile.delete(params["id"])
        except KeyError as exc:
            raise InvalidValue(f"{action}: {exc.args[0]}") from None
        except InvalidValue:
            raise
        except ValueError as exc:
            raise InvalidValue(f"{action}: {exc}") from None


def register_views(views: MemoryViews) -> None:
    """The Memory panel's fields, actions and task handler."""
    ctrl, state = views.ctrl, views.ctrl.state
    ctrl.register_task_handler("memory_lists", views.apply_lists)
    reg = ctrl.fields.register
    reg(
        "memory_query",
        Field(str, "", "The Memory panel's search text (btn_memory_search searches it)"),
        attr_getter(state, "memory_query"),
        attr_setter(state, "memory_query"),
    )
    reg(
        "memory_results",
        Field(list, [], "The last search: kind (file/conversation/note), source, text, score (read-only)"),
        lambda: [dict(r) for r in state.memory_results],
    )
    reg(
        "memory_search_status",
        Field(str, "idle", "idle, searching..., N results or error: … (read-only)"),
        attr_getter(state, "memory_search_status"),
    )
    reg(
        "memory_notes",
        Field(list, [], "The project's notes, newest first: id, content, category, agent, ts (read-only)"),
        lambda: [dict(n) for n in state.memory_notes],
    )
    reg(
        "memory_profile_lines",
        Field(list, [], "The profile's lines: id, content, source (user/learned), ts (read-only)"),
        lambda: [dict(p) for p in state.memory_profile_lines],
    )

    def search(call: ActionCall) -> None:
        params = check_params("btn_memory_search", ACTION_PARAMS["btn_memory_search"], call.user_data)
        query = params.get("query", state.memory_query)
        if "query" in params:
            state.memory_query = query
        views.search(query, params.get("top_k", 5))

    ctrl.actions.register(
        "btn_memory_search",
        search,
        params_doc(ACTION_PARAMS["btn_memory_search"], "Search the index, stored conversations and notes"),
        Field(dict, {}),
    )
    docs = {
        "btn_memory_note_add": "Record a note",
        "btn_memory_note_edit": "Change a note's text or category",
        "btn_memory_note_delete": "Delete a note",
        "btn_memory_profile_add": "Add a line to the profile",
        "btn_memory_profile_edit": "Change a profile line",
        "btn_memory_profile_delete": "Delete a profile line",
    }
    for name, what in docs.items():

        def handler(call: ActionCall, name: str = name) -> None:
            views.edit(name, check_params(name, ACTION_PARAMS[name], call.user_data))

        ctrl.actions.register(name, handler, params_doc(ACTION_PARAMS[name], what), Field(dict, {}))
