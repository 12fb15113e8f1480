"""py_get_class_summary and py_get_hierarchy on a small package."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from manual_slop.tools import ToolRegistry, ToolStatus, default_registry


@pytest.fixture(scope="module")
def registry() -> ToolRegistry:
    """One registry for the module (building one per test costs more than the tests)."""
    return default_registry(with_powershell=False)


BASE = textwrap.dedent(
    '''\
    import abc


    class Base(abc.ABC):
        """The root of the shapes.

        Longer text that is not shown.
        """

        sides: int = 0
        registry = {"a": 1}

        def __init__(self, name: str) -> None:
            self.name = name
            self._area: float | None = None

        @abc.abstractmethod
        def area(self) -> float:
            """The area in square units."""

        @classmethod
        async def load(cls, path, *, strict=False):
            return cls(path)

        class Meta:
            pass
    '''
)
SHAPES = textwrap.dedent(
    """\
    from typing import final

    from pkg import base


    @final
    class Square(base.Base):
        sides = 4


    class Cube(Square, metaclass=type):
        pass


    class Odd(Odd):
        pass
    """
)


@pytest.fixture
def package(project: Path) -> Path:
    folder = project / "pkg"
    folder.mkdir()
    (folder / "base.py").write_text(BASE)
    (folder / "shapes.py").write_text(SHAPES)
    (folder / "broken.py").write_text("class Broken(:\n")
    return folder


def test_class_summary_lists_bases_doc_attributes_methods_and_nested_classes(run, package: Path) -> None:
    text = run("py_get_class_summary", path="pkg/base.py", name="Base").content
    assert text.splitlines()[:3] == [
        "class Base(abc.ABC)  (pkg/base.py, lines 4-26)",
        "bases: abc.ABC",
        "docstring: The root of the shapes.",
    ]
    assert "  sides: int = 0  (line 10)" in text and "  registry = {'a': 1}  (line 11)" in text
    assert "  def __init__(self, name: str) -> None  (line 13)" in text
    assert "  @abc.abstractmethod def area(self) -> float  (line 18) — The area in square units." in text
    assert "  @classmethod async def load(cls, path, *, strict=False)  (line 22)" in text
    assert "nested classes:\n  class Meta  (line 25)" in text
    assert text.endswith("instance attributes (set on self in methods): name, _area")
    assert "Longer text" not in text


def test_class_summary_of_something_else_is_an_error(run, package: Path) -> None:
    result = run("py_get_class_summary", path="pkg/base.py", name="Base.area")
    assert result.status is ToolStatus.ERROR and "Base.area is not a class" in result.content
    square = run("py_get_class_summary", path="pkg/shapes.py", name="Square").content
    assert square.startswith("@final class Square(base.Base)  (pkg/shapes.py, lines 6-8)\n")


def test_hierarchy_walks_up_and_down_through_a_folder(run, package: Path) -> None:
    text = run("py_get_hierarchy", path="pkg", name="Square").content
    assert text.splitlines() == [
        "Square(base.Base)  (pkg/shapes.py:7)",
        "  bases (upward):",
        "    Base(abc.ABC)  (pkg/base.py:4)",
        "      abc.ABC  (not defined under pkg)",
        "  subclasses (downward, under pkg):",
        "    Cube(Square)  (pkg/shapes.py:11)",
        "(files that do not parse were skipped: pkg/broken.py)",
    ]
    down = run("py_get_hierarchy", path="pkg", name="Base").content
    assert "    Square(base.Base)  (pkg/shapes.py:7)\n      Cube(Square)  (pkg/shapes.py:11)" in down


def test_hierarchy_survives_a_cycle_and_names_unknown_classes(run, package: Path) -> None:
    text = run("py_get_hierarchy", path="pkg/shapes.py", name="Odd").content
    assert "    Odd(Odd)  (pkg/shapes.py:15)  (cycle)" in text
    (package / "notes.txt").write_text("class Odd: pass\n")
    text_file = run("py_get_hierarchy", path="pkg/notes.txt", name="Odd")
    assert text_file.status is ToolStatus.ERROR and "pkg/notes.txt is not a Python file" in text_file.content
    missing = run("py_get_hierarchy", path="pkg/shapes.py", name="Circle")
    assert missing.status is ToolStatus.ERROR
    assert "no class named Circle under pkg/shapes.py; classes there: Cube, Odd, Square" in missing.content
