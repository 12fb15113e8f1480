"""What one tracked file is to the aggregator: :class:`FileItem` and its view settings.

A :class:`FileItem` holds the path, the user's view of it (:class:`ViewSpec`: a
:class:`ViewMode`, line slices and an annotation), the text as last read with its
mtime, and the token estimate of its rendered block. The AI client keeps the items
of a request and calls :meth:`FileItem.refresh` after each tool round: a file that
changed on disk is re-read and its previous text kept in ``old_content`` for a diff.

Tokens are estimated as one per four characters (:func:`estimate_tokens`); the
estimate is the same everywhere in the app, so budgets and displays agree.
"""

from __future__ import annotations

import io
import os
import tokenize
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from manual_slop.context.errors import ViewError

__all__ = [
    "CHARS_PER_TOKEN",
    "IMAGE_TYPES",
    "MAX_FILE_BYTES",
    "FileItem",
    "FileKind",
    "LineSlice",
    "ViewMode",
    "ViewSpec",
    "estimate_tokens",
    "language_for",
    "parse_views",
]

CHARS_PER_TOKEN = 4
MAX_FILE_BYTES = 16 * 1024 * 1024  # bigger files are listed, never read
MAX_ANNOTATION_CHARS = 10_000
_BINARY_PROBE = 8192

IMAGE_TYPES: dict[str, str] = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}

_LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".md": "markdown",
    ".toml": "toml",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".js": "javascript",
    ".mjs": "javascript",
    ".ts": "typescript",
    ".tsx": "tsx",
    ".rs": "rust",
    ".go": "go",
    ".c": "c",
    ".h": "c",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".cc": "cpp",
    ".java": "java",
    ".sh": "bash",
    ".ps1": "powershell",
    ".html": "html",
    ".css": "css",
    ".sql": "sql",
    ".ini": "ini",
    ".cfg": "ini",
}


def estimate_tokens(text: str) -> int:
    """Token estimate of ``text``: one token per four characters, rounded up."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def language_for(name: str) -> str:
    """Fence language for a file name (``''`` when unknown); ``Makefile`` is ``make``."""
    path = Path(name)
    if path.name == "Makefile":
        return "make"
    return _LANGUAGES.get(path.suffix.lower(), "")


class ViewMode(StrEnum):
    """How a file appears in the aggregated context."""

    FULL = "full"  # the whole text
    SUMMARY = "summary"  # heuristic summary (no model call)
    SKELETON = "skeleton"  # Python: signatures and docstrings, bodies elided; others: summary
    OUTLINE = "outline"  # classes/functions (or headings, tables, keys) with line numbers
    MASKED = "masked"  # the whole text with lines matching the mask patterns replaced
    CUSTOM = "custom"  # the chosen line slices, with the annotation
    NONE = "none"  # listed by name only


class FileKind(StrEnum):
    """What the aggregator found at a path."""

    TEXT = "text"
    IMAGE = "image"
    MISSING = "missing"  # not found, or not a regular file
    BINARY = "binary"
    UNREADABLE = "unreadable"  # permission, I/O error, or too large
    REFUSED = "refused"  # the path policy never lets it reach a model (credentials, keys, .env ...)


@dataclass(frozen=True, slots=True, order=True)
class LineSlice:
    """Lines ``start`` to ``end`` of a file, 1-based and inclusive."""

    start: int
    end: int

    @classmethod
    def parse(cls, raw: object) -> LineSlice:
        """From ``[start, end]``; raises :class:`ViewError` naming what is wrong."""
        if (
            not isinstance(raw, list | tuple)
            or len(raw) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in raw)
        ):
            raise ViewError(f"a line slice is [start, end] with two integers, got {raw!r}")
        start, end = raw
        if start < 1 or end < start:
            raise ViewError(f"line slice [{start}, {end}]: lines start at 1 and end >= start")
        return cls(start, end)

    def to_list(self) -> list[int]:
        return [self.start, self.end]


@dataclass(frozen=True, slots=True)
class ViewSpec:
    """The user's choice for one file: mode, slices (``custom``) and an annotation."""

    mode: ViewMode = ViewMode.FULL
    slices: tuple[LineSlice, ...] = ()
    annotation: str = ""

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> ViewSpec:
        """Validate a ``{mode, slices?, annotation?}`` table (project file, automation)."""
        if not isinstance(raw, Mapping):
            raise ViewError(f"a view is a table {{mode, slices?, annotation?}}, got {type(raw).__name__}")
        unknown = sorted(set(raw) - {"mode", "slices", "annotation"})
        if unknown:
            raise ViewError(f"unknown view keys {unknown}; allowed: mode, slices, annotation")
        mode_raw = raw.get("mode", ViewMode.FULL.value)
        try:
            mode = ViewMode(mode_raw)
        except ValueError:
            choices = ", ".join(m.value for m in ViewMode)
            raise ViewError(f"unknown view mode {mode_raw!r}; one of {choices}") from None
        slices_raw = raw.get("slices", [])
        if not isinstance(slices_raw, list | tuple):
            raise ViewError(f"slices must be a list of [start, end] pairs, got {slices_raw!r}")
        slices = tuple(sorted(LineSlice.parse(s) for s in slices_raw))
        annotation = raw.get("annotation", "")
        if not isinstance(annotation, str):
            raise ViewError(f"annotation must be a string, got {type(annotation).__name__}")
        if len(annotation) > MAX_ANNOTATION_CHARS:
            raise ViewError(f"annotation is {len(annotation)} characters; at most {MAX_ANNOTATION_CHARS}")
        if mode is ViewMode.CUSTOM and not slices:
            raise ViewError("mode 'custom' needs at least one line slice [start, end]")
        return cls(mode, slices, annotation)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": self.mode.value}
        if self.slices:
            out["slices"] = [s.to_list() for s in self.slices]
        if self.annotation:
            out["annotation"] = self.annotation
        return out

    @property
    def is_default(self) -> bool:
        return self == ViewSpec()


@dataclass(slots=True)
class FileItem:
    """One file of the context: where it is, how it is shown, and its text as last read."""

    path: Path  # absolute
    name: str  # as shown: posix path relative to the base dir (absolute when outside it)
    mode: ViewMode = ViewMode.FULL
    slices: tuple[LineSlice, ...] = ()
    annotation: str = ""
    kind: FileKind = FileKind.MISSING
    mtime: float = 0.0  # st_mtime when last read (0.0: never read)
    size: int = 0
    content: str | None = None  # the text as last read (None for images, missing, binary files)
    old_content: str | None = None  # the text before the last refresh that found a change
    error: str = ""  # why there is no content
    tokens: int = 0  # estimate of the rendered block (set by aggregation)
    effective_mode: ViewMode | None = None  # the mode aggregation used (None: omitted)
    reduced_by: str = ""  # why it differs: 'auto' (over full_threshold), 'budget', 'summarize'
    refused: str = ""  # why the path policy refuses the file ('' when it does not): never read
    max_bytes: int = MAX_FILE_BYTES  # a bigger file is listed, never read
    too_large: bool = False  # the file was over ``max_bytes`` when last looked at
    # the path policy, asked again before every (re-)read: a file swapped for a link to a secret
    # after it was first read is refused then, not shown in a refresh
    refuse: Callable[[Path], str | None] | None = field(default=None, repr=False, compare=False)
    _stamp: tuple[int, int] = field(default=(0, 0), repr=False)

    @classmethod
    def load(
        cls,
        path: Path,
        name: str,
        view: ViewSpec | None = None,
        *,
        refused: str = "",
        max_bytes: int = MAX_FILE_BYTES,
        refuse: Callable[[Path], str | None] | None = None,
    ) -> FileItem:
        """Read ``path`` now (not at all when ``refused`` -- or ``refuse``, asked before every
        read -- says why it may not be read, nor when it is over ``max_bytes``); problems are
        recorded on the item, never raised."""
        view = view or ViewSpec()
        item = cls(path, name, view.mode, view.slices, view.annotation, refused=refused, max_bytes=max_bytes)
        item.refuse = refuse
        item.read()
        return item

    @property
    def view(self) -> ViewSpec:
        return ViewSpec(self.mode, self.slices, self.annotation)

    @property
    def stamp(self) -> tuple[int, int]:
        """``(st_mtime_ns, st_size)`` when last read: the cache key of the text."""
        return self._stamp

    @property
    def is_python(self) -> bool:
        return self.path.suffix in (".py", ".pyi")

    @property
    def media_type(self) -> str:
        """MIME type of an image item (``''`` for other kinds)."""
        return IMAGE_TYPES.get(self.path.suffix.lower(), "") if self.kind is FileKind.IMAGE else ""

    def read(self) -> None:
        """(Re)load the file from disk and classify it (a refused file is never opened)."""
        self.content, self.error, self.too_large = None, "", False
        if self.refuse is not None and not self.refused:
            self.refused = self.refuse(self.path) or ""
        if self.refused:
            self.kind, self.error = FileKind.REFUSED, self.refused
            return
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            self._set_missing("file not found")
            return
        except OSError as exc:
            self._set_missing(f"cannot stat: {exc.strerror or exc}")
            return
        if not os.path.isfile(self.path):
            self._set_missing("not a regular file")
            return
        self.mtime, self.size, self._stamp = info.st_mtime, info.st_size, (info.st_mtime_ns, info.st_size)
        if self.path.suffix.lower() in IMAGE_TYPES:
            self.kind = FileKind.IMAGE
            return
        if info.st_size > self.max_bytes:  # checked before reading: a huge file is never loaded
            self.kind, self.too_large = FileKind.UNREADABLE, True
            self.error = f"too large to read ({info.st_size:,} bytes; limit {self.max_bytes:,})"
            return
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            self.kind = FileKind.UNREADABLE
            self.error = f"cannot read: {exc.strerror or exc}"
            return
        if b"\0" in data[:_BINARY_PROBE]:
            self.kind = FileKind.BINARY
            self.error = f"binary file ({len(data):,} bytes)"
            return
        self.kind = FileKind.TEXT
        self.content = _decode(data, self.is_python)

    def refresh(self) -> bool:
        """Re-read when the file changed on disk since it was read; True when it did.

        The previous text moves to ``old_content`` so the caller can send a diff.
        """
        if self.refused:
            return False
        try:
            info = os.stat(self.path)
            stamp = (info.st_mtime_ns, info.st_size)
        except OSError:
            stamp = (0, 0)
        if stamp == self._stamp:
            return False
        previous = self.content
        self.read()
        self.old_content = previous
        return True

    def summary(self) -> dict[str, Any]:
        """What the GUI and automation show for this file (``context_files``)."""
        return {
            "path": self.name,
            "mode": self.mode.value,
            "effective_mode": self.effective_mode.value if self.effective_mode else "omitted",
            "tokens": self.tokens,
            "kind": self.kind.value,
            "error": self.error,
        }

    def _set_missing(self, why: str) -> None:
        self.kind, self.error, self.mtime, self.size, self._stamp = FileKind.MISSING, why, 0.0, 0, (0, 0)


def _decode(data: bytes, is_python: bool) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        encoding = "latin-1"
        if is_python:  # honour a PEP 263 coding cookie
            try:
                encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
            except SyntaxError:
                encoding = "latin-1"
        text = data.decode(encoding, errors="replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def parse_views(raw: Mapping[str, Any]) -> tuple[dict[str, ViewSpec], list[str]]:
    """Per-file views from the project file; bad ones are reported and left out."""
    views: dict[str, ViewSpec] = {}
    problems: list[str] = []
    for name, spec in raw.items():
        try:
            views[str(name)] = ViewSpec.from_dict(spec)
        except ViewError as exc:
            problems.append(f"context.views.{name}: {exc}; the file is shown in full")
    return views, problems
