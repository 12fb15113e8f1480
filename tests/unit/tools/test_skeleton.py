"""get_skeleton: Python through the shared skeleton, six languages through tree-sitter."""

from __future__ import annotations

from pathlib import Path

import pytest

from manual_slop.tools import ToolRegistry, ToolStatus, default_registry
from manual_slop.tools.skeleton import code_skeleton


@pytest.fixture(scope="module")
def registry() -> ToolRegistry:
    """One registry for the module (building one per test costs more than the tests)."""
    return default_registry(with_powershell=False)


SOURCES = {
    "c": (
        "#include <stdio.h>\n/* a point */\nstruct P { int x; };\n"
        "static int add(int a, int b) {\n  return a + b;\n}\nint main(void);\n",
        "#include <stdio.h>\n/* a point */\nstruct P { int x; };\n"
        "static int add(int a, int b) { ... }\nint main(void);",
    ),
    "cpp": (
        "namespace n {\nclass A {\n public:\n  A() : x(1) { init(); }\n  int get() const { return x; }\n"
        "  void f() = delete;\n  int x;\n};\n}\nauto l = [](int a) { return a; };\n",
        "namespace n {\nclass A {\n public:\n  A() : x(1) { ... }\n  int get() const { ... }\n"
        "  void f() = delete;\n  int x;\n};\n}\nauto l = [](int a) { ... };",
    ),
    "javascript": (
        "import x from 'y';\nexport function f(a) {\n  return a;\n}\nconst g = (a) => { return a; };\n"
        "const h = a => a * 2;\nclass C extends B {\n  m() { return 1; }\n  static s = 1;\n}\n",
        "import x from 'y';\nexport function f(a) { ... }\nconst g = (a) => { ... };\n"
        "const h = a => a * 2;\nclass C extends B {\n  m() { ... }\n  static s = 1;\n}",
    ),
    "typescript": (
        "interface I { a: number }\nexport abstract class C implements I {\n  a = 1;\n"
        "  m(x: number): string { return ''; }\n  abstract n(): void;\n}\n"
        "function f<T>(x: T): T { return x; }\n",
        "interface I { a: number }\nexport abstract class C implements I {\n  a = 1;\n"
        "  m(x: number): string { ... }\n  abstract n(): void;\n}\nfunction f<T>(x: T): T { ... }",
    ),
    "rust": (
        "use std::fmt;\npub struct S { a: i32 }\nimpl S {\n  pub fn new() -> Self { S { a: 1 } }\n}\n"
        "trait T { fn x(&self); fn y(&self) { } }\nfn main() {\n  let c = |x| { x };\n}\n",
        "use std::fmt;\npub struct S { a: i32 }\nimpl S {\n  pub fn new() -> Self { ... }\n}\n"
        "trait T { fn x(&self); fn y(&self) { ... } }\nfn main() { ... }",
    ),
    "go": (
        'package main\nimport "fmt"\ntype S struct { A int }\nfunc (s *S) M() int {\n  return s.A\n}\n'
        "func main() {\n  f := func() { fmt.Println() }\n  f()\n}\n",
        'package main\nimport "fmt"\ntype S struct { A int }\n'
        "func (s *S) M() int { ... }\nfunc main() { ... }",
    ),
}
SUFFIX = {"c": ".c", "cpp": ".cpp", "javascript": ".js", "typescript": ".ts", "rust": ".rs", "go": ".go"}


@pytest.mark.parametrize("language", sorted(SOURCES))
def test_function_bodies_become_an_elided_block_and_the_rest_stays(run, project: Path, language: str) -> None:
    source, expected = SOURCES[language]
    name = f"sample{SUFFIX[language]}"
    (project / name).write_text(source)
    assert run("get_skeleton", path=name).content == expected


def test_python_uses_the_python_skeleton(run, project: Path) -> None:
    (project / "m.py").write_text('def f(x):\n    """Doc."""\n    return x * 2\n')
    assert run("get_skeleton", path="m.py").content == 'def f(x):\n    """Doc."""\n    ...'


def test_syntax_errors_are_noted_and_unknown_extensions_refused(run, project: Path) -> None:
    assert "the parser met syntax errors" in code_skeleton("c", b"int f( { return 1; }\n")
    (project / "notes.txt").write_text("hello")
    result = run("get_skeleton", path="notes.txt")
    assert result.status is ToolStatus.ERROR and "no skeleton for .txt files; supported:" in result.content
    (project / "bad.py").write_text("def f(:\n")
    assert "cannot parse bad.py" in run("get_skeleton", path="bad.py").content


def test_deeply_nested_code_does_not_hit_the_recursion_limit() -> None:
    source = b"var x = " + b"[" * 3000 + b"]" * 3000 + b";\nfunction f() { return 1; }\n"
    assert code_skeleton("javascript", source).endswith("function f() { ... }")
