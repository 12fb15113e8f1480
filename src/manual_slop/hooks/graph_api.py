"""The Hook API's graph endpoint: a track's ticket DAG as data or as a Mermaid flowchart.

The track is read on the main thread (the runtime's copy; the running track under its
conductor's lock), rendered here by :mod:`manual_slop.mma.mermaid`. Its schema is in
:mod:`.graph_schemas`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from manual_slop.hooks.errors import Conflict, NotFound
from manual_slop.hooks.graph_schemas import GRAPH_FORMATS
from manual_slop.hooks.routes import Call, Route, TextParam
from manual_slop.mma.errors import TicketError
from manual_slop.mma.mermaid import track_graph, track_to_mermaid
from manual_slop.mma.models import ID_PATTERN, Track

if TYPE_CHECKING:
    from manual_slop.controller import AppController

__all__ = ["graph_routes"]

_FORMAT = TextParam("format", "json", "json: nodes and edges; mermaid: a Mermaid flowchart", GRAPH_FORMATS)
_TRACK = TextParam(
    "track", "", "a track id (default: the active track)", pattern=ID_PATTERN,
    expected="a track id (1-64 letters, digits, '_', '.', ':' or '-')",
)  # fmt: skip


class GraphApi:
    """Handlers bound to one controller."""

    def __init__(self, ctrl: AppController, on_main: Callable[[Callable[[], Any]], Any]) -> None:
        self.ctrl = ctrl
        self.on_main = on_main

    def _track(self, track_id: str) -> Track:
        runtime = getattr(self.ctrl, "mma", None)
        if runtime is None:
            raise Conflict("MMA is not available in this app")

        def read() -> Track | dict[str, Any] | None:
            active = self.ctrl.state.active_track or {}
            wanted = track_id or str(active.get("id") or "")
            if not wanted:
                return None
            found = runtime.track_copy(wanted)
            if found is None and wanted == active.get("id"):  # shown, but not listed: as shown
                return {**active, "tickets": [dict(t) for t in self.ctrl.state.mma_tickets]}
            return found

        found = self.on_main(read)
        if found is None:
            if track_id:
                raise NotFound(f"no track {track_id!r} (GET /api/gui/value/mma_tracks lists them)")
            raise NotFound("no active track; start one, or name one with ?track=<id>")
        if isinstance(found, Track):
            return found
        try:
            return Track.from_dict(found)
        except TicketError as exc:
            raise Conflict(f"the active track cannot be drawn: {exc}") from None

    def graph(self, call: Call) -> dict[str, Any]:
        track = self._track(str(call.query["track"]))
        redact = self.ctrl.redactor.redact
        reply: dict[str, Any] = {"track": track.summary(), "format": call.query["format"]}
        if call.query["format"] == "mermaid":
            reply["mermaid"] = track_to_mermaid(track, redact)
        else:
            reply.update(track_graph(track, redact))
        return reply


def graph_routes(ctrl: AppController, on_main: Callable[[Callable[[], Any]], Any]) -> tuple[Route, ...]:
    api = GraphApi(ctrl, on_main)
    return (
        Route("GET", "/api/mma/graph", "getMmaGraph",
              "A track's ticket DAG: nodes and edges, or a Mermaid flowchart coloured by status",
              api.graph, "MmaGraph", query=(_FORMAT, _TRACK), errors=(404, 408, 409)),
    )  # fmt: skip
