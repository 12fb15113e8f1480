"""``get_code_outline``: classes, functions and types of a source file, with line ranges.

Python files use the standard ``ast`` (:mod:`manual_slop.tools.python_ast`); C, C++,
JavaScript, TypeScript/TSX, Rust and Go use tree-sitter grammars from PyPI
(``tree-sitter-c``, ``tree-sitter-cpp``, ``tree-sitter-javascript``,
``tree-sitter-typescript``, ``tree-sitter-rust``, ``tree-sitter-go``). A missing grammar
gives a message naming the package to install. Each language has a table of the node
types that make an outline entry, and whether the outline descends into them (classes,
namespaces, impls do; function bodies do not).
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from manual_slop import pyparse
from manual_slop.tools.errors import ToolInputError, ToolUnavailable
from manual_slop.tools.python_ast import outline_lines
from manual_slop.tools.textio import read_bytes
from manual_slop.tools.tool import Tool, ToolRun

__all__ = [
    "GRAMMARS",
    "LANGUAGE_BY_SUFFIX",
    "code_outline",
    "entry_name",
    "outline_tools",
    "tree_sitter_language",
]

SOURCE_LIMIT = 10_000_000


@dataclass(frozen=True, slots=True)
class Grammar:
    label: str
    module: str
    function: str = "language"

    @property
    def package(self) -> str:
        return self.module.replace("_", "-")


GRAMMARS: dict[str, Grammar] = {
    "c": Grammar("C", "tree_sitter_c"),
    "cpp": Grammar("C++", "tree_sitter_cpp"),
    "javascript": Grammar("JavaScript", "tree_sitter_javascript"),
    "typescript": Grammar("TypeScript", "tree_sitter_typescript", "language_typescript"),
    "tsx": Grammar("TSX", "tree_sitter_typescript", "language_tsx"),
    "rust": Grammar("Rust", "tree_sitter_rust"),
    "go": Grammar("Go", "tree_sitter_go"),
}

LANGUAGE_BY_SUFFIX: dict[str, str] = {
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".c++": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".rs": "rust", ".go": "go",
}  # fmt: skip


# node type -> (label, descend into it?)
_C = {
    "function_definition": ("function", False),
    "struct_specifier": ("struct", False),
    "union_specifier": ("union", False),
    "enum_specifier": ("enum", False),
    "type_definition": ("typedef", False),
}
_CPP = {
    **_C,
    "struct_specifier": ("struct", True),
    "class_specifier": ("class", True),
    "namespace_definition": ("namespace", True),
}
_JS = {
    "function_declaration": ("function", False),
    "generator_function_declaration": ("function*", False),
    "class_declaration": ("class", True),
    "method_definition": ("method", False),
    "variable_declarator": ("function", False),  # only when its value is a function
}
_TS = {
    **_JS,
    "abstract_class_declaration": ("abstract class", True),
    "interface_declaration": ("interface", False),
    "type_alias_declaration": ("type", False),
    "enum_declaration": ("enum", False),
    "internal_module": ("namespace", True),
    "function_signature": ("function", False),
    "abstract_method_signature": ("abstract method", False),
}
_RUST = {
    "function_item": ("fn", False),
    "function_signature_item": ("fn", False),
    "struct_item": ("struct", False),
    "enum_item": ("enum", False),
    "union_item": ("union", False),
    "trait_item": ("trait", True),
    "impl_item": ("impl", True),
    "mod_item": ("mod", True),
    "type_item": ("type", False),
    "macro_definition": ("macro", False),
}
_GO = {
    "function_declaration": ("func", False),
    "method_declaration": ("method", False),
    "type_spec": ("type", False),
}
NODE_TABLES: dict[str, dict[str, tuple[str, bool]]] = {
    "c": _C,
    "cpp": _CPP,
    "javascript": _JS,
    "typescript": _TS,
    "tsx": _TS,
    "rust": _RUST,
    "go": _GO,
}
_FUNCTION_VALUES = {"arrow_function", "function_expression", "function", "generator_function"}
_C_NAME_TYPES = {
    "identifier",
    "field_identifier",
    "qualified_identifier",
    "destructor_name",
    "operator_name",
    "type_identifier",
    "template_function",
}


@functools.cache
def tree_sitter_language(key: str) -> Any:
    grammar = GRAMMARS[key]
    try:
        import tree_sitter

        module = importlib.import_module(grammar.module)
    except ImportError:
        raise ToolUnavailable(
            f"no tree-sitter grammar for {grammar.label} is installed; install the "
            f"'tree-sitter' and '{grammar.package}' packages"
        ) from None
    return tree_sitter.Language(getattr(module, grammar.function)())


def _text(node: Any) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def _c_name(node: Any) -> str:
    current = node.child_by_field_name("declarator")
    for _ in range(20):
        if current is None:
            break
        if current.type in _C_NAME_TYPES:
            return _text(current)
        current = current.child_by_field_name("declarator") or current.child_by_field_name("name")
    return ""


def entry_name(language: str, node: Any) -> str | None:
    """The name shown for ``node``, or None when the node is not an outline entry after all."""
    kind = node.type
    if kind == "variable_declarator":
        value = node.child_by_field_name("value")
        if value is None or value.type not in _FUNCTION_VALUES:
            return None
        return _text(node.child_by_field_name("name"))
    if language in {"c", "cpp"}:
        if kind == "function_definition":
            return _c_name(node) or "(anonymous)"
        if kind in {"struct_specifier", "union_specifier", "enum_specifier", "class_specifier"}:
            if node.child_by_field_name("body") is None:
                return None  # a use of the type, not its definition
            return _text(node.child_by_field_name("name")) or "(anonymous)"
        if kind == "type_definition":
            return _c_name(node) or _text(node.child_by_field_name("declarator"))
    if kind == "impl_item":
        trait = _text(node.child_by_field_name("trait"))
        target = _text(node.child_by_field_name("type"))
        return f"{trait} for {target}" if trait else target
    if kind == "method_declaration":
        receiver = _text(node.child_by_field_name("receiver"))
        return f"{receiver} {_text(node.child_by_field_name('name'))}".strip()
    return _text(node.child_by_field_name("name")) or "(anonymous)"


def _go_type_label(node: Any) -> str:
    body = node.child_by_field_name("type")
    return {"struct_type": "struct", "interface_type": "interface"}.get(body.type if body else "", "type")


def code_outline(language: str, source: bytes) -> list[str]:
    """Outline lines (indented by nesting) for ``source`` in ``language``."""
    import tree_sitter

    parser = tree_sitter.Parser(tree_sitter_language(language))
    tree = parser.parse(source)
    table = NODE_TABLES[language]
    lines: list[str] = []

    def visit(node: Any, depth: int) -> None:
        for child in node.named_children:
            spec = table.get(child.type)
            name = entry_name(language, child) if spec else None
            if spec is None or name is None:
                visit(child, depth)
                continue
            label, descend = spec
            if language == "go" and child.type == "type_spec":
                label = _go_type_label(child)
            start, end = child.start_point[0] + 1, child.end_point[0] + 1
            lines.append(f"{'  ' * depth}{label} {name} (lines {start}-{end})")
            if descend:
                visit(child, depth + 1)

    visit(tree.root_node, 0)
    if tree.root_node.has_error:
        lines.append("(the parser met syntax errors; parts of the outline may be missing)")
    return lines


def get_code_outline(args: dict[str, Any], run: ToolRun) -> str:
    path: Path = run.path()
    shown = run.display(path)
    suffix = path.suffix.lower()
    data, size = read_bytes(path, shown, SOURCE_LIMIT + 1)
    if size > SOURCE_LIMIT:
        raise ToolInputError(f"{shown} is {size:,} bytes; too large to outline")
    if suffix in {".py", ".pyi"}:
        try:
            tree = pyparse.parse(data)
        except (SyntaxError, ValueError) as exc:
            raise ToolInputError(f"cannot parse {shown}: {exc}") from None
        lines = outline_lines(tree)
    elif suffix in LANGUAGE_BY_SUFFIX:
        lines = code_outline(LANGUAGE_BY_SUFFIX[suffix], data)
    else:
        known = ", ".join(sorted({*LANGUAGE_BY_SUFFIX, ".py"}))
        raise ToolInputError(
            f"no outline for {suffix or 'files without an extension'} files; supported: {known}. "
            "Use get_file_summary for other files"
        )
    return "\n".join(lines) if lines else f"{shown}: no functions, classes or types found"


def outline_tools() -> list[Tool]:
    return [
        Tool(
            "get_code_outline",
            "List the functions, classes, structs, traits, impls, interfaces and types of a source file "
            "with their line ranges, nested. Works for Python, C, C++, JavaScript, TypeScript/TSX, "
            "Rust and Go (by file extension).",
            {
                "type": "object",
                "properties": {"path": {"type": "string", "minLength": 1, "description": "Source file path"}},
                "required": ["path"],
                "additionalProperties": False,
            },
            get_code_outline,
            path_params=("path",),
        )
    ]
