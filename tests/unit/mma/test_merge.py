"""Three-way merge of a scratch tree's patch into a project that moved on meanwhile (real git)."""

from __future__ import annotations

from pathlib import Path

import pytest

from manual_slop.mma.errors import PatchError
from manual_slop.mma.merge import MergeConflict, merge_into
from manual_slop.mma.worktree import ScratchTree, ScratchTreeError, Workspace, discard_kept
from tests.unit.mma.test_worktree import git, make_repo, scratch_tmp  # noqa: F401 (fixture)

pytestmark = pytest.mark.usefixtures("scratch_tmp")  # and no tree is left behind

LINES = "".join(f"line {i}\n" for i in range(1, 21))


def edited(text: str, number: int, new: str) -> str:
    return text.replace(f"line {number}\n", f"{new}\n")


@pytest.fixture(params=["worktree", "copy"])
def project(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    files: dict[str, str | bytes] = {"mod.txt": LINES, "gone.txt": "bye\n", "blob.bin": b"\0\1\2"}
    if request.param == "worktree":
        return make_repo(tmp_path / "repo", files)
    folder = tmp_path / "plain"
    folder.mkdir()
    for name, content in files.items():
        data = content.encode() if isinstance(content, str) else content
        (folder / name).write_bytes(data)
    return folder


def test_edits_in_different_places_both_land_and_adds_and_deletes_apply(project: Path) -> None:
    with ScratchTree(project) as tree:
        (tree.path / "mod.txt").write_text(edited(LINES, 2, "ticket"))
        (tree.path / "new.txt").write_text("fresh\n")
        (tree.path / "gone.txt").unlink()
        patch = tree.diff()
        (project / "mod.txt").write_text(edited(LINES, 18, "project"))  # another ticket landed
        written = merge_into(project, tree.versions(patch))
    assert sorted(p.name for p in written) == ["gone.txt", "mod.txt", "new.txt"]
    assert (project / "mod.txt").read_text() == edited(edited(LINES, 2, "ticket"), 18, "project")
    assert (project / "new.txt").read_text() == "fresh\n"
    assert (project / "new.txt").stat().st_mode & 0o777 == 0o644
    assert not (project / "gone.txt").exists()


def test_the_same_lines_conflict_and_nothing_is_written(project: Path) -> None:
    with ScratchTree(project) as tree:
        (tree.path / "mod.txt").write_text(edited(LINES, 10, "ticket ten"))
        (tree.path / "new.txt").write_text("fresh\n")
        (tree.path / "blob.bin").write_bytes(b"\0ticket")
        patch = tree.diff()
        (project / "mod.txt").write_text(edited(LINES, 10, "project ten"))
        (project / "blob.bin").write_bytes(b"\0project")
        before = {p.name: p.read_bytes() for p in project.iterdir() if p.is_file()}
        with pytest.raises(MergeConflict) as caught:
            merge_into(project, tree.versions(patch))
    assert {p.name: p.read_bytes() for p in project.iterdir() if p.is_file()} == before
    report = caught.value.report()
    assert "mod.txt: both changed the same lines" in report and "blob.bin: a binary file" in report
    assert "<<<<<<< project\nproject ten\n=======\nticket ten\n>>>>>>> ticket" in report
    assert "new.txt" not in report  # only the files that conflict are named


def test_an_edited_patch_is_what_merges_and_a_bad_one_is_refused(project: Path) -> None:
    with ScratchTree(project) as tree:
        (tree.path / "mod.txt").write_text(edited(LINES, 5, "model"))
        patch = tree.diff().replace("+model", "+human")
        merge_into(project, tree.versions(patch))
        with pytest.raises(ScratchTreeError, match="apply"):
            tree.versions(patch.replace("-line 5", "-line five"))
        (tree.path / "credentials.toml").write_text("key = 1\n")
        with pytest.raises(PatchError, match=r"credentials\.toml: .*protected"):
            merge_into(project, tree.versions(tree.diff()))
    assert (project / "mod.txt").read_text() == edited(LINES, 5, "human")
    assert not (project / "credentials.toml").exists()


def test_a_kept_tree_stays_until_discarded(project: Path) -> None:
    workspace = Workspace(project)
    assert workspace.diff() == "" and not workspace.opened  # never used: no tree at all
    (workspace() / "mod.txt").write_text("kept\n")
    root = workspace.keep()
    assert root is not None and (root / "tree" / "mod.txt").read_text() == "kept\n"
    if (project / ".git").exists():
        assert str(root / "tree") in git(project, "worktree", "list")
    assert not discard_kept(project, project)  # not a scratch tree: refused, nothing removed
    assert discard_kept(root, project) and not root.exists()
    if (project / ".git").exists():
        assert git(project, "worktree", "list").count("\n") == 1
