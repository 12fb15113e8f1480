"""get_code_outline (tree-sitter and ast) and get_file_summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from manual_slop.tools import ToolStatus, ToolUnavailable
from manual_slop.tools import outline as outline_module

SAMPLES: dict[str, tuple[str, list[str]]] = {
    "main.c": (
        "struct point { int x; };\nstatic int add(int a, int b) {\n  return a + b;\n}\nint decl(void);\n",
        ["struct point (lines 1-1)", "function add (lines 2-4)"],
    ),
    "shape.cpp": (
        "namespace geo {\nclass Shape {\n public:\n  double area() { return 0; }\n};\n}\n"
        "int geo::helper(int x) { return x; }\n",
        ["namespace geo (lines 1-6)", "  class Shape (lines 2-5)", "    function area (lines 4-4)",
         "function geo::helper (lines 7-7)"],
    ),
    "app.js": (
        "export function start() {}\nclass View {\n  render() {}\n}\nconst handler = (e) => e;\nlet n = 1;\n",
        ["function start (lines 1-1)", "class View (lines 2-4)", "  method render (lines 3-3)",
         "function handler (lines 5-5)"],
    ),
    "types.ts": (
        "interface Shape { area(): number }\ntype Id = string;\nenum Kind { A }\n"
        "export class Box { size(): number { return 1 } }\n",
        ["interface Shape (lines 1-1)", "type Id (lines 2-2)", "enum Kind (lines 3-3)",
         "class Box (lines 4-4)", "  method size (lines 4-4)"],
    ),
    "view.tsx": (
        "export function App() { return <div/>; }\n",
        ["function App (lines 1-1)"],
    ),
    "lib.rs": (
        "pub struct Stack { items: Vec<i32> }\ntrait Size { fn size(&self) -> usize; }\n"
        "impl Size for Stack {\n    fn size(&self) -> usize { self.items.len() }\n}\n"
        "mod tests { fn t() {} }\n",
        ["struct Stack (lines 1-1)", "trait Size (lines 2-2)", "  fn size (lines 2-2)",
         "impl Size for Stack (lines 3-5)", "  fn size (lines 4-4)", "mod tests (lines 6-6)",
         "  fn t (lines 6-6)"],
    ),
    "main.go": (
        "package main\n\ntype Server struct { port int }\n\nfunc (s *Server) Run() error { return nil }\n\n"
        "func main() {}\n",
        ["struct Server (lines 3-3)", "method (s *Server) Run (lines 5-5)", "func main (lines 7-7)"],
    ),
    "tool.py": (
        "class A:\n    def m(self):\n        pass\n\ndef f():\n    pass\n",
        ["class A (lines 1-3)", "  def m(self) (lines 2-3)", "def f() (lines 5-6)"],
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_outline_for_each_language(run, project: Path, name: str) -> None:
    source, expected = SAMPLES[name]
    (project / name).write_text(source)
    result = run("get_code_outline", path=name)
    assert result.ok, result.content
    assert result.content.splitlines() == expected


def test_outline_of_broken_source_says_so(run, project: Path) -> None:
    (project / "broken.rs").write_text("fn ok() {}\nfn broken( {\n")
    lines = run("get_code_outline", path="broken.rs").content.splitlines()
    assert lines[0] == "fn ok (lines 1-1)" and "syntax errors" in lines[-1]


def test_unsupported_extensions_and_missing_grammars(run, project: Path, monkeypatch) -> None:
    (project / "notes.txt").write_text("hello\n")
    unsupported = run("get_code_outline", path="notes.txt")
    assert unsupported.status is ToolStatus.ERROR and ".rs" in unsupported.content
    assert "get_file_summary" in unsupported.content
    monkeypatch.setitem(
        outline_module.GRAMMARS, "go", outline_module.Grammar("Go", "tree_sitter_go_not_installed")
    )
    outline_module.tree_sitter_language.cache_clear()
    try:
        (project / "x.go").write_text("package x\n")
        missing = run("get_code_outline", path="x.go")
        assert missing.status is ToolStatus.ERROR
        assert missing.content == (
            "Unavailable: no tree-sitter grammar for Go is installed; install the 'tree-sitter' and "
            "'tree-sitter-go-not-installed' packages"
        )
        with pytest.raises(ToolUnavailable):
            outline_module.code_outline("go", b"package x\n")
    finally:
        outline_module.tree_sitter_language.cache_clear()


# -- get_file_summary -------------------------------------------------------------------------------
def test_summary_by_file_type(run, project: Path) -> None:
    (project / "m.py").write_text(
        '"""Tools."""\nimport os\nfrom . import x\n\nclass A:\n    def f(self): ...\n\ndef g(): ...\n'
    )
    (project / "guide.md").write_text("# Guide\n\n```\n# not a heading\n```\n## Part\n")
    (project / "conf.toml").write_text("name = 'x'\n[server]\nport = 1\n")
    (project / "data.json").write_text(json.dumps({"items": [1, 2], "ok": True}))
    (project / "ci.yml").write_text("name: ci\non: push\njobs:\n  a: 1\n")
    (project / "notes.txt").write_text("".join(f"n{i}\n" for i in range(30)))
    (project / "lib.rs").write_text("fn a() {}\nstruct B;\n")

    def summary(path: str) -> list[str]:
        return run("get_file_summary", path=path).content.splitlines()

    assert summary("m.py") == [
        "m.py: 84 bytes, 8 lines", "Python module, 8 lines.", "Docstring: Tools.", "Imports: ., os",
        "Classes: A (f)", "Functions: g()",
    ]  # fmt: skip
    assert summary("guide.md")[1:] == ["Markdown, 6 lines, 2 headings.", "- Guide", "  - Part"]
    assert summary("conf.toml")[1:] == [
        "TOML, 3 lines.",
        "name: str",
        "server: table of 1",
        "server.port: int",
    ]
    assert summary("data.json")[1:] == [
        "JSON, 1 line; top level: table of 2.",
        "items: list of 2",
        "ok: bool",
    ]
    assert summary("ci.yml")[1:] == ["YAML, 4 lines.", "Top-level keys: name, on, jobs"]
    notes = summary("notes.txt")
    assert notes[1:3] == ["n0", "n1"] and "n20" not in notes and notes[-1] == "… (30 lines in all)"
    assert summary("lib.rs")[1:] == [
        "rust source; top-level definitions:",
        "fn a (lines 1-1)",
        "struct B (lines 2-2)",
    ]


def test_summary_of_empty_binary_and_bad_files(run, project: Path) -> None:
    (project / "empty.py").write_text("")
    (project / "bad.json").write_text("{nope")
    (project / "pic.gif").write_bytes(b"GIF89a\x00\x01")
    assert run("get_file_summary", path="empty.py").content == "empty.py: 0 bytes, 0 lines; empty"
    assert "does not parse" in run("get_file_summary", path="bad.json").content
    assert "binary file" in run("get_file_summary", path="pic.gif").content
