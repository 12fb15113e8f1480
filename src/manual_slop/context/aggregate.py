"""Aggregation: the project's files (and screenshots) compiled into one Markdown context.

Pipeline (:func:`compile_context`, run off the main thread)::

    ContextRequest ──resolve_files──▶ FileItem per file ──aggregate(strategy)──▶ Markdown:
    (a snapshot of                     (read now; view     (per-file mode, token     ## System Prompt
     the project settings)              from the project)   budget for ``auto``)      ## Files, ## Screenshots

Strategies (:class:`Strategy`) decide the mode of every file whose own mode is
``full``; other modes are the user's explicit choice and are kept:

- ``full`` — every file in its own mode.
- ``summarize`` — ``full`` files become summaries; with provider summaries enabled,
  files over ``subagent_min_chars`` characters or 5,000 lines get a summary written
  by the model (text only, cached per file version).
- ``auto`` — ``full`` files up to ``full_threshold`` tokens stay full, bigger ones become
  skeletons (Python) or summaries; then, while the section exceeds ``token_budget``,
  the largest block is reduced one step (full → skeleton/summary → outline → name only
  → omitted; masked and custom files go straight to name only, so a reduction never
  shows lines the user masked). The section never exceeds the budget.

The output is deterministic: files sorted by name, fixed headings, nothing that
depends on time or order of discovery — the same inputs give the same bytes, which
is what the providers' prompt caches key on.

Files the app's :class:`~manual_slop.tools.security.PathPolicy` refuses (credentials,
``.env`` files, private keys, the app's own config and histories, under any spelling or
symlink) are never opened: they are listed by name with the refusal, for the model and
for the Context panel.
"""

from __future__ import annotations

import heapq
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from manual_slop.context.errors import FileSetError, ViewError
from manual_slop.context.file_cache import FileCache
from manual_slop.context.fileset import resolve_files
from manual_slop.context.items import (
    MAX_FILE_BYTES,
    FileItem,
    FileKind,
    ViewMode,
    ViewSpec,
    estimate_tokens,
    parse_views,
)
from manual_slop.context.views import Summarizer, render_block
from manual_slop.cpu_turn import cpu_turn, give_way

if TYPE_CHECKING:
    from manual_slop.context.fit_report import FitReport
    from manual_slop.context.refresh import ContextRefresher
    from manual_slop.tools.security import PathPolicy

__all__ = [
    "DEFAULT_FULL_THRESHOLD",
    "DEFAULT_TOKEN_BUDGET",
    "MIN_TOKEN_BUDGET",
    "Aggregate",
    "CompiledContext",
    "ContextRequest",
    "ReadFiles",
    "Strategy",
    "aggregate",
    "build_markdown",
    "build_tier3_context",
    "compile_context",
    "compile_masks",
    "read_files",
    "write_md_only",
]

DEFAULT_TOKEN_BUDGET = 100_000
DEFAULT_FULL_THRESHOLD = 4_000
MIN_TOKEN_BUDGET = 256
SUBAGENT_MIN_CHARS = 100_000
SUBAGENT_MIN_LINES = 5_000
FILES_HEADING = "## Files\n\n"


class Strategy(StrEnum):
    """How the aggregator picks the view of files left in ``full`` mode."""

    FULL = "full"
    SUMMARIZE = "summarize"
    AUTO = "auto"


@dataclass(slots=True)
class Aggregate:
    """The ``## Files`` section and what was decided for each file."""

    markdown: str
    items: list[FileItem]  # sorted by name; effective_mode and tokens set
    omitted: int = 0

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.markdown)


def compile_masks(patterns: Iterable[str]) -> tuple[list[re.Pattern[str]], list[str]]:
    """Compiled mask patterns and a message for each one that does not compile."""
    compiled: list[re.Pattern[str]] = []
    problems: list[str] = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            problems.append(f"mask pattern {pattern!r} does not compile ({exc}); ignored")
    return compiled, problems


# ======================================================================================
# the files section
# ======================================================================================
_REDUCE: dict[ViewMode, ViewMode | None] = {
    ViewMode.FULL: ViewMode.SKELETON,  # SUMMARY for non-Python files, see _next_mode
    ViewMode.SKELETON: ViewMode.OUTLINE,
    ViewMode.OUTLINE: ViewMode.NONE,
    ViewMode.SUMMARY: ViewMode.NONE,
    ViewMode.MASKED: ViewMode.NONE,
    ViewMode.CUSTOM: ViewMode.NONE,
    ViewMode.NONE: None,  # omitted
}


def _next_mode(item: FileItem, mode: ViewMode | None) -> ViewMode | None:
    if mode is None or item.kind is not FileKind.TEXT:
        return None
    if mode is ViewMode.FULL and not item.is_python:
        return ViewMode.SUMMARY
    return _REDUCE[mode]


def _trailer(omitted: int, budget: int) -> str:
    if not omitted:
        return ""
    files = "file" if omitted == 1 else "files"
    return f"_{omitted} more {files} omitted to fit the token budget of {budget:,} tokens._\n\n"


def aggregate(
    items: Iterable[FileItem],
    strategy: Strategy | str = Strategy.AUTO,
    *,
    token_budget: int = DEFAULT_TOKEN_BUDGET,
    full_threshold: int = DEFAULT_FULL_THRESHOLD,
    mask_patterns: Sequence[str] = (),
    cache: FileCache | None = None,
    summarizer: Summarizer | None = None,
    subagent_min_chars: int = SUBAGENT_MIN_CHARS,
) -> Aggregate:
    """Render the ``## Files`` section; sets ``effective_mode`` and ``tokens`` on each item."""
    strategy = Strategy(strategy)
    if strategy is Strategy.AUTO and token_budget < MIN_TOKEN_BUDGET:
        raise ViewError(f"token budget {token_budget} is below the minimum of {MIN_TOKEN_BUDGET}")
    cache = cache or FileCache()
    masks, _ = compile_masks(mask_patterns)
    ordered = sorted(items, key=lambda i: i.name)
    if not ordered:
        return Aggregate("", [])
    blocks: list[str] = []
    for item in ordered:
        give_way()  # a background thread lets a frame being drawn go first, file by file
        if item.kind is not FileKind.TEXT:  # missing, binary, images: listed by name
            item.effective_mode = ViewMode.NONE
            blocks.append(render_block(item, ViewMode.NONE, cache=cache))
            continue
        mode, tag = _initial_mode(item, strategy)
        provider = (
            summarizer
            if strategy is Strategy.SUMMARIZE
            and tag
            and item.content is not None
            and _big(item, subagent_min_chars)
            else None
        )
        block = render_block(item, mode, cache=cache, masks=masks, tags=tag, summarizer=provider)
        if strategy is Strategy.AUTO and mode is ViewMode.FULL and estimate_tokens(block) > full_threshold:
            mode, tag = _next_mode(item, mode) or mode, ("auto",)
            block = render_block(item, mode, cache=cache, masks=masks, tags=tag)
        item.effective_mode, item.reduced_by = mode, tag[0] if tag else ""
        blocks.append(block)
    omitted = 0
    if strategy is Strategy.AUTO:
        omitted = _fit_budget(ordered, blocks, token_budget, cache, masks)
    for item, block in zip(ordered, blocks, strict=True):
        item.tokens = estimate_tokens(block)
    markdown = FILES_HEADING + "".join(blocks) + _trailer(omitted, token_budget)
    return Aggregate(markdown, ordered, omitted)


def _initial_mode(item: FileItem, strategy: Strategy) -> tuple[ViewMode, tuple[str, ...]]:
    if item.mode is not ViewMode.FULL or strategy is not Strategy.SUMMARIZE:
        return item.mode, ()
    return ViewMode.SUMMARY, ("summarize",)


def _big(item: FileItem, min_chars: int) -> bool:
    text = item.content or ""
    return len(text) > min_chars or text.count("\n") >= SUBAGENT_MIN_LINES


def _fit_budget(
    items: list[FileItem], blocks: list[str], budget: int, cache: FileCache, masks: Sequence[re.Pattern[str]]
) -> int:
    """Reduce the largest blocks until the section fits; returns how many files were omitted."""
    limit = budget * 4  # estimate_tokens(text) <= budget  <=>  len(text) <= 4 * budget
    total = len(FILES_HEADING) + sum(len(b) for b in blocks)
    omitted = 0
    heap = [
        (-len(block), item.name, index) for index, (item, block) in enumerate(zip(items, blocks, strict=True))
    ]
    heapq.heapify(heap)
    while heap and total + len(_trailer(omitted, budget)) > limit:
        _, _, index = heapq.heappop(heap)
        item = items[index]
        mode = _next_mode(item, item.effective_mode)
        old = len(blocks[index])
        if mode is None:
            blocks[index] = ""
            item.effective_mode, item.reduced_by = None, "budget"
            omitted += 1
        else:
            blocks[index] = render_block(item, mode, cache=cache, masks=masks, tags=("budget",))
            item.effective_mode, item.reduced_by = mode, "budget"
            heapq.heappush(heap, (-len(blocks[index]), item.name, index))
        total += len(blocks[index]) - old
    return omitted


def build_markdown(
    items: Iterable[FileItem], strategy: Strategy | str = Strategy.FULL, **options: Any
) -> str:
    """The ``## Files`` section for ``items`` (see :func:`aggregate` for the options)."""
    return aggregate(items, strategy, **options).markdown


# ======================================================================================
# a whole request's context
# ======================================================================================
@dataclass(frozen=True, slots=True)
class ContextRequest:
    """Everything aggregation needs, copied from the project on the main thread.

    Building it is cheap (a few list copies); :func:`compile_context` does the file I/O
    and parsing, on whatever thread the caller chooses.
    """

    base_dir: str
    paths: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    screenshots: tuple[str, ...] = ()
    views: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    strategy: str = Strategy.AUTO.value
    token_budget: int = DEFAULT_TOKEN_BUDGET
    full_threshold: int = DEFAULT_FULL_THRESHOLD
    mask_patterns: tuple[str, ...] = ()
    system_prompt: str = ""
    subagent_summaries: bool = False
    subagent_min_chars: int = SUBAGENT_MIN_CHARS
    policy: PathPolicy | None = None  # the app's path policy: refused files are never read
    read_limit: int = MAX_FILE_BYTES  # bigger files are listed by name, never read (see context.fit)
    image_max_edge: int = 1568  # screenshots are downscaled to this longest edge (context.images)


@dataclass(slots=True)
class CompiledContext:
    """The Markdown sent as ``md_content`` and the items handed to the AI client."""

    markdown: str
    files: Aggregate
    screenshots: list[FileItem]
    problems: list[str]
    elapsed_s: float
    masks: tuple[re.Pattern[str], ...] = ()
    fit: FitReport | None = None  # how it was fitted to the answering model's window (sends only)
    image_tokens: int = 0  # the screenshots on the answering (or active) provider, by its estimate

    def refresher(self, cache: FileCache) -> ContextRefresher:
        """What the AI client checks after each tool round: these files, in the views sent."""
        from manual_slop.context.refresh import ContextRefresher

        return ContextRefresher([*self.files.items, *self.screenshots], self.masks, cache)

    @property
    def file_items(self) -> list[FileItem]:
        """Text files, tracked images and screenshots: what the AI client refreshes or attaches."""
        return [*self.files.items, *self.screenshots]

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.markdown)

    def summary(self) -> dict[str, Any]:
        """Plain data for the main thread (``context_compiled`` task)."""
        return {
            "files": [item.summary() for item in self.files.items],
            "screenshots": [item.summary() for item in self.screenshots],
            "tokens": self.tokens + self.image_tokens,  # what the view shows: the images count too
            "image_tokens": self.image_tokens,
            "files_tokens": self.files.tokens,
            "omitted": self.files.omitted,
            "problems": list(self.problems),
            "elapsed_ms": round(self.elapsed_s * 1000.0, 1),
            "fit": self.fit.to_dict() if self.fit is not None else None,
        }


@dataclass(slots=True)
class ReadFiles:
    """A request's files and screenshots as read from disk, with the problems found reading
    them: a compile at another token budget (a fit's next round) renders them again without
    resolving or reading anything."""

    items: list[FileItem]
    screenshots: list[FileItem]
    problems: list[str]
    masks: tuple[re.Pattern[str], ...]
    read_limit: int  # the request's: a compile with another limit reads again


def read_files(request: ContextRequest) -> ReadFiles:
    """Resolve and read the files and screenshots of ``request`` (blocking; any thread)."""
    base = Path(request.base_dir)
    views, problems = parse_views(request.views)
    masks, mask_problems = compile_masks(request.mask_patterns)
    problems += mask_problems
    items = [
        FileItem.load(
            r.path,
            r.name,
            views.get(r.name),
            refuse=_refuser(request.policy),
            max_bytes=request.read_limit,
        )
        for r in resolve_files(base, request.paths, request.exclude)
    ]
    screenshots = [
        FileItem.load(r.path, r.name, ViewSpec(), refuse=_refuser(request.policy))
        for r in resolve_files(base, request.screenshots)
    ]
    for item in [*items, *screenshots]:
        if item.kind is FileKind.REFUSED:
            problems.append(f"{item.name} is not sent: {item.refused}")
    for shot in screenshots:
        if shot.kind not in (FileKind.IMAGE, FileKind.MISSING, FileKind.REFUSED):
            problems.append(f"screenshot {shot.name} is not a PNG, JPEG, GIF or WebP image; listed only")
    return ReadFiles(items, screenshots, problems, tuple(masks), request.read_limit)


def compile_context(
    request: ContextRequest,
    cache: FileCache,
    summarizer: Summarizer | None = None,
    read: ReadFiles | None = None,
) -> CompiledContext:
    """Read, render and assemble the context for ``request`` (blocking; any thread); ``read``:
    its files as :func:`read_files` read them already (a request differing only in its token
    budget has the same files)."""
    started = time.perf_counter()
    read = read if read is not None else read_files(request)
    files = aggregate(
        read.items,
        request.strategy,
        token_budget=request.token_budget,
        full_threshold=request.full_threshold,
        mask_patterns=[m.pattern for m in read.masks],
        cache=cache,
        summarizer=summarizer if request.subagent_summaries else None,
        subagent_min_chars=request.subagent_min_chars,
    )
    screenshots = read.screenshots
    sections: list[str] = []
    if request.system_prompt.strip():
        sections.append(f"## System Prompt\n\n{request.system_prompt.strip()}\n\n")
    if files.markdown:
        sections.append(files.markdown)
    if screenshots:
        lines = "".join(f"- {_screenshot_line(s)}\n" for s in screenshots)
        sections.append(f"## Screenshots\n\n{lines}\n")
    markdown = "".join(sections).rstrip("\n") + "\n" if sections else ""
    elapsed = time.perf_counter() - started
    return CompiledContext(markdown, files, list(screenshots), list(read.problems), elapsed, read.masks)


def _refuser(policy: PathPolicy | None) -> Callable[[Path], str | None] | None:
    """What a file item asks before each read (a refresh too): the policy's refusal."""
    return policy.refusal if policy is not None else None


def _screenshot_line(shot: FileItem) -> str:
    if shot.kind is FileKind.IMAGE:
        return (
            f"`{shot.name}` ({shot.media_type}, {shot.size:,} bytes; attached for providers that take images)"
        )
    if shot.kind is FileKind.MISSING:
        return f"`{shot.name}` (missing: {shot.error})"
    if shot.kind is FileKind.REFUSED:
        return f"`{shot.name}` (refused: {shot.error})"
    return f"`{shot.name}` (not an image)"


def build_tier3_context(
    focus_files: Sequence[str],
    base_dir: str | Path,
    paths: Sequence[str] = (),
    exclude: Sequence[str] = (),
    *,
    views: Mapping[str, Mapping[str, Any]] | None = None,
    mask_patterns: Sequence[str] = (),
    cache: FileCache | None = None,
    policy: PathPolicy | None = None,
) -> str:
    """Context for an MMA worker: ``focus_files`` in full, every other tracked file as a skeleton.

    Files the user masked stay masked when in focus and are listed by name otherwise;
    files set to ``none`` stay names only; files the ``policy`` refuses are never read.
    """
    with cpu_turn():  # worker threads take turns; the frame waits for one at most
        return _build_tier3_context(
            focus_files, base_dir, paths, exclude, views, mask_patterns, cache, policy
        )


def _build_tier3_context(
    focus_files: Sequence[str],
    base_dir: str | Path,
    paths: Sequence[str],
    exclude: Sequence[str],
    views: Mapping[str, Mapping[str, Any]] | None,
    mask_patterns: Sequence[str],
    cache: FileCache | None,
    policy: PathPolicy | None,
) -> str:
    base = Path(base_dir)
    focus = {r.name for r in resolve_files(base, focus_files)}
    user_views, _ = parse_views(views or {})
    items: list[FileItem] = []
    for resolved in resolve_files(base, [*paths, *focus_files], exclude):
        give_way()
        own = user_views.get(resolved.name, ViewSpec())
        if own.mode in (ViewMode.MASKED, ViewMode.NONE):
            mode = own.mode if resolved.name in focus or own.mode is ViewMode.NONE else ViewMode.NONE
        else:
            mode = ViewMode.FULL if resolved.name in focus else ViewMode.SKELETON
        items.append(
            FileItem.load(
                resolved.path,
                resolved.name,
                ViewSpec(mode, (), own.annotation),
                refuse=_refuser(policy),
            )
        )
    return build_markdown(items, Strategy.FULL, mask_patterns=mask_patterns, cache=cache)


# ======================================================================================
# MD Only
# ======================================================================================
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def write_md_only(output_dir: str | Path, namespace: str, markdown: str) -> Path:
    """Write ``markdown`` to ``output_dir/<namespace>_<NNN>.md`` with the next free number.

    The file appears complete or not at all (written aside, then linked into place),
    and two writers never get the same number.
    """
    folder = Path(output_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FileSetError(f"cannot create the output dir {folder}: {exc.strerror or exc}") from exc
    stem = _SAFE.sub("_", namespace).strip("._") or "context"
    taken = re.compile(rf"{re.escape(stem)}_(\d+)\.md")
    numbers = [int(m.group(1)) for p in folder.iterdir() if (m := taken.fullmatch(p.name))]
    number = max(numbers, default=0) + 1
    fd, temp = tempfile.mkstemp(prefix=f".{stem}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(markdown.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        while True:
            target = folder / f"{stem}_{number:03d}.md"
            try:
                os.link(temp, target)  # fails when the name is taken: never overwrites
                return target
            except FileExistsError:
                number += 1
            except OSError:  # no hard links on this file system: claim the name, then write
                return _write_exclusive(folder, stem, number, markdown)
    finally:
        os.unlink(temp)


def _write_exclusive(folder: Path, stem: str, number: int, markdown: str) -> Path:
    while True:
        target = folder / f"{stem}_{number:03d}.md"
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            number += 1
            continue
        with os.fdopen(fd, "wb") as handle:
            handle.write(markdown.encode("utf-8"))
        return target
