"""FileItem reading, classification, refresh; view settings validation."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from manual_slop.context.errors import ViewError
from manual_slop.context.items import FileItem, FileKind, LineSlice, ViewMode, ViewSpec, estimate_tokens
from manual_slop.tools.security import PathPolicy
from tests.unit.context.fixture_project import build_project


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return build_project(tmp_path / "proj")


def test_kinds_are_classified(project: Path) -> None:
    kinds = {
        name: FileItem.load(project / name, name).kind
        for name in ("src/app.py", "shot.png", "blob.dat", "nope.txt")
    }
    assert kinds == {
        "src/app.py": FileKind.TEXT,
        "shot.png": FileKind.IMAGE,
        "blob.dat": FileKind.BINARY,
        "nope.txt": FileKind.MISSING,
    }
    assert FileItem.load(project / "shot.png", "shot.png").media_type == "image/png"


def test_refresh_rereads_only_changed_files_and_keeps_the_old_text(project: Path) -> None:
    path = project / "notes.txt"
    item = FileItem.load(path, "notes.txt")
    assert item.refresh() is False
    old = item.content
    path.write_text("changed\n")
    os.utime(path, ns=(item.stamp[0] + 1_000_000, item.stamp[0] + 1_000_000))
    assert item.refresh() is True
    assert item.content == "changed\n" and item.old_content == old
    path.unlink()
    assert item.refresh() is True and item.kind is FileKind.MISSING and item.content is None


def test_a_file_swapped_for_a_link_to_a_secret_is_refused_at_refresh(project: Path) -> None:
    """The policy is asked again before a re-read: the swap after the first read shows nothing."""
    policy = PathPolicy.for_project(project)
    (project / "credentials.toml").write_text("api_key = 'sk-never-shown'\n")
    path = project / "notes.txt"
    item = FileItem.load(path, "notes.txt", refuse=policy.refusal)
    assert item.kind is FileKind.TEXT and not item.refused
    path.unlink()
    path.symlink_to(project / "credentials.toml")
    assert item.refresh() is True
    assert item.kind is FileKind.REFUSED and item.content is None and "credentials" in item.refused


def test_latin1_python_with_a_coding_cookie_is_decoded(tmp_path: Path) -> None:
    path = tmp_path / "old.py"
    path.write_bytes("# -*- coding: latin-1 -*-\nname = 'café'\n".encode("latin-1"))
    assert "café" in FileItem.load(path, "old.py").content


def test_view_spec_validation_names_the_problem() -> None:
    spec = ViewSpec.from_dict({"mode": "custom", "slices": [[5, 9], [1, 2]], "annotation": "the core"})
    assert spec.slices == (LineSlice(1, 2), LineSlice(5, 9)) and spec.mode is ViewMode.CUSTOM
    assert ViewSpec.from_dict(spec.to_dict()) == spec
    with pytest.raises(ViewError, match="unknown view mode 'bogus'; one of full, summary"):
        ViewSpec.from_dict({"mode": "bogus"})
    with pytest.raises(ViewError, match="needs at least one line slice"):
        ViewSpec.from_dict({"mode": "custom"})
    with pytest.raises(ViewError, match="end >= start"):
        ViewSpec.from_dict({"mode": "custom", "slices": [[5, 2]]})
    with pytest.raises(ViewError, match="unknown view keys"):
        ViewSpec.from_dict({"mode": "full", "colour": "red"})
    assert ViewSpec.from_dict({"mode": "full"}).is_default


def test_token_estimate_is_four_characters_per_token() -> None:
    assert [estimate_tokens("x" * n) for n in (0, 1, 4, 5)] == [0, 1, 1, 2]
