"""Tier 4 patches: exact, all-or-nothing, confined to the project folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from manual_slop.mma.errors import PatchError
from manual_slop.mma.tier4 import apply_patch, extract_diff, parse_unified_diff

DIFF = """--- a/pkg/mod.py
+++ b/pkg/mod.py
@@ -1,4 +1,4 @@
 def f():
-    return 1
+    return 2

 x = 1
--- /dev/null
+++ b/pkg/new.py
@@ -0,0 +1,2 @@
+NEW = True
+OTHER = 1
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("def f():\n    return 1\n\nx = 1\n")
    return tmp_path


def test_a_diff_applies_exactly_and_creates_files(project: Path) -> None:
    written = apply_patch(DIFF, project)
    assert [p.name for p in written] == ["mod.py", "new.py"]
    assert (project / "pkg" / "mod.py").read_text() == "def f():\n    return 2\n\nx = 1\n"
    assert (project / "pkg" / "new.py").read_text() == "NEW = True\nOTHER = 1\n"


def test_nothing_is_written_when_one_file_does_not_apply(project: Path) -> None:
    (project / "pkg" / "mod.py").write_text("def f():\n    return 3\n\nx = 1\n")
    with pytest.raises(PatchError, match=r"pkg/mod.py: hunk at line 1 does not match"):
        apply_patch(DIFF, project)
    assert not (project / "pkg" / "new.py").exists()


def test_hunks_found_at_an_offset_and_deletions(project: Path) -> None:
    (project / "pkg" / "mod.py").write_text("# header\n# more\ndef f():\n    return 1\n\nx = 1\n")
    apply_patch(DIFF.split("--- /dev/null")[0], project)
    assert (project / "pkg" / "mod.py").read_text().startswith("# header\n# more\ndef f():\n    return 2\n")
    (project / "gone.txt").write_text("a\nb\n")
    apply_patch("--- a/gone.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n", project)
    assert not (project / "gone.txt").exists()


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../outside.py", "without '..'"),
        ("/etc/passwd", "relative to the project root"),
        ("credentials.toml", "protected file"),
        ("proj_history.toml", "protected file"),
        (".git/config", "inside .git"),
    ],
)
def test_paths_outside_the_allowlist_are_refused(project: Path, path: str, message: str) -> None:
    diff = f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+x\n"
    if path.startswith("/"):
        diff = f"--- /dev/null\n+++ {path}\n@@ -0,0 +1 @@\n+x\n"
    with pytest.raises(PatchError, match=message):
        apply_patch(diff, project)


def test_a_symlink_out_of_the_project_is_refused(project: Path, tmp_path_factory) -> None:
    outside = tmp_path_factory.mktemp("outside")
    (project / "link").symlink_to(outside)
    with pytest.raises(PatchError, match=r"outside the project folder"):
        apply_patch("--- /dev/null\n+++ b/link/evil.py\n@@ -0,0 +1 @@\n+x\n", project)
    assert not (outside / "evil.py").exists()


def test_malformed_diffs_say_where() -> None:
    with pytest.raises(PatchError, match=r"no file changes found"):
        parse_unified_diff("just text")
    with pytest.raises(PatchError, match=r"promises 2/2 lines, has 1/1"):
        parse_unified_diff("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n x\n")
    assert extract_diff("Here you go:\n```diff\n--- a/x\n+++ b/x\n```\nthanks") == "--- a/x\n+++ b/x\n"
    assert extract_diff("Sure.\n--- a/x\n+++ b/x\n").startswith("--- a/x")


def test_missing_newline_markers(project: Path) -> None:
    (project / "n.txt").write_text("a\nb")
    apply_patch(
        "--- a/n.txt\n+++ b/n.txt\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n", project
    )
    assert (project / "n.txt").read_text() == "a\nc\n"
