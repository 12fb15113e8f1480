"""Heuristic skeleton, outline and summary views (shared by context aggregation and the tools)."""

from __future__ import annotations

import ast
import sysconfig
import textwrap
from pathlib import Path

import pytest

from manual_slop.summarize import (
    OutlineEntry,
    definition_header,
    markdown_outline,
    outline_text,
    python_outline,
    python_outline_entries,
    python_skeleton,
    python_summary,
    skeleton_text,
    summary_text,
)
from tests.unit.context.fixture_project import APP_PY, GUIDE_MD, SETTINGS_TOML


def skeleton(source: str) -> str:
    source = textwrap.dedent(source)
    return python_skeleton(source, ast.parse(source))


def test_skeleton_keeps_signatures_docstrings_imports_and_elides_bodies() -> None:
    out = skeleton(APP_PY)
    assert "import os" in out and "from pathlib import Path" in out and "LIMIT = 10" in out
    assert "class Greeter:" in out and '"""Says hello."""' in out
    assert "def greet(self, loud: bool = False) -> str:" in out and '"""Return the greeting."""' in out
    assert "text.upper()" not in out and "self.name = name" not in out
    assert out.count("...") == 3  # __init__, greet, main
    ast.parse(out)


@pytest.mark.parametrize(
    "source",
    [
        "def f(): return 1\n",
        'def f(): "doc"\n',
        "class A: pass\n",
        "@decorator\n@other(1)\nasync def g(\n    a,\n    b: int = 2,\n) -> None:\n"
        "    # comment\n    await a\n",
        "def outer():\n    @wraps(f)\n    def inner():\n        pass\n    return inner\n",
        "try:\n    import fast\nexcept ImportError:\n    fast = None\n"
        "else:\n    x = 1\nfinally:\n    y = 2\n",
        "if X:\n    def a(): pass\nelif Y:\n    def b(): pass\nelse:\n    c = 3\n" + "# pad\n" * 3,
        "TABLE = (\n    'a'\n    'b'\n    'c'\n    'd'\n)\n",
        "CALL = dict(\n    a=1,\n    b=2,\n    c=3,\n)\n",
        "setup(\n    name='x',\n    version='1',\n    extra=True,\n)\n",
        "for i in range(3):\n" + "    print(i)\n" * 6,
        'def café(naïve: str = "é") -> str: return naïve\n',
    ],
)
def test_skeleton_of_tricky_sources_still_parses(source: str) -> None:
    ast.parse(skeleton(source))


def test_skeleton_keeps_definitions_inside_conditional_blocks() -> None:
    out = skeleton(
        """
        import sys
        if sys.platform == "win32":
            def helper() -> int:
                value = 1
                return value
        else:
            def helper() -> int:
                value = 2
                return value
        """
    )
    assert out.count("def helper() -> int:") == 2 and "value = 1" not in out
    assert "else:" in out


def test_non_ascii_columns_are_handled_as_bytes() -> None:
    out = skeleton('def grüße(x="ü"): return x\n')
    assert out.splitlines()[0] == 'def grüße(x="ü"):'


def test_outline_lists_nested_definitions_with_line_ranges() -> None:
    out = python_outline(ast.parse(APP_PY))
    lines = out.splitlines()
    assert lines[0].startswith("class Greeter  [L9-")
    assert any(line.startswith("  def greet(self, loud: bool=False) -> str  [L15-") for line in lines)
    assert lines[-1].startswith("def main() -> None  [L")


def test_outline_entries_nest_and_include_conditional_definitions() -> None:
    source = textwrap.dedent(
        """
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            class Proto: ...
        try:
            from fast import run
        except ImportError:
            def run(x, /, *args, key=1, **kw) -> int:
                return 0
        class Box(Base, metaclass=Meta):
            @staticmethod
            @cache
            async def make(n: int) -> "Box":
                def helper(): pass
                return Box()
        """
    )
    assert python_outline_entries(ast.parse(source)) == [
        OutlineEntry(0, "class Proto", 4, 4),
        OutlineEntry(0, "def run(x, /, *args, key=1, **kw) -> int", 8, 9),
        OutlineEntry(0, "class Box(Base, metaclass=Meta)", 10, 15),
        OutlineEntry(1, "async def make(n: int) -> 'Box'", 11, 15),
        OutlineEntry(2, "def helper()", 14, 14),
    ]
    assert python_outline(ast.parse("x = 1\n")) == "(no classes or functions)"


def test_definition_header_drops_decorators_body_and_colon() -> None:
    node = ast.parse("@dataclass\nclass A(B):\n    x: int = 1\n").body[0]
    assert isinstance(node, ast.ClassDef)
    assert definition_header(node) == "class A(B)"
    assert len(node.body) == 1 and node.decorator_list  # the tree itself is not changed


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_skeleton_accepts_crlf_and_cr_line_endings(newline: str) -> None:
    source = textwrap.dedent(APP_PY).replace("\n", newline)
    assert python_skeleton(source, ast.parse(source)) == skeleton(APP_PY)


def test_python_summary_lists_imports_classes_functions_constants() -> None:
    out = python_summary(APP_PY, ast.parse(APP_PY))
    assert "Docstring: The app module." in out
    assert "Imports: os, pathlib" in out
    assert "Greeter (__init__, greet)" in out
    assert "main()" in out and "Constants: LIMIT" in out


def test_markdown_outline_ignores_headings_inside_code_fences() -> None:
    out = markdown_outline(GUIDE_MD)
    assert "not a heading" not in out
    assert [line.strip().split("  [")[0] for line in out.splitlines()] == [
        "Guide",
        "Install",
        "Use",
        "Details",
    ]
    assert "[L5]" in out  # "## Install" is line 5


def test_toml_and_json_summaries_name_tables_and_keys() -> None:
    toml = summary_text("settings.toml", SETTINGS_TOML, lambda: None)
    assert "server.port: int" in toml and "plugins: list of 1" in toml
    outline = outline_text("settings.toml", SETTINGS_TOML, lambda: None)
    assert "[server]  [L3]" in outline and "[[plugins]]  [L7]" in outline
    assert "items: list of 1" in summary_text("d.json", '{"items": [1], "n": 2}', lambda: None)
    assert "does not parse" in summary_text("d.json", "{nope", lambda: None)


def test_yaml_outline_and_summary_name_the_top_level_keys() -> None:
    text = "# CI\nname: ci\non:\n  push: {}\njobs:\n  test:\n    runs-on: x\nname: again\n"
    assert outline_text("ci.yml", text, lambda: None).splitlines() == [
        "name  [L2]",
        "on  [L3]",
        "jobs  [L5]",
        "name  [L8]",
    ]
    assert summary_text("ci.yaml", text, lambda: None) == "YAML, 8 lines.\nTop-level keys: name, on, jobs"
    assert summary_text("list.yml", "- a\n- b\n", lambda: None) == "YAML, 2 lines.\n- a\n- b"


def test_unparsable_python_falls_back_to_a_summary_with_the_reason() -> None:
    source = "def broken(:\n    pass\n"

    def tree():
        return ast.parse(source)

    assert "does not parse" in skeleton_text("b.py", source, tree)
    assert "does not parse" in outline_text("b.py", source, tree)
    assert "does not parse" in summary_text("b.py", source, tree)


def test_a_parser_value_error_counts_as_not_parsing() -> None:
    def tree():
        raise ValueError("source code string cannot contain null bytes")

    for view in (skeleton_text, outline_text, summary_text):
        assert "does not parse: source code string cannot contain null bytes" in view("n.py", "x\0", tree)


def test_other_text_shows_its_head_and_length() -> None:
    text = "".join(f"line {i}\n" for i in range(100))
    out = summary_text("notes.txt", text, lambda: None)
    assert out.startswith("line 0\n") and "line 19" in out and "line 20" not in out
    assert "(100 lines in all)" in out


def test_skeletons_of_the_standard_library_still_parse() -> None:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in stdlib.rglob("*.py") if "site-packages" not in p.parts)[::10]
    checked = 0
    for path in files:
        try:
            source = path.read_text(encoding="utf-8")
            tree = ast.parse(source)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        try:
            ast.parse(python_skeleton(source, tree))
        except SyntaxError as exc:
            raise AssertionError(f"skeleton of {path} does not parse: {exc}") from exc
        checked += 1
    assert checked > 100
