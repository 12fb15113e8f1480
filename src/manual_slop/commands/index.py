"""``sloppy index [PATH ...]``: build or update the project index without the window.

What is indexed, every file checked by the app's path policy:

- no PATH: the project's tracked files (``files.paths`` minus ``files.exclude``), as the
  app's *Index* button does; a tracked file the policy refuses is skipped, never read;
- a file PATH: that file;
- a folder PATH: every file under it, tracked or not (the model's file tools may read them
  too), minus ``files.exclude``; noise folders (``.git``, virtualenvs, caches,
  ``.slop_cache``) and folders the policy refuses are not entered, refused files are skipped
  and never read.

A PATH the policy refuses (outside the project, a secret file, the logs folder) is a usage
error; relative PATHs start at the current folder. The index then holds exactly the chosen
files: ones indexed earlier and not chosen now are removed, as in the app.

Chunks pass the app's redactor before they are embedded or stored. Progress goes to stderr
every few seconds, then a summary. Ctrl+C (or SIGTERM) stops after the current batch; every
file is then fully indexed or as it was, and a second Ctrl+C exits at once.
"""

from __future__ import annotations

import argparse
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from manual_slop.commands.args import PROG, ArgParser, UsageError, log_to_stderr, say, two_stage_interrupts
from manual_slop.commands.project import ProjectContext, add_project_options, open_project
from manual_slop.memory.service import index_dir_for
from manual_slop.memory.store import CACHE_DIR_NAME
from manual_slop.tools.files import SKIPPED_DIRS
from manual_slop.tools.security import MAX_TRACKED_FILES, expand_tracked

if TYPE_CHECKING:
    from manual_slop.memory.index import IndexReport

__all__ = ["build_parser", "choose_files", "run"]

PROGRESS_EVERY_S = 2.0
SHOWN_SKIPPED = 10  # skipped files listed by name; the rest are counted
NOISE_DIRS = SKIPPED_DIRS | {CACHE_DIR_NAME}


def build_parser() -> argparse.ArgumentParser:
    parser = ArgParser(
        prog=f"{PROG} index",
        description="Build or update the project index (no window). Without PATH: the tracked files.",
        epilog="The index then holds exactly these files: others indexed earlier are removed.",
        allow_abbrev=False,
    )
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="a file, or a folder (every file under it); relative to the current folder",
    )
    add_project_options(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    project = open_project(args.config, args.project)
    redact = project.redactor.redact

    def tell(message: str) -> None:
        say(redact(message))

    for warning in project.warnings:
        tell(f"warning: {warning}")
    files, refused = choose_files(project, args.paths)
    log_to_stderr(redact)
    from manual_slop.memory.index import IndexProgress, IndexReport, ProjectIndex  # chromadb: only now

    cancel = threading.Event()
    last = time.monotonic()

    def progress(update: IndexProgress) -> None:
        nonlocal last
        if update.path and time.monotonic() - last >= PROGRESS_EVERY_S:
            last = time.monotonic()
            tell(f"indexing: {update.files_done}/{update.files_total} files, {update.chunks_added} chunks")

    def stop_after_batch(signum: int) -> None:
        cancel.set()
        os.write(2, f"{PROG}: stopping after the current batch (again to exit at once)\n".encode())

    with two_stage_interrupts(stop_after_batch, "exiting at once") as signals:
        tell(f"indexing {len(files)} files of {project.project_file.name} (Ctrl+C stops cleanly)")
        try:
            # the app's MemoryService opens it the same way: no refuse of its own, the redactor
            index = ProjectIndex(index_dir_for(project.project_file), redact=redact)
        except Exception as exc:  # no model, a broken cache: one line, not a traceback
            tell(f"error: the index cannot be opened: {type(exc).__name__}: {exc}")
            return 1
        try:
            if cancel.is_set():  # stopped while the model loaded: not even the removals
                report = IndexReport(cancelled=True)
            else:
                report = index.index(
                    files,
                    base_dir=project.base_dir,
                    progress=progress,
                    cancel=cancel,
                    refuse=project.policy.refusal,
                )
            status = index.status()
        except Exception as exc:
            tell(f"error: indexing failed: {type(exc).__name__}: {exc}")
            return 1
        finally:
            index.close()
    _summarize(tell, len(files), refused, report)
    tell(f"the index holds {status['files']} files, {status['chunks']} chunks ({status['path']})")
    if report.cancelled:
        tell(
            f"cancelled after {report.files_done} of {len(files)} files; each file is fully indexed "
            f"or as it was; run {PROG} index again to finish"
        )
        return 128 + (signals[0] if signals else signal.SIGINT)
    return 0  # an interrupt that came after the last batch stopped nothing


def _summarize(
    tell: Callable[[str], None], chosen: int, refused: dict[str, str], report: IndexReport
) -> None:
    """The run in one line, then the skipped files with the reason (the first few)."""
    skipped = {**refused, **report.skipped}
    tell(
        f"{chosen + len(refused)} files: {len(report.indexed)} changed ({report.chunks_added} chunks), "
        f"{len(report.unchanged)} unchanged, {len(skipped)} skipped, {len(report.removed)} removed "
        f"in {report.seconds:.1f} s"
    )
    for path, why in list(skipped.items())[:SHOWN_SKIPPED]:
        name = f"{Path(path).name}: "
        tell(f"skipped {path}: {why.removeprefix(name)}")  # a policy reason may start with the name
    if len(skipped) > SHOWN_SKIPPED:
        tell(f"... and {len(skipped) - SHOWN_SKIPPED} more skipped")


def choose_files(project: ProjectContext, paths: list[str]) -> tuple[list[str], dict[str, str]]:
    """The files to index (absolute, resolved) and the ones refused on the way (shown path ->
    why); raises UsageError for a PATH that cannot be indexed."""
    if not paths:
        files = expand_tracked(project.base_dir, project.tracked, project.exclude)
        if not files:
            tracked = ", ".join(project.tracked[:3]) + (", ..." if len(project.tracked) > 3 else "")
            what = f"its tracked files ({tracked}) match none" if tracked else "files.paths is empty"
            raise UsageError(
                f"{project.project_file}: nothing to index: {what}; name what to index: {PROG} index PATH"
            )
        return files, {}
    policy = project.policy
    excluded = set(expand_tracked(project.base_dir, project.exclude))
    chosen: list[str] = []
    refused: dict[str, str] = {}
    for raw in paths:
        if not raw.strip():
            raise UsageError("PATH: an empty path")
        absolute = os.path.join(os.getcwd(), os.path.expanduser(raw))  # an absolute raw stays as is
        allowed, resolved = policy.is_allowed(absolute)
        if not allowed:
            raise UsageError(f"{raw}: {resolved}")
        if os.path.isdir(resolved):
            chosen += _files_under(project, Path(resolved), excluded, refused)
        elif os.path.isfile(resolved):
            chosen.append(resolved)
        elif os.path.exists(resolved):
            raise UsageError(f"{raw}: not a regular file or folder")
        else:
            raise UsageError(f"{raw}: no such file or folder")
    return list(dict.fromkeys(chosen))[:MAX_TRACKED_FILES], refused


def _files_under(
    project: ProjectContext, folder: Path, excluded: set[str], refused: dict[str, str]
) -> list[str]:
    """Allowed files under ``folder``; refused ones go into ``refused`` (never read)."""
    policy = project.policy
    found: list[str] = []
    for root, dirs, names in os.walk(folder):  # symlinked folders are not followed
        dirs[:] = sorted(
            d for d in dirs if d not in NOISE_DIRS and policy.refusal(os.path.join(root, d)) is None
        )
        for name in sorted(names):
            path = os.path.join(root, name)
            allowed, resolved = policy.is_allowed(path)
            if not allowed:
                refused[_shown(path, project.base_dir)] = resolved
            elif resolved not in excluded and os.path.isfile(resolved):
                found.append(resolved)
        if len(found) >= MAX_TRACKED_FILES:
            break
    return found


def _shown(path: str, base: Path) -> str:
    relative = os.path.relpath(path, base)
    return path if relative.startswith("..") else Path(relative).as_posix()
