"""The ticket graph of a track: validation, ordering, and incremental execution state.

:class:`TrackDAG` answers questions about the graph as a whole (is it valid, in
what order can it run, what is ready now, which tickets a block cascades to) by
walking it — O(tickets + dependencies) per call.

:class:`ExecutionEngine` is what the conductor ticks many times a second. It keeps
per ticket the number of unfinished dependencies and a priority heap of ready
tickets, so a status change costs the edges it touches and :meth:`ExecutionEngine.tick`
costs the tickets it returns — never a rescan of the whole DAG.
"""

from __future__ import annotations

import heapq
import time
from collections import Counter, deque
from collections.abc import Iterable, Sequence

from manual_slop.mma.errors import CycleDetected, DuplicateTicketId, InvalidTransition, UnknownDependency
from manual_slop.mma.models import Ticket, TicketStatus
from manual_slop.mma.waves import ArrayAdjacency, ListAdjacency, adjacency

__all__ = ["LARGE_TRACK_WARNING", "ExecutionEngine", "TrackDAG"]

LARGE_TRACK_WARNING = 20  # above this many tickets, validation warns (over-decomposition)
_DEAD = (TicketStatus.BLOCKED, TicketStatus.KILLED)


class TrackDAG:
    """The dependency graph of a track's tickets (edges point from a dependency to its dependents)."""

    def __init__(self, tickets: Sequence[Ticket]) -> None:
        self.tickets: list[Ticket] = list(tickets)
        self.by_id: dict[str, Ticket] = {}
        for ticket in self.tickets:
            self.by_id.setdefault(ticket.id, ticket)
        by_id = self.by_id
        # dependencies inside this track, without repeats (outside ids are reported by validate)
        self._deps_of: dict[str, list[str]] = {
            tid: [d for d in dict.fromkeys(t.depends_on) if d in by_id] for tid, t in by_id.items()
        }
        self._dependents: dict[str, list[str]] = {tid: [] for tid in by_id}
        for tid, deps in self._deps_of.items():
            for dep in deps:
                self._dependents[dep].append(tid)
        self._order: list[str] | None = None
        self._compact_graph: tuple[list[str], ListAdjacency | ArrayAdjacency] | None = None

    def __len__(self) -> int:
        return len(self.tickets)

    def dependents(self, ticket_id: str) -> list[str]:
        """Ids of the tickets that depend directly on ``ticket_id``."""
        return self._dependents.get(ticket_id, [])

    # -- validation -------------------------------------------------------------------
    def validate(self, known_done: Iterable[str] = ()) -> list[str]:
        """Raise DuplicateTicketId / UnknownDependency / CycleDetected; return warnings.

        ``known_done`` are ids outside this list that count as existing (a replan's
        new tickets may depend on tickets already completed).
        """
        counts = Counter(t.id for t in self.tickets)
        duplicates = sorted(tid for tid, n in counts.items() if n > 1)
        if duplicates:
            raise DuplicateTicketId(duplicates)
        outside = set(known_done)
        missing: dict[str, list[str]] = {}
        for ticket in self.tickets:
            unknown = [d for d in ticket.depends_on if d not in self.by_id and d not in outside]
            if unknown:
                missing[ticket.id] = unknown
        if missing:
            raise UnknownDependency(missing)
        self.topological_sort()  # raises CycleDetected with the cycle's ids
        warnings = []
        if len(self.tickets) > LARGE_TRACK_WARNING:
            warnings.append(
                f"{len(self.tickets)} tickets (more than {LARGE_TRACK_WARNING}): the track may be "
                "over-decomposed"
            )
        return warnings

    def find_cycle(self) -> list[str] | None:
        """One dependency cycle as ``[a, b, ..., a]`` (a depends on b ...), or None."""
        white, grey, black = 0, 1, 2
        color = dict.fromkeys(self.by_id, white)
        for root in self.by_id:
            if color[root] != white:
                continue
            path: list[str] = [root]
            stack = [iter(self._deps(root))]
            color[root] = grey
            while stack:
                dep = next(stack[-1], None)
                if dep is None:
                    color[path.pop()] = black
                    stack.pop()
                elif color[dep] == grey:
                    return [*path[path.index(dep) :], dep]
                elif color[dep] == white:
                    color[dep] = grey
                    path.append(dep)
                    stack.append(iter(self._deps(dep)))
        return None

    def _deps(self, ticket_id: str) -> list[str]:
        return self._deps_of[ticket_id]

    # -- ordering ------------------------------------------------------------------------
    def topological_sort(self) -> list[str]:
        """Ids with every dependency before its dependents (Kahn; ties keep list order)."""
        if self._order is not None:
            return list(self._order)
        indegree = {tid: len(deps) for tid, deps in self._deps_of.items()}
        queue = deque(tid for tid in self.by_id if indegree[tid] == 0)
        order: list[str] = []
        while queue:
            tid = queue.popleft()
            order.append(tid)
            for dependent in self._dependents[tid]:
                indegree[dependent] -= 1
                if indegree[dependent] == 0:
                    queue.append(dependent)
        if len(order) != len(self.by_id):
            raise CycleDetected(self.find_cycle() or sorted(set(self.by_id) - set(order)))
        self._order = order
        return list(order)

    def generations(self) -> list[list[str]]:
        """Ids in waves: wave 0 has no dependencies, wave k waits on waves below k only.

        The tickets of one wave can run in parallel; a ticket's wave is the length of the
        longest dependency chain before it (what ``networkx.topological_generations``
        yields). One pass over a compact integer adjacency (built once per DAG, on first
        use): O(tickets + dependencies). The adjacency is numbered in wave order, so every
        wave is a contiguous range of numbers and the walk reads ids and children front to
        back; from :data:`~manual_slop.mma.waves.VECTOR_FROM` tickets it is numpy arrays
        walked one vectorised step per wave (see :mod:`manual_slop.mma.waves`).
        """
        ids, graph = self._compact()
        return graph.waves(ids, self.find_cycle)

    def _compact(self) -> tuple[list[str], ListAdjacency | ArrayAdjacency]:
        """(ids, adjacency by number), built once, numbered in wave order.

        Wave order is what :meth:`generations` visits (the same walk, run once here on
        insertion-order numbers); tickets on a cycle, which no wave reaches, come last.
        Ids are copied so that they lie in memory in that order too.
        """
        if self._compact_graph is None:
            first = list(self._deps_of)
            index = {tid: i for i, tid in enumerate(first)}
            children = [[index[c] for c in self._dependents[tid]] for tid in first]
            indegree = [len(self._deps_of[tid]) for tid in first]
            waves = ListAdjacency(children, indegree).waves(range(len(first)), None)
            order = [i for wave in waves for i in wave]
            if len(order) != len(first):  # a cycle: keep the rest in insertion order
                placed = set(order)
                order += [i for i in range(len(first)) if i not in placed]
            position = [0] * len(order)
            for new, old in enumerate(order):
                position[old] = new
            numbers = list(range(len(order)))  # one int object per number, allocated in order
            self._compact_graph = (
                [_fresh(first[old]) for old in order],
                adjacency(
                    [[numbers[position[c]] for c in children[old]] for old in order],
                    [indegree[old] for old in order],
                ),
            )
        return self._compact_graph

    def get_ready_tasks(self) -> list[Ticket]:
        """``todo`` tickets whose dependencies are all ``completed`` (full scan)."""
        done = TicketStatus.COMPLETED
        return [
            t
            for t in self.by_id.values()
            if t.status is TicketStatus.TODO
            and all(self.by_id[d].status is done for d in t.depends_on if d in self.by_id)
        ]

    def cascade_blocks(self) -> list[Ticket]:
        """Block every ``todo`` ticket downstream of a blocked or killed one, to a fixed point.

        Returns the tickets that changed. One breadth-first pass reaches the fixed point.
        """
        queue = deque(t.id for t in self.by_id.values() if t.status in _DEAD)
        changed: list[Ticket] = []
        now = time.time()
        while queue:
            source = self.by_id[queue.popleft()]
            for dependent_id in self._dependents[source.id]:
                dependent = self.by_id[dependent_id]
                if dependent.status is TicketStatus.TODO:
                    _cascade(dependent, source, now)
                    changed.append(dependent)
                    queue.append(dependent_id)
        return changed


def _fresh(text: str) -> str:
    """An equal copy of ``text`` in new memory (``str`` and slicing return the same object)."""
    return text.encode().decode()


def _cascade(ticket: Ticket, source: Ticket, now: float) -> None:
    ticket.transition(TicketStatus.BLOCKED, now=now)
    ticket.blocked_by = source.id
    ticket.blocked_reason = f"dependency {source.id} is {source.status}"


class ExecutionEngine:
    """Incremental run state of a DAG: ready heap, in-progress set, per-status counts.

    Every status change of a running track goes through this object (the conductor
    holds its lock around each call). With ``auto_queue`` set, :meth:`tick` also
    claims the tickets it returns (marks them ``in_progress``).
    """

    def __init__(self, dag: TrackDAG, auto_queue: bool = False, *, known_done: Iterable[str] = ()) -> None:
        self.dag = dag
        self.auto_queue = auto_queue
        self.warnings = dag.validate(known_done)
        self._order = {tid: i for i, tid in enumerate(dag.topological_sort())}
        self.changed: list[Ticket] = dag.cascade_blocks()
        by_id = dag.by_id
        done = TicketStatus.COMPLETED
        self._waiting = {
            tid: sum(1 for d in deps if by_id[d].status is not done) for tid, deps in dag._deps_of.items()
        }
        self._counts: Counter[TicketStatus] = Counter(t.status for t in by_id.values())
        self._in_progress: dict[str, None] = {
            t.id: None for t in by_id.values() if t.status is TicketStatus.IN_PROGRESS
        }
        self._ready: set[str] = set()
        self._heap: list[tuple[int, int, str]] = []
        for ticket in by_id.values():
            self._maybe_ready(ticket)

    # -- queries ----------------------------------------------------------------------------
    def tick(self, limit: int | None = None) -> list[Ticket]:
        """Ready tickets, highest priority first (then topological order), at most ``limit``.

        Costs O(k log n) for k returned tickets: stale heap entries are dropped as met.
        """
        picked: list[tuple[int, int, str]] = []
        if limit is None:
            picked = sorted(e for e in set(self._heap) if e[2] in self._ready)
            self._heap = list(picked)
        else:
            while self._heap and len(picked) < limit:
                entry = heapq.heappop(self._heap)
                if entry[2] in self._ready and (not picked or picked[-1] != entry):
                    picked.append(entry)
            for entry in picked:
                heapq.heappush(self._heap, entry)
        tickets = [self.dag.by_id[e[2]] for e in picked]
        if self.auto_queue:
            for ticket in tickets:
                self.start(ticket.id)
        return tickets

    def counts(self) -> dict[str, int]:
        return {str(s): self._counts.get(s, 0) for s in TicketStatus}

    def in_progress(self) -> list[str]:
        return list(self._in_progress)

    def ready_count(self) -> int:
        return len(self._ready)

    def is_complete(self) -> bool:
        return self._counts.get(TicketStatus.COMPLETED, 0) == len(self.dag.by_id)

    def is_stalled(self) -> bool:
        """Nothing ready, nothing running, not finished: the track is blocked."""
        return not self._ready and not self._in_progress and not self.is_complete()

    # -- changes ----------------------------------------------------------------------------
    def start(self, ticket_id: str, worker: str = "") -> Ticket:
        """``todo`` (ready) → ``in_progress``."""
        ticket = self.dag.by_id[ticket_id]
        if ticket_id not in self._ready:
            raise InvalidTransition(f"ticket {ticket_id} is not ready (status {ticket.status})")
        self._set(ticket, TicketStatus.IN_PROGRESS)
        ticket.started_at = ticket.updated_at
        ticket.finished_at = 0.0
        ticket.assigned_to = worker
        return ticket

    def complete(self, ticket_id: str, result: str = "") -> list[Ticket]:
        """``in_progress`` → ``completed``; returns the dependents that became ready."""
        ticket = self.dag.by_id[ticket_id]
        self._set(ticket, TicketStatus.COMPLETED)
        ticket.finished_at = ticket.updated_at
        ticket.set_result(result)
        newly_ready = []
        waiting, by_id = self._waiting, self.dag.by_id
        for dependent_id in self.dag.dependents(ticket_id):
            left = waiting[dependent_id] = waiting[dependent_id] - 1
            if not left and self._maybe_ready(by_id[dependent_id]):  # only a count reaching 0 can release
                newly_ready.append(by_id[dependent_id])
        return newly_ready

    def block(self, ticket_id: str, reason: str, *, manual: bool = False) -> list[Ticket]:
        """``todo`` / ``in_progress`` → ``blocked``; returns every ticket that changed (cascade included)."""
        ticket = self.dag.by_id[ticket_id]
        self._set(ticket, TicketStatus.BLOCKED)
        ticket.blocked_reason = reason
        ticket.blocked_by = ""
        ticket.manual_block = manual
        ticket.finished_at = ticket.updated_at if ticket.started_at else 0.0
        return [ticket, *self._cascade_from(ticket)]

    def kill(self, ticket_id: str, reason: str = "killed") -> list[Ticket]:
        """``todo`` / ``in_progress`` / ``blocked`` → ``killed``; returns every ticket that changed."""
        ticket = self.dag.by_id[ticket_id]
        self._set(ticket, TicketStatus.KILLED)
        ticket.blocked_reason = reason
        ticket.blocked_by = ""
        ticket.finished_at = ticket.updated_at
        return [ticket, *self._cascade_from(ticket)]

    def requeue(self, ticket_id: str) -> Ticket:
        """``in_progress`` → ``todo`` (spawn rejected, conductor stopped); ready again at once."""
        ticket = self.dag.by_id[ticket_id]
        self._set(ticket, TicketStatus.TODO)
        ticket.assigned_to = ""
        ticket.started_at = 0.0
        self._maybe_ready(ticket)
        return ticket

    def unblock(self, ticket_id: str) -> list[Ticket]:
        """``blocked`` / ``killed`` → ``todo`` and lift the blocks that cascaded from it."""
        ticket = self.dag.by_id[ticket_id]
        if ticket.status not in _DEAD:
            raise InvalidTransition(f"ticket {ticket_id} is {ticket.status}, not blocked or killed")
        if ticket.blocked_by and self.dag.by_id[ticket.blocked_by].status in _DEAD:
            raise InvalidTransition(
                f"ticket {ticket_id} waits on blocked dependency {ticket.blocked_by}; unblock that one"
            )
        changed = [self._revive(ticket)]
        queue = deque([ticket_id])
        while queue:
            source_id = queue.popleft()
            for dependent_id in self.dag.dependents(source_id):
                dependent = self.dag.by_id[dependent_id]
                if dependent.status is not TicketStatus.BLOCKED or not dependent.blocked_by:
                    continue
                still_dead = [d for d in dependent.depends_on if self.dag.by_id[d].status in _DEAD]
                if still_dead:
                    dependent.blocked_by = still_dead[0]
                    dependent.blocked_reason = (
                        f"dependency {still_dead[0]} is {self.dag.by_id[still_dead[0]].status}"
                    )
                    continue
                changed.append(self._revive(dependent))
                queue.append(dependent_id)
        return changed

    def note_retry(self, ticket_id: str) -> Ticket:
        """Count one more attempt of an ``in_progress`` ticket."""
        ticket = self.dag.by_id[ticket_id]
        if ticket.status is not TicketStatus.IN_PROGRESS:
            raise InvalidTransition(f"ticket {ticket_id} is {ticket.status}, not in_progress")
        ticket.retry_count += 1
        ticket.updated_at = time.time()
        return ticket

    # -- internals --------------------------------------------------------------------------
    def _set(self, ticket: Ticket, new: TicketStatus) -> None:
        old = ticket.status
        ticket.transition(new)
        self._counts[old] -= 1
        self._counts[new] += 1
        self._ready.discard(ticket.id)
        self._in_progress.pop(ticket.id, None)
        if new is TicketStatus.IN_PROGRESS:
            self._in_progress[ticket.id] = None

    def _maybe_ready(self, ticket: Ticket) -> bool:
        if ticket.status is not TicketStatus.TODO or self._waiting[ticket.id] or ticket.id in self._ready:
            return False
        self._ready.add(ticket.id)
        heapq.heappush(self._heap, (ticket.priority.rank, self._order[ticket.id], ticket.id))
        return True

    def _revive(self, ticket: Ticket) -> Ticket:
        self._set(ticket, TicketStatus.TODO)
        ticket.blocked_reason = ticket.blocked_by = ticket.assigned_to = ""
        ticket.manual_block = False
        ticket.started_at = ticket.finished_at = 0.0
        self._maybe_ready(ticket)
        return ticket

    def _cascade_from(self, source: Ticket) -> list[Ticket]:
        changed: list[Ticket] = []
        queue = deque([source])
        now = time.time()
        while queue:
            current = queue.popleft()
            for dependent_id in self.dag.dependents(current.id):
                dependent = self.dag.by_id[dependent_id]
                if dependent.status is TicketStatus.TODO:
                    old = dependent.status
                    _cascade(dependent, current, now)
                    self._counts[old] -= 1
                    self._counts[TicketStatus.BLOCKED] += 1
                    self._ready.discard(dependent_id)
                    changed.append(dependent)
                    queue.append(dependent)
        return changed
