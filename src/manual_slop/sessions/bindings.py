"""Sessions in the app: the registry at start and end, pruning, stars, labels, deletes, replay.

``ctrl.sessions`` is a :class:`SessionsBinding`. At start-up a thread of its own
(``slop-sessions-scan``, joined at shutdown) loads ``logs/log_registry.toml``, scans the
session folders and prunes (see :mod:`.pruning`); at shutdown the running session's record
is written with its end time. The fields and actions
registered here are what the Logs panel, the Hook API and simulations share; every handler
runs on the main thread and leaves file work to background jobs.

While a prior session is replayed (``btn_session_replay``), every send is refused with a
message naming the replay, until ``btn_replay_exit``.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from typing import TYPE_CHECKING, Any

from manual_slop.automation import ActionCall, InvalidValue
from manual_slop.schema import Field
from manual_slop.sessions.pruning import PrunePolicy, prune
from manual_slop.sessions.registry import LogRegistry, SessionError, SessionRecord, scan_session
from manual_slop.sessions.replay import Replay, load_replay

if TYPE_CHECKING:
    from manual_slop.controller import AppController

__all__ = ["REPLAY_PANEL", "SessionsBinding", "register"]

REPLAY_PANEL = "Session Replay"  # the window title of gui/panels/session_replay.py
SCAN_JOIN_S = 2.0  # how long shutdown waits for a start-up scan still running

log = logging.getLogger(__name__)


class SessionsBinding:
    """The session registry as the app shows it, and the replay being viewed (main thread)."""

    def __init__(self, ctrl: AppController) -> None:
        self.ctrl = ctrl
        self.registry = LogRegistry(ctrl.paths.log_dir)
        self.pruned: list[str] = []  # what the start-up pruning removed
        self.replay: Replay | None = None
        self.loading = ""  # the session id whose replay is being read
        self.deleting: set[str] = set()
        self._ready = threading.Event()  # the start-up scan finished
        self._starter: threading.Thread | None = None
        self._rows: tuple[int, list[dict[str, Any]]] = (-1, [])  # (registry version, rows)

    @property
    def current_id(self) -> str:
        return self.ctrl.session_log.session_id

    @property
    def ready(self) -> bool:
        """The start-up scan finished (until then the registry file is not written)."""
        return self._ready.is_set()

    @property
    def rows(self) -> list[dict[str, Any]]:
        """The registry's records as dicts, newest first (copied again only after a change)."""
        version = self.registry.version
        if self._rows[0] != version:
            self._rows = (version, [record.to_dict() for record in self.registry.records()])
        return self._rows[1]

    def policy(self) -> PrunePolicy:
        return PrunePolicy(
            int(self.ctrl.setting("logs.prune_max_kb")), float(self.ctrl.setting("logs.prune_after_hours"))
        )

    # -- start and end ------------------------------------------------------------------
    def start(self) -> None:
        """Load, scan and prune on a thread of its own, started with the app (the controller's
        background pool does not exist yet). It posts nothing to the main thread unless the
        registry was unreadable: the rows are read from the registry's lock-guarded records."""
        registry, policy, current = self.registry, self.policy(), self.current_id

        def job() -> None:
            try:
                registry.load()
                registry.sync()
                self.pruned = prune(registry, policy, current)
            except Exception:
                log.exception("the session registry could not be scanned")
            finally:
                self._ready.set()
            if registry.problem:
                self.ctrl.post_gui_task({"action": "notify", "level": "warning", "message": registry.problem})

        self._starter = threading.Thread(target=job, name="slop-sessions-scan", daemon=True)
        self._starter.start()

    def finish(self) -> None:
        """Shutdown: the running session's record with its end time (skipped when the start-up
        scan never finished: the file was not read, so writing would drop its labels)."""
        if self._starter is not None:
            self._starter.join(SCAN_JOIN_S)
        if not self.ready:
            return
        record = scan_session(self.ctrl.session_log.root)
        record.end = time.time()
        self.registry.put(record)
        try:
            self.registry.save()
        except OSError as exc:
            log.error("could not write %s: %s", self.registry.path, exc)

    def sync(self) -> None:
        """Scan the folders again (background), then show the result."""
        current = (self.current_id,)
        self.ctrl.run_in_background(lambda: self.registry.sync(rescan=current))

    # -- the user's changes ------------------------------------------------------------
    def _record(self, session_id: Any) -> SessionRecord:
        try:
            return self.registry.get(session_id)
        except SessionError as exc:
            raise InvalidValue(str(exc)) from None

    def _save_later(self) -> None:
        self.ctrl.run_in_background(self.registry.save)

    def set_star(self, session_id: str, starred: bool) -> None:
        self._record(session_id)
        try:
            self.registry.update(session_id, starred=starred)
        except SessionError as exc:
            raise InvalidValue(str(exc)) from None
        self._save_later()

    def set_label(self, session_id: str, label: str) -> None:
        self._record(session_id)
        try:
            self.registry.update(session_id, label=label)
        except SessionError as exc:
            raise InvalidValue(str(exc)) from None
        self._save_later()

    def delete(self, session_id: str) -> None:
        """Remove a session folder (background) and its record; not the running or replayed one."""
        self._record(session_id)
        if session_id == self.current_id:
            raise InvalidValue(f"session {session_id} is the running session; it cannot be deleted")
        if self.replay is not None and self.replay.session_id == session_id:
            raise InvalidValue(f"session {session_id} is being replayed; exit the replay first")
        folder = self.registry.folder(session_id)
        self.deleting.add(session_id)

        def job() -> None:
            shutil.rmtree(folder, ignore_errors=False)
            self.registry.forget(session_id)
            self.registry.save()

        def done(_: Any) -> None:
            self.deleting.discard(session_id)
            self.ctrl.notify("info", f"session {session_id} deleted")

        def failed(exc: BaseException) -> None:
            self.deleting.discard(session_id)
            self.ctrl.notify("error", f"could not delete session {session_id}: {exc}")

        self.ctrl.run_in_background(job, done, failed)

    # -- replay ----------------------------------------------------------------------------
    def open_replay(self, session_id: str) -> None:
        """Read a session (background), then show it read-only; sending is refused meanwhile."""
        try:
            folder = self.registry.folder(session_id)
        except SessionError as exc:
            raise InvalidValue(str(exc)) from None
        if not folder.is_dir():
            raise InvalidValue(f"no session folder {session_id}")
        self.loading = session_id

        def done(replay: Replay) -> None:
            if self.loading == session_id:
                self.loading, self.replay = "", replay
                self.ctrl.tab_bars.select("panels", REPLAY_PANEL)  # the window shows it at its next frame

        def failed(exc: BaseException) -> None:
            self.loading = ""
            self.ctrl.notify("error", f"could not read session {session_id}: {exc}")

        self.ctrl.run_in_background(lambda: load_replay(folder), done, failed)

    def exit_replay(self) -> None:
        self.loading, self.replay = "", None

    def send_refusal(self) -> str:
        """Why nothing may be sent now ('' outside a replay)."""
        replaying = self.replay.session_id if self.replay is not None else self.loading
        if not replaying:
            return ""
        return f"read only: this is a replay of session {replaying}; press Exit replay to send"


def _dict_of(name: str, call: ActionCall, keys: dict[str, type]) -> dict[str, Any]:
    """user_data as ``{key: value of kind}``: InvalidValue naming the action and the key otherwise."""
    data = call.user_data
    expected = "{" + ", ".join(keys) + "}"
    if not isinstance(data, dict):
        raise InvalidValue(f"{name}: expected {expected}, got {str(data)[:80]}")
    for key, kind in keys.items():
        if not isinstance(data.get(key), kind):
            raise InvalidValue(f"{name}: {key!r} must be a {kind.__name__} (expected {expected})")
    return {key: data[key] for key in keys}


def register(ctrl: AppController) -> None:
    binding = SessionsBinding(ctrl)
    ctrl.sessions = binding  # type: ignore[attr-defined]
    ctrl.add_send_guard(binding.send_refusal)
    ctrl.on_shutdown(binding.finish)
    reg = ctrl.fields.register
    reg(
        "sessions",
        Field(list, [], "Session registry, newest first: session_id, start, end, label, messages, errors, "
              "size_bytes, starred, whitelisted, whitelist_reason (read-only)"),
        lambda: [dict(row) for row in binding.rows],
    )  # fmt: skip
    reg(
        "session_replay",
        Field(str, "", "The session shown read-only in the replay view ('' = none; read-only)"),
        lambda: binding.replay.session_id if binding.replay is not None else "",
    )
    act = ctrl.actions.register
    act("btn_sessions_refresh", lambda call: binding.sync(), "Scan the session folders again")
    act(
        "btn_session_star",
        lambda call: binding.set_star(
            **_dict_of("btn_session_star", call, {"session_id": str, "starred": bool})
        ),
        "Star or unstar a session (starred ones are never pruned): {session_id, starred}",
        Field(dict, {}),
    )
    act(
        "btn_session_label",
        lambda call: binding.set_label(
            **_dict_of("btn_session_label", call, {"session_id": str, "label": str})
        ),
        "Label a session (one line, at most 200 characters): {session_id, label}",
        Field(dict, {}),
    )
    act(
        "btn_session_delete",
        lambda call: binding.delete(_need_id("btn_session_delete", call)),
        "Delete a session folder (not the running or replayed one); user_data: its id",
        Field(str, ""),
    )
    act(
        "btn_session_replay",
        lambda call: binding.open_replay(_need_id("btn_session_replay", call)),
        "Open a prior session read-only (sending is refused until Exit replay); user_data: its id",
        Field(str, ""),
    )
    act("btn_replay_exit", lambda call: binding.exit_replay(), "Leave the session replay")
    binding.start()


def _need_id(name: str, call: ActionCall) -> str:
    if not isinstance(call.user_data, str) or not call.user_data:
        raise InvalidValue(f"{name}: user_data must be a session id (YYYYMMDD_HHMMSS)")
    return call.user_data
