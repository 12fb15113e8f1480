"""The conductor's vocabulary: its status, the track status each maps to, what it needs of its
host, and the settings of one run (:class:`ConductorConfig`). Kept apart from the run loop in
:mod:`~manual_slop.mma.conductor`, which re-exports them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from manual_slop.dialogs import Decision, PendingDialog
from manual_slop.governance.cost import CostWatch
from manual_slop.mma.models import TrackStatus
from manual_slop.mma.planning import MAX_REPLANS
from manual_slop.mma.tier4 import PathCheck

__all__ = ["TRACK_STATUS", "ConductorConfig", "ConductorHost", "ConductorStatus", "StateSink"]


class ConductorStatus(StrEnum):
    IDLE = "idle"
    RUNNING = "running"
    PAUSED = "paused"
    DONE = "done"
    BLOCKED = "blocked"
    ABORTED = "aborted"
    STOPPED = "stopped"


TRACK_STATUS = {
    ConductorStatus.RUNNING: TrackStatus.RUNNING,
    ConductorStatus.PAUSED: TrackStatus.PAUSED,
    ConductorStatus.DONE: TrackStatus.DONE,
    ConductorStatus.BLOCKED: TrackStatus.BLOCKED,
    ConductorStatus.ABORTED: TrackStatus.ABORTED,
    ConductorStatus.STOPPED: TrackStatus.PAUSED,
}


class ConductorHost(Protocol):
    """The controller as the conductor uses it (``AppController`` satisfies it)."""

    def request_approval(self, dialog: PendingDialog, timeout: float | None = None) -> Decision: ...

    def publish(self, event_type: str, payload: Mapping[str, Any] | None = None) -> int: ...

    def post_gui_task(self, task: dict[str, Any]) -> str | None: ...


class StateSink(Protocol):
    """Where ``mma_state_update`` snapshots go (the controller's ``event_queue``)."""

    def put_threadsafe(self, event_name: str, payload: Any = None) -> bool: ...


@dataclass(frozen=True, slots=True)
class ConductorConfig:
    """Settings of one run (from the project's ``[mma]`` table and the files snapshot)."""

    base_dir: Path = field(default_factory=Path.cwd)
    max_workers: int = 4
    tier2_model: str = ""
    tier3_models: tuple[str, ...] = ()
    tier4_model: str = ""
    max_retries: int = 2
    max_replans: int = MAX_REPLANS
    tier4_patches: bool = True
    project_files: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    path_check: PathCheck | None = None
    read_check: PathCheck | None = None  # files a tool may not read: never copied into a scratch tree
    retry_backoff_s: float = 1.0  # the first retry's wait after a transient failure (doubles)
    recovery_repeat: int = 3  # this many failures of one class within the window: one severity up
    recovery_window_s: float = 600.0
    cost_watch: CostWatch | None = None  # the cost_over rules: the run pauses and asks past one
    worktree_approvals: str = "ask"  # mutating tools in a ticket's scratch tree: ask, or patch_only
    remote_attempts: Any = None  # None: attempts on worker threads; RayAttempts: as Ray tasks
