"""py_set_signature, py_get_var_declaration and py_set_var_declaration on a real module."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from manual_slop.tools import ToolRegistry, ToolStatus, default_registry


@pytest.fixture(scope="module")
def registry() -> ToolRegistry:
    """One registry for the module (building one per test costs more than the tests)."""
    return default_registry(with_powershell=False)


SOURCE = textwrap.dedent(
    '''\
    """Settings."""

    LIMIT: int = 10  # the cap
    NAMES = [
        "a",
        "b",
    ]


    class Config:
        name = "cfg"; size = 3

        @property
        def data(self, a: dict[str, int] = {"k": 1},
                 b=lambda q: q) -> dict:  # note: kept
            """The parsed file."""
            return {}

        def one(self): return 1

        async def fetch(self, *, limit=LIMIT):
            return limit
    '''
)


@pytest.fixture
def module(project: Path) -> Path:
    target = project / "settings.py"
    target.write_text(SOURCE)
    return target


def test_set_signature_replaces_only_the_header_and_shows_a_diff(run, module: Path, approver) -> None:
    result = run(
        "py_set_signature", path="settings.py", name="Config.data", new_signature="def data(self) -> list"
    )
    assert result.ok, result.content
    text = module.read_text()
    assert '    @property\n    def data(self) -> list:  # note: kept\n        """The parsed file."""' in text
    assert "lambda q" not in text and "return {}" in text
    diff = approver.requests[0].preview
    assert "-    def data(self, a: dict[str, int]" in diff and "+    def data(self) -> list:" in diff


def test_set_signature_keeps_a_body_on_the_same_line_and_async(run, module: Path) -> None:
    assert run(
        "py_set_signature", path="settings.py", name="Config.one", new_signature="def one(self, z):"
    ).ok
    assert "    def one(self, z): return 1\n" in module.read_text()
    new = "async def fetch(\n    self,\n    limit: int = 5,\n):"
    assert run("py_set_signature", path="settings.py", name="Config.fetch", new_signature=new).ok
    assert (
        "    async def fetch(\n        self,\n        limit: int = 5,\n    ):\n        return limit"
        in module.read_text()
    )


@pytest.mark.parametrize(
    ("name", "signature", "message"),
    [
        ("Config.one", "class One:", "must be a 'def' or 'async def' header"),
        ("Config", "def Config():", "must be a class header"),
        ("Config.one", "@cache\ndef one(self):", "has decorators"),
        ("Config.one", "def one(self", "not a valid header"),
        ("LIMIT", "def LIMIT():", "is an assignment; use py_set_var_declaration"),
        ("Config.nope", "def nope():", "Config.nope is not defined"),
    ],
)
def test_set_signature_refuses_what_is_not_a_header_of_that_kind(
    run, module: Path, name, signature, message
) -> None:
    result = run("py_set_signature", path="settings.py", name=name, new_signature=signature)
    assert result.status is ToolStatus.ERROR and message in result.content
    assert module.read_text() == SOURCE


def test_get_var_declaration_returns_the_exact_source_with_its_lines(run, module: Path) -> None:
    assert run("py_get_var_declaration", path="settings.py", name="LIMIT").content == (
        "[settings.py: LIMIT, line 3]\nLIMIT: int = 10"
    )
    names = run("py_get_var_declaration", path="settings.py", name="NAMES").content
    assert names.startswith("[settings.py: NAMES, lines 4-7]\nNAMES = [\n") and names.endswith("]")
    assert run("py_get_var_declaration", path="settings.py", name="Config.size").content.endswith("size = 3")
    wrong = run("py_get_var_declaration", path="settings.py", name="Config")
    assert wrong.status is ToolStatus.ERROR and "Config is a class, not an assignment" in wrong.content


def test_set_var_declaration_replaces_one_statement_and_keeps_its_neighbours(
    run, module: Path, approver
) -> None:
    result = run(
        "py_set_var_declaration", path="settings.py", name="Config.size", new_declaration="size: int = 4"
    )
    assert result.ok, result.content
    assert '    name = "cfg"; size: int = 4\n' in module.read_text()
    assert run(
        "py_set_var_declaration", path="settings.py", name="LIMIT", new_declaration="LIMIT = (\n  20\n)"
    ).ok
    text = module.read_text()
    assert "LIMIT = (\n  20\n)  # the cap\n" in text and len(approver.requests) == 2
    ast.parse(text)


@pytest.mark.parametrize(
    ("declaration", "message"),
    [
        ("OTHER = 1", "must assign LIMIT"),
        ("LIMIT = 1\nX = 2", "must be one assignment"),
        ("def LIMIT(): pass", "must be one assignment"),
        ("LIMIT = (", "does not parse"),
    ],
)
def test_set_var_declaration_refuses_other_statements(
    run, module: Path, approver, declaration, message
) -> None:
    result = run("py_set_var_declaration", path="settings.py", name="LIMIT", new_declaration=declaration)
    assert result.status is ToolStatus.ERROR and message in result.content
    assert module.read_text() == SOURCE and approver.requests == []  # refused before anyone is asked


def test_a_change_that_would_break_the_file_is_refused(run, project: Path, approver) -> None:
    # the header alone parses, but its comment would swallow the one-line body after it
    target = project / "short.py"
    target.write_text("def f(): return 1\n")
    result = run("py_set_signature", path="short.py", name="f", new_signature="def f():  # todo")
    assert (
        result.status is ToolStatus.ERROR
        and "refused: with this change short.py would not parse" in result.content
    )
    assert target.read_text() == "def f(): return 1\n" and approver.requests == []


def test_crlf_files_keep_their_line_endings(run, project: Path) -> None:
    target = project / "crlf.py"
    target.write_bytes(b"def f(a):\r\n    return a\r\n")
    assert run("py_set_signature", path="crlf.py", name="f", new_signature="def f(\n    a, b\n):").ok
    assert target.read_bytes() == b"def f(\r\n    a, b\r\n):\r\n    return a\r\n"
