"""MMA: four-tier orchestration — epic → tracks (Tier 1) → ticket DAG (Tier 2) →
stateless workers (Tier 3) with QA and patches on failure (Tier 4), every step behind
the Execution Clutch. See docs/guide_mma.md."""

from __future__ import annotations

from manual_slop.mma.attempt import AttemptSettings, TicketOutcome, WorktreeApprovals, run_ticket
from manual_slop.mma.client import (
    AIClientAdapter,
    ContextBuilder,
    ContextRequest,
    MMAServices,
    StepGate,
    StepRequest,
    StepVerdict,
    TierCaller,
    TierClient,
    TokenUsage,
)
from manual_slop.mma.conductor import ConductorConfig, ConductorEngine, ConductorHost, ConductorStatus
from manual_slop.mma.dag import ExecutionEngine, TrackDAG
from manual_slop.mma.errors import (
    Aborted,
    CycleDetected,
    DagError,
    DuplicateTicketId,
    InvalidTransition,
    MMAError,
    PatchError,
    PersistenceError,
    PlanningError,
    TicketError,
    UnknownDependency,
)
from manual_slop.mma.merge import MergeConflict, merge_into
from manual_slop.mma.mermaid import track_to_mermaid
from manual_slop.mma.models import Priority, Ticket, TicketStatus, TierUsage, Track, TrackStatus
from manual_slop.mma.persistence import TrackStore
from manual_slop.mma.planning import parse_tickets, parse_tracks, plan_epic, plan_track, replan_track
from manual_slop.mma.pool import WorkerPool
from manual_slop.mma.tier4 import apply_patch, run_tier4_patch_generation, run_tier4_qa
from manual_slop.mma.worker import TicketWorker, default_tier3_context
from manual_slop.mma.worktree import Workspace

__all__ = [
    "AIClientAdapter",
    "Aborted",
    "AttemptSettings",
    "ConductorConfig",
    "ConductorEngine",
    "ConductorHost",
    "ConductorStatus",
    "ContextBuilder",
    "ContextRequest",
    "CycleDetected",
    "DagError",
    "DuplicateTicketId",
    "ExecutionEngine",
    "InvalidTransition",
    "MMAError",
    "MMAServices",
    "MergeConflict",
    "PatchError",
    "PersistenceError",
    "PlanningError",
    "Priority",
    "StepGate",
    "StepRequest",
    "StepVerdict",
    "Ticket",
    "TicketError",
    "TicketOutcome",
    "TicketStatus",
    "TicketWorker",
    "TierCaller",
    "TierClient",
    "TierUsage",
    "TokenUsage",
    "Track",
    "TrackDAG",
    "TrackStatus",
    "TrackStore",
    "UnknownDependency",
    "WorkerPool",
    "Workspace",
    "WorktreeApprovals",
    "apply_patch",
    "default_tier3_context",
    "merge_into",
    "parse_tickets",
    "parse_tracks",
    "plan_epic",
    "plan_track",
    "replan_track",
    "run_ticket",
    "run_tier4_patch_generation",
    "run_tier4_qa",
    "track_to_mermaid",
]
