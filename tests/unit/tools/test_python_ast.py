"""The py_* tools on a real module."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from manual_slop.tools import ToolStatus

SOURCE = textwrap.dedent(
    '''\
    """Settings storage."""

    import json
    from pathlib import Path as P

    LIMIT: int = 10


    def load(path: P) -> dict:
        """Read settings."""
        return json.loads(path.read_text())


    class Config:
        """A config file."""

        name = "cfg"

        def __init__(self, path):
            self.path = path

        @property
        def data(self) -> dict:
            """The parsed file."""
            return load(self.path)

        class Inner:
            async def fetch(self, *, limit=LIMIT):
                return limit
    '''
)


@pytest.fixture
def module(project: Path) -> Path:
    target = project / "settings.py"
    target.write_text(SOURCE)
    return target


def test_skeleton_keeps_signatures_and_docstrings_only(run, module: Path) -> None:
    text = run("py_get_skeleton", path="settings.py").content
    assert '"""Read settings."""' in text and "def load(path: P) -> dict:" in text
    assert "json.loads" not in text and "self.path = path" not in text
    assert "async def fetch(self, *, limit=LIMIT):" in text
    ast.parse(text)  # the skeleton is itself valid Python


def test_outline_nests_with_line_ranges(run, module: Path) -> None:
    assert run("py_get_code_outline", path="settings.py").content.splitlines() == [
        "def load(path: P) -> dict (lines 9-11)",
        "class Config (lines 14-29)",
        "  def __init__(self, path) (lines 19-20)",
        "  def data(self) -> dict (lines 22-25)",
        "  class Inner (lines 27-29)",
        "    async def fetch(self, *, limit=LIMIT) (lines 28-29)",
    ]


def test_skeleton_and_outline_cover_conditional_definitions_and_keep_comments(run, project: Path) -> None:
    (project / "compat.py").write_text(
        "import sys\n"
        "if sys.version_info >= (3, 12):\n"
        "    def fast(\n"
        "        data: bytes,  # raw input\n"
        "    ) -> int:\n"
        "        return len(data)\n"
        "else:\n"
        "    def fast(data: bytes) -> int:\n"
        "        return 0\n"
    )
    skeleton = run("py_get_skeleton", path="compat.py").content
    assert "        data: bytes,  # raw input" in skeleton and "len(data)" not in skeleton
    assert skeleton.count("def fast(") == 2 and "else:" in skeleton
    ast.parse(skeleton)
    assert run("py_get_code_outline", path="compat.py").content.splitlines() == [
        "def fast(data: bytes) -> int (lines 3-6)",
        "def fast(data: bytes) -> int (lines 8-9)",
    ]


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_skeleton_of_files_with_other_line_endings(run, project: Path, newline: str) -> None:
    (project / "dos.py").write_bytes(SOURCE.replace("\n", newline).encode())
    text = run("py_get_skeleton", path="dos.py").content
    assert "\r" not in text and "async def fetch(self, *, limit=LIMIT):" in text
    ast.parse(text)


def test_get_definition_by_dotted_name_with_decorators(run, module: Path) -> None:
    result = run("py_get_definition", path="settings.py", name="Config.data")
    assert result.content.splitlines()[0] == "[settings.py: Config.data, lines 22-25]"
    assert result.content.splitlines()[1] == "    @property"
    assert run("py_get_definition", path="settings.py", name="LIMIT").content.endswith("LIMIT: int = 10\n")
    missing = run("py_get_definition", path="settings.py", name="Config.save")
    assert missing.status is ToolStatus.ERROR
    assert "Config.save is not defined in Config; names there: Inner, __init__, data, name" in missing.content


def test_signature_docstring_imports(run, module: Path) -> None:
    assert run("py_get_signature", path="settings.py", name="load").content == "def load(path: P) -> dict:"
    assert run("py_get_signature", path="settings.py", name="Config.Inner.fetch").content == (
        "async def fetch(self, *, limit=LIMIT):"
    )
    assert run("py_get_signature", path="settings.py", name="Config").content == "class Config:"
    assert run("py_get_docstring", path="settings.py", name="Config.data").content == "The parsed file."
    assert run("py_get_docstring", path="settings.py", name="").content == "Settings storage."
    assert "has no docstring" in run("py_get_docstring", path="settings.py", name="Config.__init__").content
    assert run("py_get_imports", path="settings.py").content == (
        "line 3: import json\nline 4: from pathlib import Path as P"
    )


def test_find_usages_across_a_folder(run, module: Path, project: Path) -> None:
    (project / "pkg").mkdir()
    (project / "pkg" / "use.py").write_text("from settings import load\n\nload(path=1)\n")
    (project / "pkg" / "broken.py").write_text("def (:\n")
    lines = run("py_find_usages", path=".", name="load").content.splitlines()
    assert "pkg/use.py:1:22: import: from settings import load" in lines
    assert "pkg/use.py:3:1: reference: load(path=1)" in lines
    assert "settings.py:9:1: def definition: def load(path: P) -> dict:" in lines
    assert "settings.py:25:16: reference: return load(self.path)" in lines
    assert lines[-1] == "(files that do not parse were skipped: pkg/broken.py)"


def test_check_syntax_reports_the_error_with_a_pointer(run, project: Path, module: Path) -> None:
    assert (
        run("py_check_syntax", path="settings.py").content == "settings.py: OK, no syntax errors (29 lines)"
    )
    (project / "bad.py").write_text("x = (1,\ny = 2\n")
    result = run("py_check_syntax", path="bad.py")
    assert result.ok and "SyntaxError at line 1" in result.content and "^" in result.content


def test_update_definition_reindents_and_keeps_the_rest(run, module: Path, approver) -> None:
    new = "@property\ndef data(self) -> dict:\n    return {}\n"
    result = run("py_update_definition", path="settings.py", name="Config.data", new_source=new)
    assert result.ok
    text = module.read_text()
    assert "    @property\n    def data(self) -> dict:\n        return {}\n\n    class Inner:" in text
    assert text.replace("        return {}\n", "") == SOURCE.replace(
        '        """The parsed file."""\n        return load(self.path)\n', ""
    )
    assert "-        return load(self.path)" in approver.requests[0].preview


def test_update_definition_refuses_code_that_does_not_parse(run, module: Path, approver) -> None:
    result = run("py_update_definition", path="settings.py", name="load", new_source="def load(:\n    pass\n")
    assert result.status is ToolStatus.ERROR and "would not parse" in result.content
    assert module.read_text() == SOURCE and approver.requests == []


def test_unparsable_files_give_a_clear_error(run, project: Path) -> None:
    (project / "bad.py").write_text("class :\n")
    result = run("py_get_code_outline", path="bad.py")
    assert result.status is ToolStatus.ERROR and result.content.startswith(
        "Error: cannot parse bad.py: SyntaxError"
    )
