"""Errors of the context package (aggregation, views, presets, discussions, undo).

Every message names the thing that was wrong and says what would be accepted;
the automation layer turns them into ``InvalidValue`` replies unchanged.

Hierarchy::

    ContextError                  anything this package refuses or cannot do
    ├── FileSetError              a base dir or file pattern that cannot be used
    ├── ViewError                 a view mode, line slice or mask pattern that is not valid
    ├── PresetError               an unknown or badly named context preset
    ├── DiscussionError           a discussion operation that cannot be applied
    │   ├── UnknownDiscussion     no discussion by that name
    │   ├── DiscussionExists      the name is already taken
    │   └── EntryIndexError       an entry index outside the discussion
    ├── NothingToUndo             undo (or redo) with nothing recorded
    ├── GitError                  ``git rev-parse HEAD`` failed, timed out or git is missing
    ├── ContextTooLarge           a request that cannot fit the model's window, even reduced
    └── SummaryError              a text-only provider call (compression, file summary) failed
"""

from __future__ import annotations

__all__ = [
    "ContextError",
    "ContextTooLarge",
    "DiscussionError",
    "DiscussionExists",
    "EntryIndexError",
    "FileSetError",
    "GitError",
    "NothingToUndo",
    "PresetError",
    "SummaryError",
    "UnknownDiscussion",
    "ViewError",
]


class ContextError(Exception):
    """Base of every error raised by :mod:`manual_slop.context`."""

    def ui_message(self) -> str:
        """The text shown in the response pane when a request fails because of the context."""
        return f"context: {self}"


class FileSetError(ContextError):
    """Raised when the base dir does not exist or a file pattern is unusable."""


class ViewError(ContextError, ValueError):
    """Raised for an unknown view mode, a bad line slice or a mask pattern that does not compile."""


class PresetError(ContextError, LookupError):
    """Raised when a preset name is empty or no preset has that name."""


class DiscussionError(ContextError):
    """Raised when a discussion operation cannot be applied as asked."""


class UnknownDiscussion(DiscussionError, LookupError):
    """Raised when no discussion has the given name."""


class DiscussionExists(DiscussionError):
    """Raised when creating or renaming onto a name that is already used."""


class EntryIndexError(DiscussionError, IndexError):
    """Raised when an entry index is outside the discussion."""


class NothingToUndo(ContextError):
    """Raised by undo (redo) when the history has no step to undo (redo)."""


class GitError(ContextError):
    """Raised when the project's git HEAD cannot be read."""


class ContextTooLarge(ContextError):
    """Raised before any call when a request cannot fit the answering model's window."""


class SummaryError(ContextError):
    """Raised when the provider call behind compression or a file summary fails."""
