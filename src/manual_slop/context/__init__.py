"""Context and discussions: what the user curates and what the model sees.

- aggregation of the project's files into Markdown (:mod:`.aggregate`, :mod:`.views`,
  :mod:`.fileset`, :mod:`.items`) and the AST cache (:mod:`.file_cache`); the heuristic
  skeletons, outlines and summaries come from :mod:`manual_slop.summarize`, which the
  tools share;
- discussions with takes (:mod:`.discussions`), undo/redo (:mod:`.undo`), presets
  (:mod:`.presets`), Update Commit (:mod:`.gitstamp`), text-only provider calls
  (:mod:`.subagent`);
- the controller's side of all this (:mod:`.service`, :mod:`.discussion_service`) and
  its automation surface (:mod:`.bindings`).
"""

from __future__ import annotations

from manual_slop.context.aggregate import (
    Aggregate,
    CompiledContext,
    ContextRequest,
    Strategy,
    aggregate,
    build_markdown,
    build_tier3_context,
    compile_context,
    write_md_only,
)
from manual_slop.context.discussion_service import DiscussionService
from manual_slop.context.errors import (
    ContextError,
    DiscussionError,
    DiscussionExists,
    EntryIndexError,
    FileSetError,
    GitError,
    NothingToUndo,
    PresetError,
    SummaryError,
    UnknownDiscussion,
    ViewError,
)
from manual_slop.context.file_cache import CacheStats, FileCache
from manual_slop.context.fileset import ResolvedPath, resolve_files
from manual_slop.context.gitstamp import read_head
from manual_slop.context.items import FileItem, FileKind, LineSlice, ViewMode, ViewSpec, estimate_tokens
from manual_slop.context.service import ContextService
from manual_slop.context.subagent import ask_text, compress_discussion, summarize_file
from manual_slop.context.undo import EditRecorder, UndoHistory

__all__ = [
    "Aggregate",
    "CacheStats",
    "CompiledContext",
    "ContextError",
    "ContextRequest",
    "ContextService",
    "DiscussionError",
    "DiscussionExists",
    "DiscussionService",
    "EditRecorder",
    "EntryIndexError",
    "FileCache",
    "FileItem",
    "FileKind",
    "FileSetError",
    "GitError",
    "LineSlice",
    "NothingToUndo",
    "PresetError",
    "ResolvedPath",
    "Strategy",
    "SummaryError",
    "UndoHistory",
    "UnknownDiscussion",
    "ViewError",
    "ViewMode",
    "ViewSpec",
    "aggregate",
    "ask_text",
    "build_markdown",
    "build_tier3_context",
    "compile_context",
    "compress_discussion",
    "estimate_tokens",
    "read_head",
    "resolve_files",
    "summarize_file",
    "write_md_only",
]
