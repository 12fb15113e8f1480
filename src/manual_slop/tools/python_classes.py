"""Python tools about classes: one class at a glance, and where it sits in a hierarchy.

- ``py_get_class_summary``: header, bases, first docstring line, class attributes, the
  attributes its methods set on ``self``, methods with signatures, nested classes.
- ``py_get_hierarchy``: the bases chain upward and the subclasses downward, among the
  classes defined in one file or every ``.py`` file under a folder. Bases are matched by
  their last name (``pkg.Base`` and ``Base[T]`` both match a class ``Base``), so a name
  defined twice shows every definition.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from manual_slop.summarize import definition_header, first_line
from manual_slop.tools.errors import ToolInputError
from manual_slop.tools.files import walk_files
from manual_slop.tools.python_ast import find_definition, parse
from manual_slop.tools.tool import Tool, ToolRun

__all__ = ["ClassInfo", "class_summary", "class_tools", "hierarchy_lines"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
VALUE_CHARS = 120  # a class attribute's source is clipped here
HIERARCHY_DEPTH = 25
HIERARCHY_ENTRIES = 500


def _clip(text: str, limit: int = VALUE_CHARS) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _doc_line(node: ast.AST) -> str:
    doc = ast.get_docstring(node) if isinstance(node, (*_FUNCTIONS, ast.ClassDef, ast.Module)) else None
    return doc.strip().splitlines()[0] if doc and doc.strip() else ""


def _self_attributes(method: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[str]:
    if not method.args.args:
        return
    me = method.args.args[0].arg
    for node in ast.walk(method):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        for target in targets:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == me
            ):
                yield target.attr


def _decorators(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> str:
    return "".join(f"@{ast.unparse(d)} " for d in node.decorator_list)


def class_summary(node: ast.ClassDef, shown: str) -> str:
    """The summary text of one class (see the module docstring)."""
    end = node.end_lineno or node.lineno
    out = [f"{_decorators(node)}{definition_header(node)}  ({shown}, lines {first_line(node)}-{end})"]
    bases = [ast.unparse(b) for b in node.bases] + [ast.unparse(k) for k in node.keywords]
    out.append(f"bases: {', '.join(bases) if bases else '(none)'}")
    if doc := _doc_line(node):
        out.append(f"docstring: {doc}")
    attributes, methods, nested, instance = [], [], [], []
    for child in node.body:
        if isinstance(child, ast.Assign | ast.AnnAssign):
            attributes.append(f"  {_clip(ast.unparse(child))}  (line {child.lineno})")
        elif isinstance(child, _FUNCTIONS):
            doc = f" — {_doc_line(child)}" if _doc_line(child) else ""
            methods.append(f"  {_decorators(child)}{definition_header(child)}  (line {child.lineno}){doc}")
            instance += [a for a in _self_attributes(child) if a not in instance]
        elif isinstance(child, ast.ClassDef):
            nested.append(f"  {definition_header(child)}  (line {child.lineno})")
    for title, rows in (("class attributes", attributes), ("methods", methods), ("nested classes", nested)):
        out += [f"{title}:", *rows] if rows else [f"{title}: (none)"]
    if instance:
        out.append(f"instance attributes (set on self in methods): {', '.join(instance)}")
    return "\n".join(out)


def py_get_class_summary(args: dict[str, Any], run: ToolRun) -> str:
    parsed = parse(run.path(), run.display(run.path()))
    node = find_definition(parsed.tree, args["name"], parsed.shown)
    if not isinstance(node, ast.ClassDef):
        raise ToolInputError(f"{args['name']} is not a class; py_get_signature shows functions")
    return class_summary(node, parsed.shown)


# -- py_get_hierarchy -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ClassInfo:
    """A class found while scanning: where it is and the names of its bases."""

    qualname: str
    shown: str
    line: int
    bases: tuple[str, ...]  # as written, e.g. "pkg.Base", "Generic[T]"

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]

    @property
    def base_names(self) -> tuple[str, ...]:
        return tuple(_last_name(base) for base in self.bases)

    def label(self) -> str:
        bases = f"({', '.join(self.bases)})" if self.bases else ""
        return f"{self.qualname}{bases}  ({self.shown}:{self.line})"


def _last_name(base: str) -> str:
    return base.split("[", 1)[0].rsplit(".", 1)[-1].strip()


def classes_of(tree: ast.Module, shown: str) -> list[ClassInfo]:
    """Every class of a module, nested ones with dotted names (``Outer.Inner``)."""
    found: list[ClassInfo] = []

    def visit(node: ast.AST, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                qualname = f"{scope}{child.name}"
                found.append(
                    ClassInfo(qualname, shown, child.lineno, tuple(ast.unparse(b) for b in child.bases))
                )
                visit(child, qualname + ".")
            elif isinstance(child, _FUNCTIONS):
                visit(child, f"{scope}{child.name}.")
            else:
                visit(child, scope)

    visit(tree, "")
    return found


def hierarchy_lines(target: str, classes: list[ClassInfo], scope: str) -> list[str]:
    """The tree of ``target``'s bases and subclasses among ``classes``."""
    wanted = target.strip().rsplit(".", 1)[-1]
    roots = [c for c in classes if c.qualname == target.strip()] or [c for c in classes if c.name == wanted]
    by_name: dict[str, list[ClassInfo]] = {}
    for info in classes:
        by_name.setdefault(info.name, []).append(info)
    out: list[str] = []

    def add(line: str) -> bool:
        if len(out) >= HIERARCHY_ENTRIES:
            return False
        out.append(line)
        return True

    def up(info: ClassInfo, depth: int, seen: frozenset[str]) -> None:
        for base, name in zip(info.bases, info.base_names, strict=True):
            pad = "  " * depth
            matches = by_name.get(name, [])
            if not matches:
                add(f"{pad}{base}  (not defined under {scope})")
            for found in matches:
                key = f"{found.shown}:{found.qualname}"
                if not add(f"{pad}{found.label()}" + ("  (cycle)" if key in seen else "")):
                    return
                if key not in seen and depth < HIERARCHY_DEPTH:
                    up(found, depth + 1, seen | {key})

    def down(name: str, depth: int, seen: frozenset[str]) -> None:
        for info in classes:
            if name in info.base_names:
                key = f"{info.shown}:{info.qualname}"
                if not add(f"{'  ' * depth}{info.label()}" + ("  (cycle)" if key in seen else "")):
                    return
                if key not in seen and depth < HIERARCHY_DEPTH:
                    down(info.name, depth + 1, seen | {key})

    for root in roots:
        key = f"{root.shown}:{root.qualname}"
        add(root.label())
        add("  bases (upward):")
        before = len(out)
        up(root, 2, frozenset({key}))
        if len(out) == before:
            add("    (none)")
        add(f"  subclasses (downward, under {scope}):")
        before = len(out)
        down(root.name, 2, frozenset({key}))
        if len(out) == before:
            add("    (none)")
    if len(out) >= HIERARCHY_ENTRIES:
        out.append(f"(stopped at {HIERARCHY_ENTRIES} lines)")
    return out


def py_get_hierarchy(args: dict[str, Any], run: ToolRun) -> str:
    root = run.path()
    scope = run.display(root)
    if not root.exists():
        raise ToolInputError(f"no such file or directory: {scope}")
    if root.is_file() and root.suffix.lower() not in {".py", ".pyi"}:
        raise ToolInputError(f"{scope} is not a Python file; give a .py file or a folder")
    classes: list[ClassInfo] = []
    skipped: list[str] = []
    for path in walk_files(run, root, (".py", ".pyi")):
        shown = run.display(path)
        try:
            classes += classes_of(parse(path, shown).tree, shown)
        except ToolInputError:
            skipped.append(shown)
        if run.stopped():
            break
    name = args["name"].strip()
    if not any(c.qualname == name or c.name == name.rsplit(".", 1)[-1] for c in classes):
        known = ", ".join(sorted({c.qualname for c in classes})[:60]) or "none"
        raise ToolInputError(f"no class named {name} under {scope}; classes there: {known}")
    note = [f"(files that do not parse were skipped: {', '.join(skipped[:20])})"] if skipped else []
    return "\n".join(hierarchy_lines(name, classes, scope) + note)


# -- declarations ------------------------------------------------------------------------------------
def class_tools() -> list[Tool]:
    name = {"type": "string", "minLength": 1, "description": "Class name, dotted when nested ('Outer.Inner')"}
    return [
        Tool(
            "py_get_class_summary",
            "Summarize one Python class without its bodies. Lists its decorators, header and bases, "
            "first docstring line, class attributes, attributes its methods set on self, every method "
            "with its signature, decorators and first docstring line, and nested classes, each with "
            "its line.",
            {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "minLength": 1, "description": "Python file path"},
                    "name": name,
                },
                "required": ["path", "name"],
                "additionalProperties": False,
            },
            py_get_class_summary,
            path_params=("path",),
        ),
        Tool(
            "py_get_hierarchy",
            "Show a Python class's bases chain and its subclasses. Searches the classes defined in one "
            "file or in every .py file under a folder ('.' for the project); each class with its file "
            "and line, bases defined elsewhere named as such.",
            {
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": "Python file or folder to search",
                    },
                    "name": name,
                },
                "required": ["path", "name"],
                "additionalProperties": False,
            },
            py_get_hierarchy,
            path_params=("path",),
        ),
    ]
