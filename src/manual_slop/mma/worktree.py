"""Scratch trees: a disposable copy of a project that a tool may edit freely, and the diff it made.

Tools that edit files on their own (Aider, say) never run in the user's project. They run in a
:class:`ScratchTree`, and what they changed comes back as one unified diff that the user
approves before :func:`manual_slop.mma.tier4.apply_patch` writes it to the project::

    with ScratchTree(project) as tree:
        run_the_tool(cwd=tree.path, env=tree.env())
        patch = tree.diff()            # "" when nothing changed

Two ways to make one:

- **worktree** — the project is inside a git work tree with at least one commit: a detached
  ``git worktree add`` of HEAD in a temporary folder, plus the project's uncommitted changes to
  tracked files (``git diff --binary HEAD`` applied with ``git apply``) and copies of its
  untracked, not ignored files. Objects the scratch side writes go to a private object
  directory that borrows the project's objects as an alternate, so the project's ``.git`` only
  ever holds the worktree's own bookkeeping, and only while the tree exists.
- **copy** — anything else: the project's files (without ``.git``, ``.venv``, ``node_modules``,
  caches and ``.tools``) copied into a temporary folder that gets its own ``git init``.

Either way the starting state is staged in the scratch index and written as the *baseline*
tree; :meth:`ScratchTree.diff` compares the files as they are now (new files included) with
that baseline: ``git diff --binary`` with ``a/`` and ``b/`` paths relative to the project
folder. Leaving the ``with`` block removes the worktree (``git worktree remove --force`` and
``prune``) and the temporary folder.

For the three-way merge of a (possibly edited) patch, :meth:`ScratchTree.versions` applies it
to the baseline in a throw-away index and returns every file it changes as a :class:`FileChange`
(its bytes at the baseline and after the patch). A ticket attempt makes its tree only when its
send first needs a folder (:class:`Workspace`), and a tree kept for inspection after a failure
(:meth:`ScratchTree.release`) is removed later with :func:`discard_kept`.

Git runs with a clean environment: no system or global configuration, no hooks, no prompts,
no opportunistic index writes in the project.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from manual_slop.mma.errors import MMAError

PathCheck = Callable[[Path], "str | None"]  # a refusal reason, or None (as mma.tier4.PathCheck)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "SCRATCH_PREFIX",
    "SKIP_DIRS",
    "FileChange",
    "ScratchTree",
    "ScratchTreeError",
    "Workspace",
    "discard_kept",
    "git_environment",
    "run_git",
]

# folders never copied into a scratch tree (tools, caches, environments, history)
SKIP_DIRS = frozenset({".git", ".venv", "node_modules", "__pycache__", ".slop_cache", ".tools"})
DEFAULT_MAX_BYTES = 256 * 1024 * 1024  # files copied (copy mode, or untracked files in worktree mode)
GIT_TIMEOUT_S = 120.0
SCRATCH_PREFIX = "slop-scratch-"  # the temporary folders' names start so (discard_kept checks it)
_NO_BLOB = "0" * 40
# per-command settings that beat the project's own config: no hooks, no fsmonitor daemon, no gc
_GIT_OPTIONS = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.quotePath=false",
    "-c",
    "gc.auto=0",
    "-c",
    "advice.detachedHead=false",
)
_DIFF_OPTIONS = (
    "--binary",
    "--no-renames",
    "--no-ext-diff",
    "--no-textconv",
    "--no-color",
    "--src-prefix=a/",
    "--dst-prefix=b/",
)


class ScratchTreeError(MMAError):
    """A scratch tree cannot be made, diffed or removed (the message says which git step failed)."""


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file a patch changes: project-relative ``path``, its bytes at the tree's baseline and
    after the patch (None: absent), and git's mode after it (``100644``, ``100755``, ``120000`` …)."""

    path: str
    base: bytes | None
    theirs: bytes | None
    mode: str = "100644"
    base_mode: str = "100644"


def git_environment(home: Path) -> dict[str, str]:
    """The environment git runs with: no system/global config (``home`` is a private folder),
    never prompting, no optional locks; nothing else of the caller's environment but ``PATH``."""
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "LANG": "C",
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
    }


def run_git(
    cwd: Path,
    args: list[str],
    env: dict[str, str],
    *,
    stdin: bytes | None = None,
    error: type[ScratchTreeError] = ScratchTreeError,
) -> bytes:
    """``git`` with the scratch trees' safe options (no hooks, no fsmonitor, no gc) in ``cwd``;
    its stdout, or ``error`` naming the git step and what git said."""
    try:
        proc = subprocess.run(
            ["git", *_GIT_OPTIONS, *args],
            cwd=cwd,
            env=env,
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise error(f"git {args[0]} in {cwd} failed: {exc}") from exc
    if proc.returncode != 0:
        detail = proc.stderr.decode("utf-8", "replace").strip()[-800:] or f"exit code {proc.returncode}"
        raise error(f"git {args[0]} in {cwd} failed: {detail}")
    return proc.stdout


class ScratchTree:
    """A temporary, editable copy of ``project`` whose changes come back as a diff (see the module doc)."""

    def __init__(
        self, project: Path, *, max_bytes: int = DEFAULT_MAX_BYTES, refuse: PathCheck | None = None
    ) -> None:
        self.project = Path(project).resolve()
        self.max_bytes = max_bytes
        # files never copied in (a reason, or None): what the project's policy refuses to show a tool,
        # such as credentials or history beside the project file, must not become readable copies
        self.refuse = refuse
        self.mode = ""  # "worktree" or "copy" once open
        self._root: Path | None = None  # temporary folder: tree/, home/, objects/, index files
        self._repo: Path | None = None  # the project's git top level (worktree mode)
        self._alternates = ""  # the project's object store, which the scratch store borrows from
        self._rel = Path()  # the project folder relative to the scratch tree's top level
        self._baseline = ""  # tree id of the starting state
        self._copied = 0  # bytes copied so far

    # -- life --------------------------------------------------------------------------------
    def __enter__(self) -> ScratchTree:
        return self.open()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def open(self) -> ScratchTree:
        """Make the tree; ScratchTreeError (with nothing left behind) when it cannot be made."""
        if self._root is not None:
            raise ScratchTreeError("this scratch tree is already open")
        if not self.project.is_dir():
            raise ScratchTreeError(f"{self.project} is not a folder")
        self._root = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX))
        (self._root / "home").mkdir()
        try:
            repo = self._repository()
            if repo is not None:
                self._open_worktree(repo)
                if not self.path.is_dir():  # the project folder is ignored by its repository
                    self._remove_worktree()
                    repo = None
            if repo is None:
                self._open_copy()
            self._git(self.top, "add", "-A")
            self._baseline = self._git(self.top, "write-tree").strip()
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Remove the worktree and the temporary folder (safe to call twice)."""
        root = self._root
        if root is None:
            return
        try:
            self._remove_worktree()
        finally:
            self._root, self.mode = None, ""
            shutil.rmtree(root, ignore_errors=True)

    def release(self) -> Path:
        """Keep the tree on disk (for inspection) and forget it: the temporary folder, whose
        ``tree/`` holds the files; :func:`discard_kept` removes it later."""
        root = self._required_root()
        self._root, self._repo, self._alternates, self.mode = None, None, "", ""
        return root

    # -- what callers use ----------------------------------------------------------------------
    @property
    def top(self) -> Path:
        """The scratch tree's top level (its git work tree)."""
        return self._required_root() / "tree"

    @property
    def path(self) -> Path:
        """The project folder's counterpart inside the scratch tree (run tools here)."""
        return self.top / self._rel

    def env(self) -> dict[str, str]:
        """Git variables a process working in the tree needs (its objects go to the private store)."""
        root = self._required_root()
        if not self._alternates:
            return {}
        return {
            "GIT_OBJECT_DIRECTORY": str(root / "objects"),
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": self._alternates,
        }

    def diff(self) -> str:
        """A unified diff (``git diff --binary``, new files included) from the baseline to the
        files as they are now, paths ``a/…``/``b/…`` relative to the project folder; "" when
        nothing changed."""
        return self._diff_now("--relative", *_DIFF_OPTIONS)

    def versions(self, patch: str) -> list[FileChange]:
        """Every file ``patch`` (this tree's diff, perhaps edited by a human) changes, with its
        bytes at the baseline and after the patch applied to the baseline; ScratchTreeError when
        it does not apply there or touches a file outside the project folder."""
        root = self._required_root()
        index = root / "merge.index"
        index.unlink(missing_ok=True)
        extra = {"GIT_INDEX_FILE": str(index)}
        self._git(self.top, "read-tree", self._baseline, extra=extra)
        rel = self._rel.as_posix()
        directory = [f"--directory={rel}"] if rel not in ("", ".") else []
        self._git_bytes(
            self.top,
            ["apply", "--cached", "--whitespace=nowarn", *directory, "-"],
            stdin=patch.encode("utf-8", "surrogateescape"),
            extra=extra,
        )
        raw = self._git_bytes(
            self.top, ["diff-index", "--cached", "--raw", "-z", "--no-renames", self._baseline], extra=extra
        )
        fields = raw.split(b"\0")
        entries: list[tuple[str, str, str, str, str]] = []
        prefix = "" if not directory else rel + "/"
        for meta, name in zip(fields[0::2], fields[1::2], strict=False):
            if not meta:
                continue
            old_mode, new_mode, old_sha, new_sha, _status = meta.decode().lstrip(":").split(" ")
            path = name.decode("utf-8", "surrogateescape")
            if not path.startswith(prefix):
                raise ScratchTreeError(f"the patch changes {path}, which is outside the project folder")
            entries.append((path[len(prefix) :], old_mode, new_mode, old_sha, new_sha))
        blobs = self._blobs([sha for e in entries for sha in e[3:] if sha != _NO_BLOB])
        return [
            FileChange(
                path,
                blobs[old] if old != _NO_BLOB else None,
                blobs[new] if new != _NO_BLOB else None,
                new_mode if new != _NO_BLOB else old_mode,
                old_mode,
            )
            for path, old_mode, new_mode, old, new in entries
        ]

    def _blobs(self, shas: list[str]) -> dict[str, bytes]:
        """The contents of ``shas`` (one ``git cat-file --batch``)."""
        if not shas:
            return {}
        wanted = "".join(f"{sha}\n" for sha in shas).encode()
        out = self._git_bytes(self.top, ["cat-file", "--batch"], stdin=wanted)
        blobs: dict[str, bytes] = {}
        pos = 0
        while pos < len(out):
            end = out.index(b"\n", pos)
            sha, _kind, size = out[pos:end].decode().split(" ")
            blobs[sha] = out[end + 1 : end + 1 + int(size)]
            pos = end + 1 + int(size) + 1
        return blobs

    def changed_files(self) -> list[str]:
        """Project-relative paths that differ from the baseline (added, changed or deleted)."""
        out = self._diff_now("--relative", "--no-renames", "--name-only", "-z")
        return [name for name in out.split("\0") if name]

    # -- making it -----------------------------------------------------------------------------
    def _repository(self) -> Path | None:
        """The project's git top level, when it is in a work tree whose HEAD is a commit."""
        try:
            top = self._git(self.project, "rev-parse", "--show-toplevel").strip()
            self._git(self.project, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
        except ScratchTreeError:
            return None
        return Path(top).resolve() if top else None

    def _open_worktree(self, repo: Path) -> None:
        root = self._required_root()
        self._repo, self.mode = repo, "worktree"
        self._rel = self.project.relative_to(repo)
        for sub in ("objects/info", "objects/pack"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        common = Path(self._git(repo, "rev-parse", "--git-common-dir").strip())
        self._alternates = str((common if common.is_absolute() else repo / common).resolve() / "objects")
        self._git(repo, "worktree", "add", "--detach", "--quiet", str(self.top), "HEAD")
        changes = self._git_bytes(repo, ["diff", *_DIFF_OPTIONS, "--ignore-submodules", "HEAD"])
        if changes.strip():
            self._git_bytes(self.top, ["apply", "--whitespace=nowarn", "-"], stdin=changes)
        untracked = self._git(repo, "ls-files", "-z", "--others", "--exclude-standard")
        for name in untracked.split("\0"):
            if name and not SKIP_DIRS.intersection(Path(name).parts):
                self._copy(repo / name, self.top / name)

    def _open_copy(self) -> None:
        self.mode, self._rel, self._copied = "copy", Path(), 0
        self.top.mkdir()
        for folder, dirs, files in os.walk(self.project):
            source = Path(folder)
            target = self.top / source.relative_to(self.project)
            keep = []
            for name in sorted(dirs):
                if name in SKIP_DIRS:
                    continue
                if (source / name).is_symlink():  # copied as a link, never followed
                    self._copy(source / name, target / name)
                else:
                    keep.append(name)
            dirs[:] = keep
            for name in sorted(files):
                self._copy(source / name, target / name)
        self._git(self.top, "-c", "init.defaultBranch=scratch", "init", "--quiet")

    def _copy(self, source: Path, target: Path) -> None:
        if self.refuse is not None and self.refuse(source):
            return
        try:
            self._copied += source.lstat().st_size
            if self._copied > self.max_bytes:
                limit = self.max_bytes / 1_048_576
                raise ScratchTreeError(
                    f"{self.project} holds more than {limit:g} MB of files to copy into a scratch tree "
                    f"(without {', '.join(sorted(SKIP_DIRS))}); commit it to git, or ignore the large files"
                )
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target, follow_symlinks=False)
        except FileNotFoundError:
            # gone between listing and copying (an atomic write's temporary file, say): the
            # project is live, and a file that no longer exists is not part of the snapshot
            return
        except OSError as exc:
            raise ScratchTreeError(f"cannot copy {source} into the scratch tree: {exc}") from exc

    def _remove_worktree(self) -> None:
        repo, self._repo, self._alternates = self._repo, None, ""
        if repo is None:
            return
        try:
            self._git(repo, "worktree", "remove", "--force", str(self.top))
        except ScratchTreeError:
            shutil.rmtree(self.top, ignore_errors=True)  # prune below drops its bookkeeping
        with contextlib.suppress(ScratchTreeError):
            self._git(repo, "worktree", "prune")

    # -- diffing -------------------------------------------------------------------------------
    def _diff_now(self, *options: str) -> str:
        """``git diff --cached BASELINE`` of the current files, staged in a throw-away index (the
        tree's own index, which the tool may use, is left alone)."""
        root = self._required_root()
        index = root / "diff.index"
        own = Path(self._git(self.top, "rev-parse", "--git-path", "index").strip())
        own = own if own.is_absolute() else self.top / own
        if own.exists():
            # its stat cache saves re-hashing unchanged files; copy2 keeps the index's mtime, which
            # git's racy-entry check compares with (a fresh mtime made same-size edits look clean)
            shutil.copy2(own, index)
        else:
            index.unlink(missing_ok=True)
        extra = {"GIT_INDEX_FILE": str(index)}
        self._git(self.top, "add", "-A", extra=extra)
        out = self._git_bytes(self.path, ["diff", "--cached", *options, self._baseline], extra=extra)
        return out.decode("utf-8", "replace")

    # -- running git ---------------------------------------------------------------------------
    def _git(self, cwd: Path, *args: str, extra: dict[str, str] | None = None) -> str:
        return self._git_bytes(cwd, list(args), extra=extra).decode("utf-8", "replace")

    def _git_bytes(
        self,
        cwd: Path,
        args: list[str],
        *,
        stdin: bytes | None = None,
        extra: dict[str, str] | None = None,
    ) -> bytes:
        """Run git in ``cwd``; commands inside the scratch tree write to its private object store."""
        root = self._required_root()
        env = git_environment(root / "home")
        if cwd.is_relative_to(root):
            env.update(self.env())
        env.update(extra or {})
        return run_git(cwd, args, env, stdin=stdin)

    def _required_root(self) -> Path:
        if self._root is None:
            raise ScratchTreeError("the scratch tree is not open")
        return self._root


class Workspace:
    """One ticket attempt's scratch tree of ``project``, made on first use.

    Calling it (``workspace()``) opens the tree the first time and returns the folder the
    attempt's tools work in; an attempt whose send never needs a folder costs no tree. Thread-safe:
    the send thread opens it, the worker diffs, keeps or closes it.
    """

    def __init__(self, project: Path, refuse: PathCheck | None = None) -> None:
        self.project = Path(project)
        self.refuse = refuse  # files not copied into the tree (ScratchTree.refuse)
        self.tree: ScratchTree | None = None
        self._lock = threading.Lock()
        self._closed = False

    def __call__(self) -> Path:
        with self._lock:
            if self._closed:
                raise ScratchTreeError("this attempt is over; its scratch tree is gone")
            if self.tree is None:
                self.tree = ScratchTree(self.project, refuse=self.refuse).open()
            return self.tree.path

    @property
    def opened(self) -> bool:
        with self._lock:
            return self.tree is not None

    def diff(self) -> str:
        """The attempt's patch ("" when the tree was never made or nothing changed)."""
        with self._lock:
            return self.tree.diff() if self.tree is not None else ""

    def versions(self, patch: str) -> list[FileChange]:
        with self._lock:
            if self.tree is None:
                raise ScratchTreeError("the attempt made no scratch tree, so it has no patch to merge")
            return self.tree.versions(patch)

    def keep(self) -> Path | None:
        """Leave the tree on disk for inspection; its temporary folder (None when never made)."""
        with self._lock:
            self._closed = True
            tree, self.tree = self.tree, None
        return tree.release() if tree is not None else None

    def close(self) -> None:
        """Remove the tree (safe to call twice, and from another thread at shutdown)."""
        with self._lock:
            self._closed = True
            tree, self.tree = self.tree, None
        if tree is not None:
            tree.close()


def discard_kept(root: Path, project: Path) -> bool:
    """Remove a tree kept by :meth:`ScratchTree.release` (``root``: its temporary folder) and drop
    its worktree entry from ``project``'s repository; False (nothing removed) for a folder that
    is not a scratch tree — a path read back from a file is never trusted further than that."""
    root = Path(root)
    if not root.name.startswith(SCRATCH_PREFIX) or not (root / "home").is_dir():
        return False
    shutil.rmtree(root, ignore_errors=True)
    env = git_environment(Path(tempfile.gettempdir()))
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        subprocess.run(
            ["git", *_GIT_OPTIONS, "worktree", "prune"],
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )  # outside a repository this fails quietly: a copy has no entry to drop
    return not root.exists()
