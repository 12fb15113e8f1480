"""The Hook API's run log endpoints: this session's runs, one run's records a page at a time, and
one request laid out section by section (the Prompt Inspector's view).

They read the session folder's ``runs/`` on the server's thread (files, not GUI state). A run id
is checked before a path is made from it: a malformed id is a 400, an unknown one a 404. Their
schemas are in :mod:`.runs_schemas`.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from manual_slop.governance.run_files import (
    list_runs,
    read_page,
    read_run,
    request_view,
    run_path,
    run_summary,
)
from manual_slop.governance.run_log import RUNS_DIR
from manual_slop.hooks.errors import BadRequest, NotFound
from manual_slop.hooks.routes import Call, QueryParam, Route

if TYPE_CHECKING:
    from pathlib import Path

    from manual_slop.controller import AppController

__all__ = ["run_routes"]

PAGE_LIMIT = 500
_OFFSET = QueryParam("offset", int, 0, 0, 2**31, "the first record to return (0 = run_start)")
_LIMIT = QueryParam("limit", int, 50, 1, PAGE_LIMIT, "at most this many records (a page also stops at 4 MiB)")


class RunsApi:
    """Handlers reading one controller's session folder."""

    def __init__(self, ctrl: AppController) -> None:
        self.session = ctrl.session_log.session_id
        self.folder = ctrl.session_log.root / RUNS_DIR
        self._known: dict[str, tuple[int, dict[str, Any]]] = {}  # summaries of files that did not grow
        self._lock = threading.Lock()

    def _path(self, run_id: str) -> Path:
        try:
            path = run_path(self.folder, run_id)
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        if not path.is_file():
            raise NotFound(f"no run {run_id} in this session")
        return path

    def runs(self, call: Call) -> dict[str, Any]:
        with self._lock:  # server threads share the summaries read so far
            return {"session": self.session, "runs": list_runs(self.folder, self._known)}

    def run(self, call: Call) -> dict[str, Any]:
        path = self._path(call.params["run_id"])
        offset = int(call.query["offset"])
        records, following, total = read_page(path, offset, int(call.query["limit"]))
        return {
            "run": run_summary(path),
            "records": records,
            "offset": offset,
            "next": following,
            "total": total,
        }

    def request(self, call: Call) -> dict[str, Any]:
        run_id, number = call.params["run_id"], call.params["n"]
        path = self._path(run_id)
        if not number.isdigit() or not 0 < int(number) < 2**31:
            raise BadRequest(f"request number: expected a whole number from 1, got {number[:40]!r}")
        try:
            view = request_view(read_run(path, strict=False), int(number))
        except KeyError:
            raise NotFound(f"run {run_id} has no request {number}") from None
        return {"run_id": run_id, **view}


def run_routes(ctrl: AppController) -> tuple[Route, ...]:
    api = RunsApi(ctrl)
    return (
        Route("GET", "/api/runs", "getRuns", "This session's agent runs: kind, start, outcome, counts",
              api.runs, "RunList"),
        Route("GET", "/api/runs/{run_id}", "getRun", "One run's log records, a page at a time",
              api.run, "RunPage", query=(_OFFSET, _LIMIT), errors=(404,)),
        Route("GET", "/api/runs/{run_id}/requests/{n}", "getRunRequest",
              "Request n of a run as sent: each section with its token estimate, and its response",
              api.request, "RunRequest", errors=(404,)),
    )  # fmt: skip
