"""Three-way merge of a ticket's patch into the project: all files or none.

A ticket attempt edits a scratch tree made from the project as it was when the attempt
started (the *base*). Meanwhile other tickets may have changed the project. For every file the
(approved, perhaps edited) patch changes, :func:`plan_merge` compares three versions:

- ``base``   — the file as the tree started (:class:`~manual_slop.mma.worktree.FileChange`),
- ``theirs`` — the base with the patch applied (the ticket's result),
- ``ours``   — the project's file now.

``ours == base`` takes theirs; ``ours == theirs`` needs nothing; otherwise text files are
merged by ``git merge-file`` (no repository needed) and anything it cannot merge — overlapping
edits, a binary or symlink changed on both sides, a file added differently on both sides or
deleted on one and changed on the other — is a :class:`Conflict`. One conflict and
:class:`MergeConflict` is raised with every conflicting hunk and nothing is written;
otherwise :func:`merge_into` writes each file atomically. Every path passes the project's
path check (the file tools' write rules) before anything is read or written.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from manual_slop.atomic_io import atomic_write_bytes
from manual_slop.mma.errors import MMAError, PatchError
from manual_slop.mma.tier4 import PathCheck, confine_to
from manual_slop.mma.worktree import GIT_TIMEOUT_S, FileChange, git_environment

__all__ = ["Conflict", "MergeConflict", "MergePlan", "merge_into", "plan_merge"]

LABELS = ("project", "base", "ticket")  # how the conflict markers name the three sides
HUNK_CONTEXT = 2  # lines shown around a conflict region
REPORT_LIMIT = 6_000  # characters of hunks shown in a recovery dialog
_REGULAR = ("100644", "100755")


@dataclass(frozen=True, slots=True)
class Conflict:
    """A file the merge cannot take: why, and the conflicting hunks (with conflict markers)."""

    path: str
    why: str
    hunks: str = ""


class MergeConflict(MMAError):
    """The patch conflicts with the project; nothing was written (``conflicts`` says where)."""

    def __init__(self, conflicts: Sequence[Conflict]) -> None:
        self.conflicts = list(conflicts)
        names = ", ".join(c.path for c in self.conflicts)
        super().__init__(f"the ticket's patch conflicts with the project in {names}")

    def report(self) -> str:
        """The failure text a recovery dialog shows: every file, why, and its hunks."""
        parts = [str(self) + "; nothing was written.", ""]
        for conflict in self.conflicts:
            parts.append(f"{conflict.path}: {conflict.why}")
            if conflict.hunks:
                parts.append(conflict.hunks.rstrip("\n"))
            parts.append("")
        text = "\n".join(parts).rstrip("\n")
        return text if len(text) <= REPORT_LIMIT else text[:REPORT_LIMIT] + "\n[... more conflicts]"


@dataclass(slots=True)
class MergePlan:
    """What :func:`merge_into` writes: path → new bytes (None: delete), and the permissions of
    new files and of files whose executable bit the ticket changed."""

    writes: dict[Path, bytes | None] = field(default_factory=dict)
    modes: dict[Path, int] = field(default_factory=dict)

    @property
    def paths(self) -> list[Path]:
        return list(self.writes)


def plan_merge(project: Path, changes: Sequence[FileChange], check: PathCheck | None = None) -> MergePlan:
    """The merged files (nothing written); PatchError for a path the check refuses, MergeConflict
    with every conflicting file."""
    check = check or confine_to(project)
    plan, conflicts = MergePlan(), []
    for change in changes:
        target = _target(project, change.path, check)
        ours = _read(target)
        merged = _merge_one(change, ours)
        if isinstance(merged, Conflict):
            conflicts.append(merged)
        elif merged is not _SAME:
            plan.writes[target] = merged  # type: ignore[assignment]
            if merged is not None and (ours is None or change.mode != change.base_mode):
                plan.modes[target] = 0o755 if change.mode == "100755" else 0o644
    if conflicts:
        raise MergeConflict(conflicts)
    return plan


def merge_into(project: Path, changes: Sequence[FileChange], check: PathCheck | None = None) -> list[Path]:
    """Merge ``changes`` into ``project`` (all files or, on a conflict or refusal, none); returns
    the paths written or deleted."""
    plan = plan_merge(project, changes, check)
    for target, data in plan.writes.items():
        if data is None:
            target.unlink(missing_ok=True)
            continue
        atomic_write_bytes(target, data, mode=plan.modes.get(target))
    return plan.paths


_SAME = object()  # the project already holds the result: nothing to write


def _merge_one(change: FileChange, ours: bytes | None) -> bytes | Conflict | object | None:
    base, theirs, path = change.base, change.theirs, change.path
    if ours == theirs:
        return _SAME
    if ours == base:
        if not _regular(change.mode) and theirs is not None:
            return Conflict(path, f"the ticket made it a {_kind(change.mode)}, which is not merged")
        return theirs
    if base is None:
        return Conflict(path, "the ticket created it, and the project has a different file there now")
    if theirs is None:
        return Conflict(path, "the ticket deleted it, and the project changed it meanwhile")
    if ours is None:
        return Conflict(path, "the ticket changed it, and the project deleted it meanwhile")
    if not (_regular(change.mode) and _regular(change.base_mode)):
        return Conflict(path, f"a {_kind(change.mode)} changed on both sides")
    if _binary(base) or _binary(theirs) or _binary(ours):
        return Conflict(path, "a binary file changed on both sides")
    merged, clean = _merge_file(ours, base, theirs)
    if clean:
        return merged
    return Conflict(path, "both changed the same lines", _hunks(merged.decode("utf-8", "replace")))


def _merge_file(ours: bytes, base: bytes, theirs: bytes) -> tuple[bytes, bool]:
    """``git merge-file -p`` of the three versions: (the result with conflict markers, clean?)."""
    with tempfile.TemporaryDirectory(prefix="slop-merge-") as tmp:
        folder = Path(tmp)
        names = []
        for label, data in zip(LABELS, (ours, base, theirs), strict=True):
            (folder / label).write_bytes(data)
            names.append(label)
        (folder / "home").mkdir()
        labels = [arg for label in LABELS for arg in ("-L", label)]
        try:
            proc = subprocess.run(
                ["git", "merge-file", "-p", *labels, *names],
                cwd=folder,
                env=git_environment(folder / "home"),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=GIT_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise PatchError(f"git merge-file failed: {exc}") from exc
    if proc.returncode < 0 or proc.returncode > 127:
        detail = proc.stderr.decode("utf-8", "replace").strip() or f"exit code {proc.returncode}"
        raise PatchError(f"git merge-file failed: {detail}")
    return proc.stdout, proc.returncode == 0


def _hunks(text: str) -> str:
    """The conflict regions of a merged file, each with a little context and its line number."""
    lines = text.split("\n")
    out: list[str] = []
    start: int | None = None
    for number, line in enumerate(lines):
        if line.startswith("<<<<<<< ") and start is None:
            start = number
        elif line.startswith(">>>>>>> ") and start is not None:
            first, last = max(0, start - HUNK_CONTEXT), min(len(lines), number + 1 + HUNK_CONTEXT)
            out.append(f"@@ line {start + 1} @@")
            out.extend(lines[first:last])
            start = None
    return "\n".join(out)


def _target(project: Path, name: str, check: PathCheck) -> Path:
    pure = PurePosixPath(name)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts:
        raise PatchError(f"{name}: patch paths must be relative to the project folder, without '..'")
    path = project / Path(*pure.parts)
    refusal = check(path)
    if refusal:
        raise PatchError(f"{name}: {refusal}")
    return path


def _read(path: Path) -> bytes | None:
    if os.path.lexists(path) and path.is_symlink():
        return os.readlink(path).encode("utf-8", "surrogateescape")
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise PatchError(f"{path}: cannot read ({exc.strerror or exc})") from exc


def _regular(mode: str) -> bool:
    return mode in _REGULAR


def _kind(mode: str) -> str:
    return {"120000": "symbolic link", "160000": "submodule"}.get(mode, "file")


def _binary(data: bytes) -> bool:
    return b"\0" in data[:8000]
