"""Lock-guarded hand-off lists from any thread to the main thread.

Background threads never touch GUI-visible state; they append to a
:class:`GuardedList` and the main thread takes everything with :meth:`GuardedList.drain`
once per frame (copy-and-clear under the lock, process outside it).
:class:`TaskBoard` remembers the fate of queued GUI tasks so an automation
client can ask whether its task ran.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, TypeVar

__all__ = ["GuardedList", "TaskBoard", "TaskState", "TaskStatus"]

T = TypeVar("T")


class GuardedList(Generic[T]):
    """A list with its own lock; appends from any thread, drains on the main thread."""

    def __init__(self, name: str, on_append: Callable[[], None] | None = None) -> None:
        self.name = name
        self._items: list[T] = []
        self._lock = threading.Lock()
        self._closed = False
        self._on_append = on_append

    def append(self, item: T) -> bool:
        """Add one item; False (nothing added) once the list is closed."""
        with self._lock:
            if self._closed:
                return False
            self._items.append(item)
        if self._on_append is not None:
            self._on_append()
        return True

    def extend(self, items: Iterable[T]) -> bool:
        with self._lock:
            if self._closed:
                return False
            self._items.extend(items)
        if self._on_append is not None:
            self._on_append()
        return True

    def drain(self) -> list[T]:
        """Everything queued so far, in order; the list is left empty."""
        with self._lock:
            if not self._items:
                return []
            items, self._items = self._items, []
        return items

    def close(self) -> None:
        with self._lock:
            self._closed = True

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def has_items(self) -> bool:
        """Anything queued? (One atomic read, no lock: a hint for lock-free readers.)"""
        return bool(self._items)


class TaskState(StrEnum):
    QUEUED = "queued"
    DONE = "done"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class TaskStatus:
    state: TaskState
    error: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        return {"state": str(self.state), "error": self.error}


class TaskBoard:
    """Bounded record of task ids and their state, oldest forgotten first."""

    def __init__(self, capacity: int = 20_000) -> None:
        self._capacity = capacity
        self._lock = threading.Lock()
        # OrderedDict: popitem(last=False) is O(1); a plain dict's next(iter()) degrades
        # after many deletions from the front.
        self._status: OrderedDict[str, TaskStatus] = OrderedDict()

    def queued(self, task_id: str) -> None:
        self._set(task_id, TaskStatus(TaskState.QUEUED))

    def done(self, task_id: str) -> None:
        self._set(task_id, TaskStatus(TaskState.DONE))

    def failed(self, task_id: str, error: str) -> None:
        self._set(task_id, TaskStatus(TaskState.ERROR, error))

    def get(self, task_id: str) -> TaskStatus | None:
        with self._lock:
            return self._status.get(task_id)

    def _set(self, task_id: str, status: TaskStatus) -> None:
        with self._lock:
            self._status[task_id] = status  # an update keeps the task's age
            if len(self._status) > self._capacity:
                self._status.popitem(last=False)
