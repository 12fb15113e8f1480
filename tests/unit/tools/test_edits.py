"""Mutating file tools: previews, exact application, encodings and line endings kept."""

from __future__ import annotations

from pathlib import Path

from manual_slop.tools import ToolStatus


def test_write_file_creates_folders_and_previews_a_diff(run, project: Path, approver) -> None:
    result = run("write_file", path="docs/new.md", content="# New\n")
    assert result.ok and result.content == "created docs/new.md (6 bytes, 1 lines)"
    assert (project / "docs" / "new.md").read_text() == "# New\n"
    (request,) = approver.requests
    assert request.call.args == {"path": "docs/new.md", "content": "# New\n"}
    assert request.preview.splitlines()[:3] == ["--- /dev/null", "+++ b/docs/new.md", "@@ -0,0 +1 @@"]


def test_write_file_keeps_the_files_line_endings_and_mode(run, project: Path) -> None:
    target = project / "run.sh"
    target.write_bytes(b"#!/bin/sh\r\necho 1\r\n")
    target.chmod(0o755)
    assert run("write_file", path="run.sh", content="#!/bin/sh\necho 2\n").ok
    assert target.read_bytes() == b"#!/bin/sh\r\necho 2\r\n"
    assert target.stat().st_mode & 0o777 == 0o755


def test_edit_file_replaces_a_unique_match_and_keeps_crlf(run, project: Path, approver) -> None:
    target = project / "notes.txt"
    target.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    result = run("edit_file", path="notes.txt", old_string="two\nthree", new_string="2\n3\n4")
    assert result.ok
    assert target.read_bytes() == b"one\r\n2\r\n3\r\n4\r\n"
    diff = approver.requests[0].preview
    assert "-two\n-three\n+2\n+3\n+4\n" in diff


def test_edit_file_errors_leave_the_file_alone(run, project: Path, approver) -> None:
    target = project / "code.py"
    original = "x = 1\nx = 1\ny = 2\n"
    target.write_text(original)
    missing = run("edit_file", path="code.py", old_string="z = 3", new_string="z = 4")
    assert missing.status is ToolStatus.ERROR and "was not found in code.py" in missing.content
    ambiguous = run("edit_file", path="code.py", old_string="x = 1", new_string="x = 9")
    assert "occurs 2 times" in ambiguous.content and "replace_all" in ambiguous.content
    same = run("edit_file", path="code.py", old_string="y = 2", new_string="y = 2")
    assert "nothing would change" in same.content
    nofile = run("edit_file", path="other.py", old_string="a", new_string="b")
    assert "use write_file to create it" in nofile.content
    assert target.read_text() == original
    assert approver.requests == []  # nothing that cannot apply is shown to a human


def test_edit_file_hint_points_at_a_near_miss(run, project: Path) -> None:
    (project / "f.py").write_text("def f():\n    return 1\n")
    result = run("edit_file", path="f.py", old_string="def f():\n  return 1", new_string="x")
    assert "its first line appears at line 1" in result.content


def test_edit_file_replace_all(run, project: Path) -> None:
    (project / "code.py").write_text("x = 1\nx = 1\n")
    assert run("edit_file", path="code.py", old_string="x = 1", new_string="x = 2", replace_all=True).ok
    assert (project / "code.py").read_text() == "x = 2\nx = 2\n"


def test_edits_keep_bom_and_non_utf8_encodings(run, project: Path) -> None:
    bom = project / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbfhello\n")
    assert run("edit_file", path="bom.txt", old_string="hello", new_string="héllo").ok
    assert bom.read_bytes() == "\ufeffhéllo\n".encode()
    latin = project / "latin.txt"
    latin.write_bytes("caf\xe9\n".encode("latin-1"))
    assert run("edit_file", path="latin.txt", old_string="café", new_string="thé").ok
    assert latin.read_bytes() == "th\xe9\n".encode("latin-1")
    refused = run("edit_file", path="latin.txt", old_string="thé", new_string="茶")
    assert refused.status is ToolStatus.ERROR and "cannot store" in refused.content
    assert latin.read_bytes() == "th\xe9\n".encode("latin-1")


def test_binary_files_are_not_edited(run, project: Path) -> None:
    (project / "blob.bin").write_bytes(b"\x00\x01abc")
    result = run("edit_file", path="blob.bin", old_string="abc", new_string="xyz")
    assert "binary file" in result.content and (project / "blob.bin").read_bytes() == b"\x00\x01abc"


def test_set_file_slice_replaces_inserts_and_deletes(run, project: Path) -> None:
    target = project / "lines.txt"
    target.write_text("1\n2\n3\n4\n")
    assert run("set_file_slice", path="lines.txt", start_line=2, end_line=3, new_content="two\nthree").ok
    assert target.read_text() == "1\ntwo\nthree\n4\n"
    assert run("set_file_slice", path="lines.txt", start_line=1, end_line=0, new_content="0\n").ok
    assert target.read_text() == "0\n1\ntwo\nthree\n4\n"
    assert run("set_file_slice", path="lines.txt", start_line=2, end_line=4, new_content="").ok
    assert target.read_text() == "0\n4\n"
    assert run("set_file_slice", path="lines.txt", start_line=3, end_line=2, new_content="5").ok  # append
    assert target.read_text() == "0\n4\n5"
    past = run("set_file_slice", path="lines.txt", start_line=2, end_line=9, new_content="x")
    assert past.status is ToolStatus.ERROR and "past the end" in past.content


def test_set_file_slice_on_crlf_and_without_final_newline(run, project: Path) -> None:
    target = project / "w.txt"
    target.write_bytes(b"a\r\nb\r\nc")
    assert run("set_file_slice", path="w.txt", start_line=2, end_line=2, new_content="B1\nB2").ok
    assert target.read_bytes() == b"a\r\nB1\r\nB2\r\nc"
    assert run("set_file_slice", path="w.txt", start_line=5, end_line=4, new_content="d").ok
    assert target.read_bytes() == b"a\r\nB1\r\nB2\r\nc\r\nd"


def test_writes_through_symlinks_and_into_protected_places_are_denied(
    run, project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    (project / "inside.txt").symlink_to(outside)
    (project / ".git").mkdir()
    for path in ("inside.txt", ".git/config", "../outside.txt", "config.toml", "logs/x.txt"):
        result = run("write_file", path=path, content="pwned\n")
        assert result.status is ToolStatus.DENIED, path
    assert outside.read_text() == "keep\n" and not (project / ".git" / "config").exists()


def test_rejected_edits_change_nothing(project: Path, registry) -> None:
    from manual_slop.tools import ExecutionContext, ToolCall

    from .conftest import Approver

    (project / "a.txt").write_text("same\n")
    no = Approver(approve=False)
    ctx = ExecutionContext.for_directory(project, pre_tool_callback=no)
    for name, args in [
        ("write_file", {"path": "a.txt", "content": "new"}),
        ("edit_file", {"path": "a.txt", "old_string": "same", "new_string": "new"}),
        ("set_file_slice", {"path": "a.txt", "start_line": 1, "end_line": 1, "new_content": "new"}),
        ("write_file", {"path": "b.txt", "content": "new"}),
    ]:
        result = registry.execute(ToolCall.new(name, args), ctx)
        assert (result.status, result.content) == (ToolStatus.REJECTED, "REJECTED by user: no")
    assert sorted(p.name for p in project.iterdir()) == ["a.txt"]
    assert (project / "a.txt").read_text() == "same\n"
    assert len(no.requests) == 4
