"""The memory feature in the app: the project's store opened and closed with the project,
the AI client's conversations taken from it, settings as fields, the index job.

``ctrl.memory`` is a :class:`MemoryBinding`. Its :attr:`~MemoryBinding.service` is the
open project's :class:`~manual_slop.memory.service.MemoryService`. The index runs as one
background job at a time; its status is copied into ``state.rag_status`` on the main thread.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from manual_slop.automation import ActionCall, AutomationError, InvalidValue
from manual_slop.config import MEMORY_KEYS, PROJECT_SCHEMA
from manual_slop.memory.conversations import discussion_id, said_turns
from manual_slop.memory.service import MemoryService, MemorySettings
from manual_slop.memory.views import MemoryViews, register_views
from manual_slop.tools.security import expand_tracked

if TYPE_CHECKING:
    from manual_slop.controller import AppController
    from manual_slop.memory.index import IndexProgress

__all__ = ["IndexRunning", "MemoryBinding", "register"]

log = logging.getLogger(__name__)

PROGRESS_EVERY_S = 0.2  # at most this often a progress update goes to the main thread


class IndexRunning(AutomationError):
    """An index run was asked for while one is running (the Hook API answers 409)."""


class MemoryBinding:
    """The open project's memory and the index job."""

    def __init__(self, ctrl: AppController) -> None:
        self.ctrl = ctrl
        self.service: MemoryService | None = None
        self._job_lock = threading.Lock()
        self._job: threading.Thread | None = None
        self._cancel = threading.Event()
        self._status: dict[str, Any] = idle_status()
        self.views = MemoryViews(ctrl, lambda: self.service, self.settings)

    # -- lifetime -------------------------------------------------------------------------------
    def open(self) -> None:
        """Open the current project's store (closing the previous one) and hand it to the client."""
        self.close()
        ctrl = self.ctrl
        # each index run brings the project's current path policy; the redactor guards every write
        self.service = MemoryService(ctrl.paths.project_file, redact=ctrl.redactor.redact)
        if self.service.store.recovered_from is not None:
            ctrl.notify(
                "warning",
                "the memory store could not be read; it was moved aside to "
                f"{self.service.store.recovered_from} and a new one started",
            )
        self.views.attach(self.service)
        with self._job_lock:
            self._status = idle_status()
        ctrl.state.rag_status = {}  # unknown until read (btn_rag_status) or built
        backend = ctrl.backend
        if backend is not None and hasattr(backend, "conversations"):
            backend.conversations = self.service.conversations  # type: ignore[attr-defined]

    def close(self) -> None:
        self.cancel_index()
        job = self._job
        if job is not None:
            job.join(5.0)
        if self.service is not None:
            self.service.close()
            self.service = None

    # -- settings ---------------------------------------------------------------------------------
    def settings(self) -> MemorySettings:
        """The project's memory settings (main thread: a snapshot for one request)."""
        values = self.ctrl.state.memory_settings

        def get(key: str) -> Any:
            return values.get(key, PROJECT_SCHEMA[key].default)

        split = get("memory.split")
        return MemorySettings(
            history_window=int(get("memory.history_window")),
            budget_tokens=int(get("memory.budget_tokens")),
            split=tuple(float(x) for x in split) if len(split) == 3 else (0.5, 0.3, 0.2),  # type: ignore[arg-type]
            window_minutes=float(get("memory.window_minutes")),
            relevance_threshold=float(get("memory.relevance_threshold")),
            profile=bool(get("memory.profile")),
            learn_profile=bool(get("memory.learn_profile")),
            profile_interval_s=float(get("memory.profile_interval_s")),
            rag_enabled=bool(get("rag.enabled")),
            rag_top_k=int(get("rag.top_k")),
        )

    def turns(self, discussion: str | None = None) -> list[tuple[str, str]]:
        """A discussion's entries as turns (main thread)."""
        state = self.ctrl.state
        name = discussion or state.active_discussion
        entries = state.discussions.get(name, {}).get("history", [])
        return said_turns(entries, state.role(0, "User"), state.role(1, "AI"))

    def restore(self) -> int:
        """Store → view: append turns the store has beyond each discussion's entries (the app
        ended without saving them). Main thread; returns the entries added."""
        service, state = self.service, self.ctrl.state
        if service is None:
            return 0
        added = 0
        for name in list(state.discussions):
            missing = service.conversations.missing_turns(discussion_id(name), self.turns(name))
            for role, text in missing:
                entry_role = state.role(0, "User") if role == "user" else state.role(1, "AI")
                self.ctrl.context.discussions.append(entry_role, text, name, label="restore from memory")
                added += 1
        if added:
            self.ctrl.notify(
                "info",
                f"memory: {added} discussion entr{'y' if added == 1 else 'ies'} restored "
                "from the store (the app had ended before saving them)",
            )
        return added

    # -- the index job ------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        with self._job_lock:
            return dict(self._status)

    def start_index(self, paths: list[str] | None = None) -> str:
        """Index ``paths`` (default: the project's tracked files) in the background; the job id."""
        service = self.service
        if service is None:
            raise InvalidValue("no project memory is open")
        ctrl = self.ctrl

        def project() -> tuple[Path, list[str], list[str]]:  # GUI state: read on the main thread
            return ctrl.base_dir(), list(ctrl.state.project_files), list(ctrl.state.files_exclude)

        base, tracked, exclude = ctrl.call_on_main(project, 5.0)
        policy = ctrl.path_policy(base, tracked, exclude)
        if paths is None:
            chosen = expand_tracked(base, tracked, exclude)
        elif not paths:  # an empty run would empty the index
            raise InvalidValue("paths is empty; send no paths to index the tracked files")
        else:
            chosen = []
            for path in paths:
                allowed, why = policy.is_allowed(path if Path(path).is_absolute() else base / path)
                if not allowed:
                    raise InvalidValue(f"{path[:200]}: {why}")
                if not Path(why).is_file():  # a folder would index nothing and drop the rest
                    raise InvalidValue(
                        f"{path[:200]}: not a file; name files, or send no paths for the tracked ones"
                    )
                chosen.append(why)
        with self._job_lock:
            if self._job is not None and self._job.is_alive():
                raise IndexRunning("the index is already being built; cancel it first")
            job_id = uuid.uuid4().hex[:12]
            self._cancel = threading.Event()
            self._status = {**idle_status(), "state": "indexing", "job_id": job_id, "total": len(chosen)}
            self._job = threading.Thread(
                target=self._run_index,
                args=(service, chosen, base, policy.refusal, self._cancel, job_id),
                name="slop-rag-index",
                daemon=True,
            )
            self._job.start()
        self._post()
        return job_id

    def refresh_status(self) -> None:
        """Main thread: read the index's size in the background into ``state.rag_status``
        (opening the index loads chromadb, so it is not done at start)."""
        service, state = self.service, self.ctrl.state
        if service is None:  # said in the status, not raised: the panel asks every frame
            state.rag_status = {**idle_status(), "state": "error", "error": "no project memory is open"}
            return
        with self._job_lock:
            if self._job is not None and self._job.is_alive():
                return
        state.rag_status = {**self.status(), "reading": True}

        def done(status: dict[str, Any]) -> None:
            if self.service is service:
                state.rag_status = status

        self.ctrl.run_in_background(lambda: self.read_size(service), done)

    def read_size(self, service: MemoryService) -> dict[str, Any]:
        """Any thread: the index's files and chunks into the job status (this opens the index,
        which loads chromadb); the status."""
        counts = service.index.status()
        with self._job_lock:
            self._status.update(files=int(counts.get("files", 0)), chunks=int(counts.get("chunks", 0)))
            return dict(self._status)

    def cancel_index(self) -> bool:
        with self._job_lock:
            running = self._job is not None and self._job.is_alive()
        self._cancel.set()
        return running

    def _run_index(
        self,
        service: MemoryService,
        paths: list[str],
        base: Path,
        refuse: Callable[[str], str | None],
        cancel: threading.Event,
        job_id: str,
    ) -> None:
        last = 0.0

        def progress(update: IndexProgress) -> None:
            nonlocal last
            with self._job_lock:
                self._status.update(done=int(update.files_done), total=int(update.files_total))
            if time.monotonic() - last >= PROGRESS_EVERY_S:
                last = time.monotonic()
                self._post()

        try:
            report = service.index.index(
                paths, base_dir=base, progress=progress, cancel=cancel, refuse=refuse
            )
            self.read_size(service)
            with self._job_lock:
                self._status.update(
                    state="idle",
                    done=self._status.get("done" if report.cancelled else "total", 0),
                    cancelled=bool(report.cancelled),
                    error=None,
                )
        except Exception as exc:
            log.exception("indexing failed")
            with self._job_lock:
                self._status.update(state="error", error=f"{type(exc).__name__}: {exc}")
        self._post()
        self.ctrl.publish("rag_index", {"job_id": job_id, **self.status()})

    def _post(self) -> None:
        self.ctrl.post_gui_task({"action": "rag_status", "status": self.status()})


def idle_status() -> dict[str, Any]:
    return {
        "state": "idle",
        "files": 0,
        "chunks": 0,
        "done": 0,
        "total": 0,
        "error": None,
        "job_id": None,
        "cancelled": False,
    }


def register(ctrl: AppController) -> None:
    binding = MemoryBinding(ctrl)
    ctrl.memory = binding
    state = ctrl.state
    register_views(binding.views)
    binding.open()

    def reopen() -> None:
        binding.open()
        binding.restore()

    ctrl.on_project_opened(reopen)
    ctrl.on_shutdown(binding.close)

    def rag_status(task: dict[str, Any]) -> None:
        state.rag_status = dict(task.get("status") or {})

    ctrl.register_task_handler("rag_status", rag_status)

    for key in MEMORY_KEYS:
        ctrl.fields.register(
            key.replace(".", "_"), PROJECT_SCHEMA[key], _getter(state, key), _setter(state, key)
        )

    def index(call: ActionCall) -> None:
        binding.start_index()

    def cancel(call: ActionCall) -> None:
        binding.cancel_index()

    ctrl.actions.register("btn_rag_index", index, "Build or update the project index of the tracked files")
    ctrl.actions.register("btn_rag_cancel", cancel, "Cancel the running index job")
    ctrl.actions.register(
        "btn_rag_status",
        lambda call: binding.refresh_status(),
        "Read the index's size (files, chunks) into rag_status in the background",
    )


def _getter(state: Any, key: str) -> Any:
    return lambda: state.memory_settings.get(key, PROJECT_SCHEMA[key].default)


def _setter(state: Any, key: str) -> Any:
    def set_value(value: Any) -> None:
        state.memory_settings[key] = value

    return set_value
