"""ContextService: the controller's side of aggregation, views, presets and undo.

The controller owns one service (``ctrl.context``). Its methods run on the main
thread except :meth:`ContextService.compile`, which does the file I/O and parsing
and is called from request threads and background jobs. The main thread only takes
a :class:`~manual_slop.context.aggregate.ContextRequest` snapshot (a few list
copies), so a large project never stalls a frame:

    main thread                      request thread / job               main thread (next frame)
    ───────────                      ────────────────────               ────────────────────────
    request() snapshot  ──────────▶  compile(): read, parse (AST        context_compiled task:
                                     cache), render, budget  ────────▶  context_files, tokens,
                                                                        preview, MD Only path

Every edit of discussions or of the file set is recorded by one
:class:`~manual_slop.context.undo.EditRecorder`, so undo/redo covers both.
"""

from __future__ import annotations

import copy
import itertools
import logging
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

# the module itself, not through the package: the package's face imports this module
import manual_slop.context.presets as preset_ops
from manual_slop.context.aggregate import (
    CompiledContext,
    ContextRequest,
    ReadFiles,
    Strategy,
    compile_context,
    compile_masks,
    read_files,
    write_md_only,
)
from manual_slop.context.discussion_service import DiscussionHost, DiscussionService
from manual_slop.context.discussions import format_history
from manual_slop.context.errors import ContextError, ViewError
from manual_slop.context.file_cache import FileCache
from manual_slop.context.fit import fit_context, read_limit
from manual_slop.context.images import ImageCache, Thumbnail, prepare_images
from manual_slop.context.items import ViewSpec, parse_views
from manual_slop.context.jobs import run_job
from manual_slop.context.subagent import summarize_file
from manual_slop.context.undo import EditRecorder
from manual_slop.context.views import Summarizer
from manual_slop.heap import release_memory
from manual_slop.schema import Problem

if TYPE_CHECKING:
    from manual_slop.ai.images import ImageSet
    from manual_slop.ai.windows import RequestBudget
    from manual_slop.config import AppPaths
    from manual_slop.state import AppState
    from manual_slop.tools.security import PathPolicy

__all__ = ["FILE_SET_ATTRS", "ContextHost", "ContextService"]

log = logging.getLogger(__name__)

# the state attributes that make up "the context" for undo and presets
FILE_SET_ATTRS = ("project_files", "files_exclude", "screenshots", "file_views")


def _copy_view(view: Mapping[str, Any]) -> dict[str, Any]:
    """A view table's own copy ({mode, slices, annotation}); much cheaper than deepcopy."""
    out = dict(view)
    if isinstance(out.get("slices"), list):
        out["slices"] = [list(s) if isinstance(s, list | tuple) else s for s in out["slices"]]
    return out


class ContextHost(DiscussionHost, Protocol):
    """What the context service needs from the app (the controller), its discussions' needs included."""

    @property
    def paths(self) -> AppPaths: ...

    def path_policy(self, base_dir: Path) -> PathPolicy: ...


class ContextService:
    """Aggregation, per-file views, presets, undo/redo and the discussion operations."""

    def __init__(self, ctrl: ContextHost) -> None:
        self._ctrl = ctrl
        self.cache = FileCache()
        self.image_cache = ImageCache()  # screenshots decoded once for the preview and the send
        self.recorder = EditRecorder(ctrl.state)
        self.discussions = DiscussionService(ctrl, self)
        self._generations = itertools.count(1)
        self._generation_lock = threading.Lock()
        self._applied_generation = 0

    @property
    def state(self) -> AppState:
        return self._ctrl.state

    # =====================================================================================
    # loading
    # =====================================================================================
    def load(self) -> list[Problem]:
        """Check what was loaded from the project and history files; returns what was repaired."""
        history = self._ctrl.paths.history_file.name
        project = self._ctrl.paths.project_file.name
        problems = [Problem(history, "discussions", p) for p in self.discussions.normalize()]
        _, view_problems = parse_views(self.state.file_views)
        _, mask_problems = compile_masks(self.state.mask_patterns)
        problems += [Problem(project, "", p) for p in view_problems]
        problems += [Problem(project, "context.mask_patterns", p) for p in mask_problems]
        for name in self.state.context_presets:
            try:
                preset_ops.get_preset(self.state.context_presets, name)
            except ContextError as exc:
                problems.append(Problem(project, "context.presets", str(exc)))
        return problems

    def project_reloaded(self) -> None:
        """The project and history were re-read: old undo steps no longer apply."""
        self.recorder.history.clear()
        for problem in self.load():
            self._ctrl.notify("warning", str(problem))

    # =====================================================================================
    # undo / redo
    # =====================================================================================
    @contextmanager
    def edit(self, label: str, discussions: Iterable[str] = (), attrs: Iterable[str] = ()) -> Iterator[None]:
        """An undoable edit of the named discussions / state attributes (main thread)."""
        before = self.recorder.history.recorded
        with self.recorder.edit(label, discussions, attrs):
            yield
        if self.recorder.history.recorded != before:
            self._ctrl.publish("context_edit", {"label": label, "op": "edit"})

    def undo(self) -> str:
        label = self.recorder.undo()
        self._after_restore()
        self._ctrl.publish("context_edit", {"label": label, "op": "undo"})
        return label

    def redo(self) -> str:
        label = self.recorder.redo()
        self._after_restore()
        self._ctrl.publish("context_edit", {"label": label, "op": "redo"})
        return label

    def _after_restore(self) -> None:
        self.discussions.ensure_active()

    def undo_state(self) -> dict[str, list[str]]:
        return {"undo": self.recorder.history.undo_labels(), "redo": self.recorder.history.redo_labels()}

    # =====================================================================================
    # aggregation
    # =====================================================================================
    def request(self) -> ContextRequest:
        """Snapshot of everything aggregation needs (main thread; cheap)."""
        s = self.state
        return ContextRequest(
            base_dir=str(self._ctrl.base_dir()),
            paths=tuple(s.project_files),
            exclude=tuple(s.files_exclude),
            screenshots=tuple(s.screenshots),
            views={path: _copy_view(view) for path, view in s.file_views.items()},
            strategy=s.context_strategy,
            token_budget=s.context_token_budget,
            full_threshold=s.context_full_threshold,
            mask_patterns=tuple(s.mask_patterns),
            system_prompt=s.system_prompt,
            subagent_summaries=s.subagent_summaries,
            policy=self._ctrl.path_policy(self._ctrl.base_dir()),
            read_limit=read_limit(s.context_token_budget),  # a file no view of which fits: not read
            image_max_edge=s.image_max_edge,
        )

    def compile(
        self,
        request: ContextRequest,
        purpose: str = "send",
        settings: Mapping[str, Any] | None = None,
        extra: Mapping[str, Any] | None = None,
        budget: RequestBudget | None = None,
    ) -> CompiledContext:
        """Aggregate now on the calling thread (never the main thread for real projects) and
        post the outcome for the view; with a ``budget``, fitted to the answering model's
        window (:func:`~manual_slop.context.fit.fit_context`). Raises ContextError when the
        file set is unusable, ContextTooLarge when the request cannot fit."""
        with self._generation_lock:
            generation = next(self._generations)
        task: dict[str, Any] = {"action": "context_compiled", "purpose": purpose, "generation": generation}
        task.update(extra or {})
        summarizer = self._summarizer(settings)
        read: ReadFiles | None = None  # read once: a fit's later rounds only render the files again

        def compile_once(attempt: ContextRequest) -> CompiledContext:
            nonlocal read
            if read is None or read.read_limit != attempt.read_limit:
                read = read_files(attempt)
            compiled = compile_context(attempt, self.cache, summarizer, read)
            # A known secret inside an ordinary file (a key pasted into settings.py) never leaves.
            compiled.markdown = self._ctrl.redactor.redact(compiled.markdown)
            return compiled

        try:
            if budget is None:
                compiled = compile_once(request)
            else:
                compiled, report = fit_context(request, budget, compile_once)
                compiled.fit = report
        except ContextError as exc:
            self._ctrl.post_gui_task({**task, "error": str(exc)})
            raise
        finally:
            release_memory()
        provider = budget.provider if budget is not None else str((settings or {}).get("provider") or "")
        task["thumbnails"] = self._count_images(request, compiled, provider)
        task.update(compiled.summary(), markdown=compiled.markdown)
        if compiled.fit is not None and (compiled.fit.gave_way or compiled.fit.dropped):
            task["fit_headline"] = compiled.fit.headline()
        self._ctrl.post_gui_task(task)
        return compiled

    def images(self, request: ContextRequest) -> ImageSet:
        """The screenshots of ``request`` read, checked and downscaled (blocking: off the main thread)."""
        return prepare_images(request, self.image_cache)

    def _count_images(
        self, request: ContextRequest, compiled: CompiledContext, provider: str
    ) -> list[Thumbnail]:
        """Each screenshot's tokens on ``provider`` (its vendor's per-image estimate), in the total;
        returns the screenshots' thumbnails for the GUI."""
        if not request.screenshots:
            return []
        from manual_slop.ai.errors import ConfigurationError
        from manual_slop.ai.images import admit
        from manual_slop.ai.providers import provider_class

        images = self.images(request)
        thumbnails: list[Thumbnail] = []
        for image in images.attached:
            try:
                thumbnails.append(self.image_cache.thumbnail(image))
            except (OSError, ValueError) as exc:  # decoded once already: a view problem only
                log.warning("no thumbnail for %s: %s", image.name, exc)
        try:
            support = provider_class(provider).image_support if provider else None
        except ConfigurationError:
            support = None
        if support is None:
            return thumbnails
        sent = admit(images, support, provider).sent
        tokens = {image.name: support.tokens(image.width, image.height) for image in sent}
        for item in compiled.screenshots:
            item.tokens = tokens.get(item.name, 0)
        compiled.image_tokens = sum(tokens.values())
        return thumbnails

    def _summarizer(self, settings: Mapping[str, Any] | None) -> Summarizer | None:
        backend = self._ctrl.backend
        if backend is None:
            return None

        def summarize(path: str, content: str, is_code: bool, outline: str) -> str:
            try:
                return summarize_file(backend, path, content, is_code, outline, settings)
            except ContextError as exc:
                self._ctrl.post_gui_task(
                    {"action": "notify", "level": "warning", "message": f"summary of {path}: {exc}"}
                )
                raise

        return summarize

    def refresh_preview(self) -> None:
        """Compile the context off the main thread and show it (``context_preview``)."""
        self._start_compile("preview")

    def md_only(self) -> None:
        """Compile and write ``output_dir/<namespace>_<NNN>.md`` off the main thread."""
        self._start_compile("md_only")

    def _start_compile(self, purpose: str) -> None:
        request = self.request()
        settings = self._ctrl.ai_settings()
        output_dir = self._ctrl.base_dir() / self.state.output_dir
        namespace = self.state.project_name or self._ctrl.paths.project_file.stem
        discussion = self.state.active_discussion
        history = format_history(self.state.discussion_entries())

        def work() -> dict[str, Any]:
            try:
                compiled = self.compile(request, purpose, settings)
            except ContextError:
                return {}  # compile() already posted the error for the view
            if purpose != "md_only":
                return {}
            text = compiled.markdown
            if history:
                text += f"\n## Discussion ({discussion})\n\n{history}\n"
            path = write_md_only(output_dir, namespace, text)
            return {"md_path": str(path)}

        self.state.context_status = "compiling..."
        if not run_job(self._ctrl, "md_only_written" if purpose == "md_only" else None, work):
            raise ContextError("the app is shutting down")

    def apply_compiled(self, task: Mapping[str, Any]) -> None:
        """Task ``context_compiled``: show the outcome of a compile (main thread)."""
        generation = int(task.get("generation", 0))
        error = task.get("error")
        if generation < self._applied_generation:
            return  # a newer compile has already been shown
        self._applied_generation = generation
        s = self.state
        if error:
            s.context_status = "error"
            self._ctrl.notify("error", f"context: {error}")
            return
        s.context_status = "done"
        s.context_files = [dict(f) for f in [*task.get("files", []), *task.get("screenshots", [])]]
        s.context_tokens = int(task.get("tokens", 0))
        s.image_thumbnails = {t.name: t for t in task.get("thumbnails") or ()}
        if task.get("purpose") == "send" and task.get("request_id"):
            self.discussions.note_images(str(task["request_id"]), list(s.image_thumbnails))
        s.context_preview = str(task.get("markdown", ""))
        if task.get("purpose") == "send":  # a preview knows no model: the last send's fit stays
            s.context_fit = dict(task.get("fit") or {})
        for problem in task.get("problems", []):
            self._ctrl.notify("warning", f"context: {problem}")
        if task.get("fit_headline"):
            self._ctrl.notify("warning", str(task["fit_headline"]))
        self._ctrl.publish(
            "context_compiled",
            {k: task.get(k) for k in ("purpose", "tokens", "files_tokens", "omitted", "elapsed_ms")},
        )

    def apply_md_only(self, task: Mapping[str, Any]) -> None:
        """Task ``md_only_written``: record where MD Only wrote (main thread)."""
        if task.get("error"):
            self.state.context_status = "error"
            self._ctrl.notify("error", f"MD Only: {task['error']}")
            return
        path = task.get("md_path")
        if path:
            self.state.last_md_path = str(path)
            self._ctrl.notify("info", f"MD Only: wrote {path}")
            self._ctrl.publish("md_written", {"path": str(path)})

    # =====================================================================================
    # context edits (undoable)
    # =====================================================================================
    def set_file_list(self, attr: str, value: list[str]) -> None:
        """Set ``project_files``, ``files_exclude`` or ``screenshots`` as an undoable edit."""
        if attr not in FILE_SET_ATTRS[:3]:
            raise ValueError(f"{attr} is not a file list")
        with self.edit(f"set {attr}", attrs=[attr]):
            setattr(self.state, attr, list(value))

    def set_view(self, path: str, view: Mapping[str, Any]) -> ViewSpec:
        """Set one file's view (``full`` with no slices or annotation removes the setting)."""
        name = path.strip().replace("\\", "/")
        if not name:
            raise ViewError("the file path is empty")
        spec = ViewSpec.from_dict(view)
        with self.edit(f"view {name}: {spec.mode.value}", attrs=["file_views"]):
            if spec.is_default:
                self.state.file_views.pop(name, None)
            else:
                self.state.file_views[name] = spec.to_dict()
        return spec

    def set_strategy(self, strategy: str) -> None:
        self.state.context_strategy = Strategy(strategy).value

    def set_mask_patterns(self, patterns: list[str]) -> None:
        _, problems = compile_masks(patterns)
        if problems:
            raise ViewError("; ".join(problems))
        with self.edit("set mask patterns", attrs=["mask_patterns"]):
            self.state.mask_patterns = list(patterns)

    def save_preset(self, name: str) -> str:
        s = self.state
        with self.edit(f"save preset {name}", attrs=["context_presets"]):
            return preset_ops.save_preset(
                s.context_presets, name, s.project_files, s.files_exclude, s.file_views
            )

    def load_preset(self, name: str) -> None:
        preset = preset_ops.get_preset(self.state.context_presets, name)
        with self.edit(f"load preset {name}", attrs=(*FILE_SET_ATTRS[:2], "file_views")):
            self.state.project_files = list(preset.files)
            self.state.files_exclude = list(preset.exclude)
            self.state.file_views = copy.deepcopy(preset.views)

    def delete_preset(self, name: str) -> None:
        with self.edit(f"delete preset {name}", attrs=["context_presets"]):
            preset_ops.delete_preset(self.state.context_presets, name)

    def output_dir(self) -> Path:
        return self._ctrl.base_dir() / self.state.output_dir
