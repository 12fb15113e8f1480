"""Grammar-constrained output for the local model: structure it cannot get wrong.

A 135M model cannot be trusted to write valid JSON or to close a tool block, so llama.cpp
(through xllamacpp, whose grammars are llguidance's Lark dialect with embedded JSON
schemas) is told what the answer may look like, token by token:

- **Structured answers** (Tier 1 tracks, Tier 2 tickets): :func:`json_answer_format`, a
  ``response_format`` of type ``json_schema`` — the answer *is* one object of the schema.
- **A turn with tools**: :func:`turn_grammar` — free text, optionally followed by one
  ``<execute>`` block whose JSON array holds calls that match the tools' own parameter
  schemas. When the user's message names tools (:func:`named_tools`), the turn *must* be
  one block calling those tools: a small model rarely decides to call a tool, but it can
  fill in the arguments of one it is told to call.

Every string of a schema gets a ``maxLength`` (:func:`bounded`): without one the model can
loop inside a string until its token limit. Strings the schema requires get ``minLength``
1, so a required field is never empty. A ``path`` argument is a relative path
(:data:`RELATIVE_PATH`); in a turn that must call named tools it is one of the paths the
message mentions (:func:`mentioned_paths`) when it mentions any — a small model copies a
name it was given far better than it spells one.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "MAX_CALLS",
    "MAX_STRING_CHARS",
    "RELATIVE_PATH",
    "bounded",
    "calls_schema",
    "json_answer_format",
    "mentioned_paths",
    "named_tools",
    "text_grammar",
    "turn_grammar",
]

MAX_STRING_CHARS = 2_000  # the local model's answer limit (512 tokens) is about this many characters
MAX_CALLS = 4  # calls in one execute block
_EXECUTE_OPEN, _EXECUTE_CLOSE = "<execute>", "</execute>"
# free text that cannot start an execute block ("<" is allowed when "e" does not follow it)
_TEXT = r"/([^<]|<[^e])*/"
RELATIVE_PATH = r"^(\.|[A-Za-z0-9_][A-Za-z0-9_. /-]*)$"  # no leading '/' or '..': inside the project
_PATH_TOKEN = re.compile(r"(?<![\w./-])([A-Za-z0-9_][\w./-]*(?:\.[A-Za-z][A-Za-z0-9]*|/))(?![\w/-])")


def bounded(schema: Any, max_chars: int = MAX_STRING_CHARS) -> Any:
    """A copy of ``schema`` whose strings all have a ``maxLength`` (required ones ``minLength`` 1)."""
    schema = copy.deepcopy(schema)
    _bound(schema, max_chars, required=False)
    return schema


def _bound(node: Any, max_chars: int, required: bool) -> None:
    if isinstance(node, list):
        for item in node:
            _bound(item, max_chars, required)
        return
    if not isinstance(node, dict):
        return
    kinds = node.get("type")
    if kinds == "string" or (isinstance(kinds, list) and "string" in kinds):
        node.setdefault("maxLength", max_chars)
        if required and "enum" not in node and "const" not in node:
            node.setdefault("minLength", 1)
    needed = set(node.get("required") or ())
    for name, child in (node.get("properties") or {}).items():
        _bound(child, max_chars, name in needed)
    for key in ("items", "anyOf", "oneOf", "allOf", "prefixItems"):
        if key in node:
            _bound(node[key], max_chars, False)


def calls_schema(
    declarations: Sequence[dict[str, Any]], names: Iterable[str] | None = None, paths: Sequence[str] = ()
) -> dict[str, Any]:
    """The schema of an execute block's JSON array: calls of the tools in ``declarations``
    (only ``names`` when given), each ``{"name": <tool>, "args": <its parameters>}``; a ``path``
    argument is one of ``paths`` when given, else a relative path."""
    wanted = set(names) if names is not None else None
    variants = []
    for declaration in declarations:
        function = declaration.get("function", declaration)
        if wanted is not None and function["name"] not in wanted:
            continue
        parameters = bounded(function.get("parameters") or {"type": "object", "properties": {}})
        _constrain_paths(parameters, paths)
        variants.append(
            {
                "type": "object",
                "properties": {"name": {"const": function["name"]}, "args": parameters},
                "required": ["name", "args"],
                "additionalProperties": False,
            }
        )
    if not variants:
        raise ValueError("no tool to call")
    return {"type": "array", "items": {"anyOf": variants}, "minItems": 1, "maxItems": MAX_CALLS}


def _constrain_paths(parameters: dict[str, Any], paths: Sequence[str]) -> None:
    path = (parameters.get("properties") or {}).get("path")
    if isinstance(path, dict) and path.get("type") == "string":
        path.pop("minLength", None)
        path.pop("maxLength", None)
        if paths:
            path.pop("type", None)
            path["enum"] = list(dict.fromkeys(paths))
        else:
            path.update(pattern=RELATIVE_PATH, maxLength=300)


def turn_grammar(
    declarations: Sequence[dict[str, Any]], required: Iterable[str] = (), paths: Sequence[str] = ()
) -> str:
    """The llguidance grammar of one turn with tools: text and at most one execute block, or
    (``required`` tool names) exactly one block calling only those tools, on ``paths``."""
    must = sorted(set(required))
    schema = calls_schema(declarations, must, paths) if must else calls_schema(declarations)
    calls = json.dumps(schema, separators=(",", ":"))
    block = f'"{_EXECUTE_OPEN}" calls "{_EXECUTE_CLOSE}"'
    start = block if must else f"TEXT ({block})?"
    return f"%llguidance {{}}\nstart: {start}\nTEXT: {_TEXT}\ncalls: %json {calls}\n"


def text_grammar() -> str:
    """A turn of text only: no execute block can start (the tool round is over)."""
    return f"%llguidance {{}}\nstart: TEXT\nTEXT: {_TEXT}\n"


def json_answer_format(schema: dict[str, Any], name: str = "answer") -> dict[str, Any]:
    """The ``response_format`` that makes the answer one JSON object of ``schema`` (bounded)."""
    return {"type": "json_schema", "json_schema": {"name": name, "schema": bounded(schema)}}


def named_tools(message: str, names: Iterable[str]) -> list[str]:
    """The tools ``message`` asks for by name: a name with an underscore as a whole word
    (``read_file``), any name in backticks (`` `grep` ``)."""
    found = []
    for name in names:
        quoted = f"`{name}`" in message
        if quoted or ("_" in name and re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", message)):
            found.append(name)
    return found


def mentioned_paths(message: str, known: Iterable[str] = ()) -> list[str]:
    """Paths ``message`` mentions (a name with an extension, or ending in '/'), each also as the
    ``known`` files (the context's) it names: ``app.py`` → ``app.py``, ``src/app.py``."""
    found: list[str] = []
    known = list(known)
    for token in _PATH_TOKEN.findall(message):
        token = token.rstrip(".")
        if not token or token.startswith(".."):
            continue
        found.append(token)
        found.extend(k for k in known if k != token and (k.endswith("/" + token)))
    return list(dict.fromkeys(found))
