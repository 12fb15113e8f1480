"""The Hook API's memory endpoints: the project index, recall, notes and the profile.

They run on the server's threads and use the project's ``MemoryService`` directly (it is
thread-safe); the only GUI-visible change, switching the profile on or off, is queued for the
main thread like every field write. Their schemas are in :mod:`.memory_schemas`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from manual_slop.automation import AutomationError
from manual_slop.hooks.errors import BadRequest, Conflict, NotFound, RequestTimedOut
from manual_slop.hooks.routes import Call, Reply, Route
from manual_slop.memory.bindings import IndexRunning

if TYPE_CHECKING:
    from manual_slop.controller import AppController
    from manual_slop.memory.bindings import MemoryBinding
    from manual_slop.memory.service import MemoryService

__all__ = ["memory_routes"]


class MemoryApi:
    """Handlers bound to one controller."""

    def __init__(self, ctrl: AppController, on_main: Callable[[Callable[[], Any]], Any]) -> None:
        self.ctrl = ctrl
        self.on_main = on_main  # reads of GUI-owned state (408 when the frame loop does not answer)

    def _profile_on(self, binding: MemoryBinding) -> bool:
        return bool(self.on_main(lambda: binding.settings().profile))

    def _binding(self) -> MemoryBinding:
        binding = self.ctrl.memory
        if binding is None or binding.service is None:
            raise Conflict("no project memory is open")
        return binding

    def _service(self) -> MemoryService:
        service = self._binding().service
        if service is None:  # closed since _binding() looked
            raise Conflict("no project memory is open")
        return service

    def rag_index(self, call: Call) -> Reply:
        paths = (call.body or {}).get("paths")
        try:
            job_id = self._binding().start_index(paths)
        except TimeoutError:
            raise RequestTimedOut("the main thread did not answer in time; nothing was started") from None
        except IndexRunning as exc:
            raise Conflict(str(exc)) from None
        except AutomationError as exc:
            raise BadRequest(str(exc)) from None
        return Reply({"job_id": job_id})

    def rag_status(self, call: Call) -> dict[str, Any]:
        binding = self._binding()
        status = binding.status()
        if status.get("state") == "idle" and not status.get("chunks"):
            status = binding.read_size(self._service())
        return status

    def rag_cancel(self, call: Call) -> dict[str, Any]:
        return {"cancelled": self._binding().cancel_index()}

    def rag_query(self, call: Call) -> dict[str, Any]:
        passages = self._service().index.query(call.body["query"], top_k=call.body.get("top_k", 5))
        return {"results": [p.to_dict() for p in passages]}

    def recall(self, call: Call) -> dict[str, Any]:
        try:
            hits = self._service().recall.search(call.body["query"], limit=call.body.get("limit", 5))
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        return {"results": [h.to_dict() for h in hits]}

    def notes(self, call: Call) -> dict[str, Any]:
        return {"notes": [n.to_dict() for n in self._service().notes.all()]}

    def add_note(self, call: Call) -> Reply:
        notes = self._service().notes
        try:
            note = notes.add(call.body["content"], call.body.get("category") or "general", agent="user")
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        return Reply({"note": note.to_dict()})

    def delete_note(self, call: Call) -> dict[str, Any]:
        raw = call.params["id"]
        if not (raw.isascii() and raw.isdigit()) or len(raw) > 18:
            raise NotFound(f"no note {raw[:40]!r}")
        try:
            self._service().notes.delete(int(raw))
        except KeyError:
            raise NotFound(f"no note {raw}") from None
        return {"deleted": int(raw)}

    def profile(self, call: Call) -> dict[str, Any]:
        binding = self._binding()
        lines = self._service().profile.lines()
        return {"enabled": self._profile_on(binding), "lines": [line.to_dict() for line in lines]}

    def put_profile(self, call: Call) -> dict[str, Any]:
        binding = self._binding()
        try:
            lines = self._service().profile.replace(list(call.body["lines"]))
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        enabled = call.body.get("enabled")
        if enabled is not None:
            self.ctrl.post_gui_task({"action": "set_value", "item": "memory_profile", "value": bool(enabled)})
        return {
            "enabled": self._profile_on(binding) if enabled is None else bool(enabled),
            "lines": [line.to_dict() for line in lines],
        }


def memory_routes(ctrl: AppController, on_main: Callable[[Callable[[], Any]], Any]) -> tuple[Route, ...]:
    api = MemoryApi(ctrl, on_main)
    return (
        Route("POST", "/api/rag/index", "ragIndex",
              "Index the project (default: its tracked files) in the background",
              api.rag_index, "RagJob", 202, "RagIndexRequest", errors=(408, 409)),
        Route("GET", "/api/rag/status", "ragStatus", "The index job's state and the index's size",
              api.rag_status, "RagStatus", errors=(409,)),
        Route("POST", "/api/rag/cancel", "ragCancel", "Cancel the running index job",
              api.rag_cancel, "RagCancelled", errors=(409,)),
        Route("POST", "/api/rag/query", "ragQuery", "The index's passages closest to a query",
              api.rag_query, "RagResults", request="RagQueryRequest", errors=(409,)),
        Route("POST", "/api/memory/recall", "memoryRecall", "Search every stored conversation",
              api.recall, "RecallResults", request="RecallRequest", errors=(409,)),
        Route("GET", "/api/memory/notes", "getNotes", "The project's notes, newest first",
              api.notes, "Notes", errors=(409,)),
        Route("POST", "/api/memory/notes", "addNote", "Record a note", api.add_note, "NoteCreated", 201,
              "NoteRequest", errors=(409,)),
        Route("DELETE", "/api/memory/notes/{id}", "deleteNote", "Delete a note",
              api.delete_note, "NoteDeleted", errors=(404, 409)),
        Route("GET", "/api/memory/profile", "getProfile", "The profile lines and whether it is on",
              api.profile, "ProfileLines", errors=(408, 409)),
        Route("PUT", "/api/memory/profile", "putProfile", "Replace the profile lines (and switch it on/off)",
              api.put_profile, "ProfileLines", request="ProfileRequest", errors=(408, 409)),
    )  # fmt: skip
