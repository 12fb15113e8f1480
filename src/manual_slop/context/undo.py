"""Undo/redo of discussion and context edits, recorded as small patches.

Every edit runs inside :meth:`EditRecorder.edit`, which notes the parts of the state
the edit may touch before and after it and records only the difference:

- a :class:`DiscussionPatch` per discussion: whether it exists, its non-entry keys
  (commit stamp, take origin) and one splice of its entry list (the entries between
  the unchanged prefix and suffix, compared by identity — entries are copy-on-write,
  see :mod:`manual_slop.context.discussions`);
- a :class:`ValuePatch` per state attribute (active discussion, tracked files,
  per-file views, presets).

So a step costs what it changed, not the size of the discussion, and :class:`UndoHistory`
keeps the last ``limit`` (default 200) steps. Undo applies a step's patches backwards;
redo applies them forwards; a new edit clears the redo stack. Main thread only.
"""

from __future__ import annotations

import contextlib
import copy
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from manual_slop.context.errors import NothingToUndo

__all__ = [
    "DEFAULT_UNDO_LIMIT",
    "DiscussionPatch",
    "EditRecorder",
    "EditStep",
    "Editable",
    "UndoHistory",
    "ValuePatch",
]

DEFAULT_UNDO_LIMIT = 200
_ENTRIES = "history"


class Editable(Protocol):
    """What the recorder edits: the app state's discussions plus plain attributes."""

    discussions: dict[str, Any]


@dataclass(frozen=True, slots=True)
class _DiscussionSnapshot:
    exists: bool
    meta: dict[str, Any]
    entries: tuple[dict[str, Any], ...]


def _snapshot(target: Editable, name: str) -> _DiscussionSnapshot:
    table = target.discussions.get(name)
    if not isinstance(table, dict):
        return _DiscussionSnapshot(False, {}, ())
    meta = {k: copy.deepcopy(v) for k, v in table.items() if k != _ENTRIES}
    history = table.get(_ENTRIES)
    return _DiscussionSnapshot(True, meta, tuple(history) if isinstance(history, list) else ())


@dataclass(frozen=True, slots=True)
class DiscussionPatch:
    """How one discussion changed: existence, non-entry keys, one splice of the entries."""

    name: str
    existed: tuple[bool, bool]  # before, after
    meta: tuple[dict[str, Any], dict[str, Any]]
    index: int
    removed: tuple[dict[str, Any], ...]
    inserted: tuple[dict[str, Any], ...]

    @classmethod
    def diff(
        cls, name: str, before: _DiscussionSnapshot, after: _DiscussionSnapshot
    ) -> DiscussionPatch | None:
        old, new = before.entries, after.entries
        start = 0
        limit = min(len(old), len(new))
        while start < limit and old[start] is new[start]:
            start += 1
        end_old, end_new = len(old), len(new)
        while end_old > start and end_new > start and old[end_old - 1] is new[end_new - 1]:
            end_old -= 1
            end_new -= 1
        removed, inserted = old[start:end_old], new[start:end_new]
        if before.exists == after.exists and before.meta == after.meta and not removed and not inserted:
            return None
        return cls(name, (before.exists, after.exists), (before.meta, after.meta), start, removed, inserted)

    def apply(self, target: Editable, reverse: bool) -> None:
        exists = self.existed[0] if reverse else self.existed[1]
        if not exists:
            target.discussions.pop(self.name, None)
            return
        meta = self.meta[0] if reverse else self.meta[1]
        table = target.discussions.get(self.name)
        if not isinstance(table, dict):
            table = target.discussions[self.name] = {_ENTRIES: []}
        for key in [k for k in table if k != _ENTRIES and k not in meta]:
            del table[key]
        table.update(copy.deepcopy(meta))
        history = table.setdefault(_ENTRIES, [])
        take, put = (self.inserted, self.removed) if reverse else (self.removed, self.inserted)
        history[self.index : self.index + len(take)] = list(put)


@dataclass(frozen=True, slots=True)
class ValuePatch:
    """An attribute of the state before and after (deep copies)."""

    attr: str
    before: Any
    after: Any

    def apply(self, target: Editable, reverse: bool) -> None:
        setattr(target, self.attr, copy.deepcopy(self.before if reverse else self.after))


Patch = DiscussionPatch | ValuePatch


@dataclass(frozen=True, slots=True)
class EditStep:
    """One undoable edit: a label for the GUI and the patches it made."""

    label: str
    patches: tuple[Patch, ...]

    def apply(self, target: Editable, reverse: bool) -> None:
        for patch in reversed(self.patches) if reverse else self.patches:
            patch.apply(target, reverse)


class UndoHistory:
    """Two bounded stacks of steps."""

    def __init__(self, limit: int = DEFAULT_UNDO_LIMIT) -> None:
        if limit < 1:
            raise ValueError("the undo limit must be positive")
        self.limit = limit
        self._undo: deque[EditStep] = deque(maxlen=limit)
        self._redo: list[EditStep] = []
        self.recorded = 0  # steps recorded so far (a change counter for observers)

    def record(self, step: EditStep) -> None:
        self._undo.append(step)
        self._redo.clear()
        self.recorded += 1

    def pop_undo(self) -> EditStep:
        if not self._undo:
            raise NothingToUndo("nothing to undo")
        step = self._undo.pop()
        self._redo.append(step)
        return step

    def pop_redo(self) -> EditStep:
        if not self._redo:
            raise NothingToUndo("nothing to redo")
        step = self._redo.pop()
        self._undo.append(step)
        return step

    def clear(self) -> None:
        self._undo.clear()
        self._redo.clear()

    def undo_labels(self) -> list[str]:
        """Labels of the undoable steps, most recent first."""
        return [s.label for s in reversed(self._undo)]

    def redo_labels(self) -> list[str]:
        """Labels of the redoable steps, next one first."""
        return [s.label for s in reversed(self._redo)]


class EditRecorder:
    """Runs edits against a state and records them in an :class:`UndoHistory`."""

    def __init__(self, target: Editable, limit: int = DEFAULT_UNDO_LIMIT) -> None:
        self.target = target
        self.history = UndoHistory(limit)

    @contextlib.contextmanager
    def edit(self, label: str, discussions: Iterable[str] = (), attrs: Iterable[str] = ()) -> Iterator[None]:
        """Record the changes made inside the block to the named discussions and attributes.

        If the block raises, whatever it changed is put back and nothing is recorded.
        """
        names = list(dict.fromkeys(discussions))
        attr_names = list(dict.fromkeys(attrs))
        before_d = {n: _snapshot(self.target, n) for n in names}
        before_a = {a: copy.deepcopy(getattr(self.target, a)) for a in attr_names}
        try:
            yield
        except BaseException:
            self._rollback(before_d, before_a)
            raise
        patches: list[Patch] = []
        for name in names:
            patch = DiscussionPatch.diff(name, before_d[name], _snapshot(self.target, name))
            if patch is not None:
                patches.append(patch)
        for attr in attr_names:
            after = getattr(self.target, attr)
            if after != before_a[attr]:
                patches.append(ValuePatch(attr, before_a[attr], copy.deepcopy(after)))
        if patches:
            self.history.record(EditStep(label, tuple(patches)))

    def _rollback(self, discussions: dict[str, _DiscussionSnapshot], attrs: dict[str, Any]) -> None:
        for name, before in discussions.items():
            patch = DiscussionPatch.diff(name, before, _snapshot(self.target, name))
            if patch is not None:
                patch.apply(self.target, reverse=True)
        for attr, value in attrs.items():
            setattr(self.target, attr, value)

    def undo(self) -> str:
        """Undo the last step; returns its label (raises NothingToUndo)."""
        step = self.history.pop_undo()
        step.apply(self.target, reverse=True)
        return step.label

    def redo(self) -> str:
        """Redo the last undone step; returns its label (raises NothingToUndo)."""
        step = self.history.pop_redo()
        step.apply(self.target, reverse=False)
        return step.label
