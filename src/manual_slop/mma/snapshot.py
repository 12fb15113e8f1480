"""A project's files as one git bundle: how a ticket's starting state travels to a machine that
shares no file system with the app (the Ray backend), and how its changes come back as a patch.

::

    snapshot = Snapshot.of(tree)            # the scratch tree's files now -> a bundle (bytes)
    folder = snapshot.unpack(workdir)       # elsewhere: a fresh repository with those files
    ... run the ticket in folder ...
    patch = snapshot.diff(folder)           # git diff --binary from the snapshot, new files included

The bundle holds one commit without parents whose tree is the files as they are (uncommitted
changes and untracked, not ignored files included), so it is self-contained: no history, no
prerequisite objects. Making it writes nothing to the project: the commit goes to the scratch
tree's private object store, under a per-worktree ref that is deleted right after.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from manual_slop.mma.worktree import ScratchTree, ScratchTreeError, git_environment, run_git

__all__ = ["Snapshot", "SnapshotError"]

REF = "refs/worktree/slop-snapshot"
_IDENTITY = {
    "GIT_AUTHOR_NAME": "Manual Slop",
    "GIT_AUTHOR_EMAIL": "snapshot@manual-slop.invalid",
    "GIT_COMMITTER_NAME": "Manual Slop",
    "GIT_COMMITTER_EMAIL": "snapshot@manual-slop.invalid",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",  # fixed: the same files give the same commit
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
}
_DIFF = ("--binary", "--no-renames", "--no-ext-diff", "--no-textconv", "--no-color", "--relative")


class SnapshotError(ScratchTreeError):
    """A snapshot cannot be made, unpacked or diffed (the message names the git step)."""


def _git(cwd: Path, args: list[str], env: dict[str, str]) -> bytes:
    return run_git(cwd, args, env, error=SnapshotError)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The bundle, its commit, and where the project folder sits inside it (``""``: at the top)."""

    bundle: bytes
    commit: str
    subdir: str = ""

    @classmethod
    def of(cls, tree: ScratchTree) -> Snapshot:
        """The files of an open scratch tree as they are now."""
        with tempfile.TemporaryDirectory(prefix="slop-bundle-") as tmp:
            home = Path(tmp) / "home"
            home.mkdir()
            env = {
                **git_environment(home),
                **tree.env(),
                **_IDENTITY,
                "GIT_INDEX_FILE": str(Path(tmp) / "idx"),
            }
            top = tree.top
            _git(top, ["add", "-A"], env)
            tree_id = _git(top, ["write-tree"], env).decode().strip()
            commit = _git(top, ["commit-tree", tree_id, "-m", "ticket snapshot"], env).decode().strip()
            _git(top, ["update-ref", REF, commit], env)
            try:
                out = Path(tmp) / "snapshot.bundle"
                _git(top, ["bundle", "create", "--quiet", str(out), REF], env)
                data = out.read_bytes()
            finally:
                _git(top, ["update-ref", "-d", REF], env)
        subdir = tree.path.relative_to(top).as_posix()
        return cls(data, commit, "" if subdir == "." else subdir)

    def unpack(self, workdir: Path) -> Path:
        """A new repository in ``workdir/tree`` holding the snapshot's files; the project folder
        inside it (run the ticket there)."""
        workdir = Path(workdir)
        top, home = workdir / "tree", workdir / "home"
        home.mkdir(parents=True, exist_ok=True)
        env = git_environment(home)
        bundle = workdir / "snapshot.bundle"
        bundle.write_bytes(self.bundle)
        top.mkdir()
        _git(top, ["-c", "init.defaultBranch=ticket", "init", "--quiet"], env)
        _git(top, ["fetch", "--quiet", str(bundle), REF], env)
        _git(top, ["checkout", "--quiet", "--detach", self.commit], env)
        bundle.unlink()
        return top / self.subdir if self.subdir else top

    def diff(self, folder: Path) -> str:
        """What changed in an unpacked ``folder`` since the snapshot: a binary-safe unified diff
        with ``a/``/``b/`` paths relative to the project folder ("" when nothing changed)."""
        folder = Path(folder)
        with tempfile.TemporaryDirectory(prefix="slop-diff-") as tmp:
            env = {**git_environment(Path(tmp)), "GIT_INDEX_FILE": str(Path(tmp) / "idx")}
            top = Path(_git(folder, ["rev-parse", "--show-toplevel"], env).decode().strip())
            _git(top, ["add", "-A"], env)
            out = _git(folder, ["diff", "--cached", *_DIFF, self.commit], env)
        return out.decode("utf-8", "replace")
