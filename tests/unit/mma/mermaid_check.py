"""A strict checker of the Mermaid subset ``track_to_mermaid`` writes (no Mermaid parser runs
offline without a browser or a download, so the tests check the text against the grammar it
must follow; during development the same outputs passed Mermaid's own flowchart parser).

The grammar, line by line after the header ``flowchart LR``:

- ``%% comment`` (no ``%%{``: that is a config directive wherever it appears)
- ``classDef NAME prop:value,prop:value``
- ``NODE["LABEL"]`` or ``NODE["LABEL"]:::CLASS``, NODE a plain id that is no Mermaid keyword,
  LABEL free of every character that could end the string or be read as syntax, HTML or an
  entity, except entity codes ``#<digits>;``
- ``NODE --> NODE`` between declared nodes

:func:`parse_mermaid` returns the nodes (decoded labels, classes) and the edges, or raises
:class:`MermaidSyntaxError` naming the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

HEADER = "flowchart LR"
KEYWORDS = frozenset(
    "end graph flowchart subgraph style class classDef click linkStyle direction default call "
    "href interpolate TB TD BT RL LR".lower().split()
)
_ID = r"[A-Za-z][A-Za-z0-9_]*"
_LABEL_CHARS = re.compile(r'["\[\]{}|<>`%;&\x00-\x1f\x7f]')
_ENTITY = re.compile(r"#(\d+);")
_COMMENT = re.compile(r"%%(?!\{)[^\n]*")
_STYLE = r"[a-z-]+:[#\w.]+(?: [#\w.]+)*"
_CLASSDEF = re.compile(rf"classDef ({_ID}) ({_STYLE}(?:,{_STYLE})*)")
_NODE = re.compile(rf'({_ID})\["([^"\n]*)"\](?::::({_ID}))?')
_EDGE = re.compile(rf"({_ID}) --> ({_ID})")


class MermaidSyntaxError(AssertionError):
    """The text is not in the checked subset."""


@dataclass
class Flowchart:
    nodes: dict[str, str] = field(default_factory=dict)  # node id -> decoded label
    classes: dict[str, str] = field(default_factory=dict)  # node id -> class
    class_defs: dict[str, str] = field(default_factory=dict)  # class -> style
    edges: list[tuple[str, str]] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)


def decode(label: str) -> str:
    """A label with its entity codes turned back into characters."""
    return _ENTITY.sub(lambda m: chr(int(m.group(1))), label)


def _check_label(label: str, where: str) -> None:
    stray = _ENTITY.sub("", label)
    if "#" in stray:
        raise MermaidSyntaxError(f"{where}: '#' that starts no entity code")
    bad = _LABEL_CHARS.search(stray)
    if bad:
        raise MermaidSyntaxError(f"{where}: {bad.group()!r} in a label")


def parse_mermaid(text: str) -> Flowchart:
    if "%%{" in text:
        raise MermaidSyntaxError("a %%{ directive")
    if not text.endswith("\n"):
        raise MermaidSyntaxError("no final newline")
    lines = text.split("\n")[:-1]
    if not lines or lines[0] != HEADER:
        raise MermaidSyntaxError(f"line 1: expected {HEADER!r}, got {lines[:1]}")
    chart = Flowchart()
    for number, raw in enumerate(lines[1:], start=2):
        where = f"line {number}"
        if not raw.startswith("    ") or raw != raw.rstrip():
            raise MermaidSyntaxError(f"{where}: expected four spaces of indent and no trailing space")
        line = raw[4:]
        if line.startswith("%%"):
            if not _COMMENT.fullmatch(line):
                raise MermaidSyntaxError(f"{where}: bad comment")
            _check_label(line[2:], where)
            chart.comments.append(decode(line[2:].strip()))
        elif line.startswith("classDef "):
            found = _CLASSDEF.fullmatch(line)
            if not found:
                raise MermaidSyntaxError(f"{where}: bad classDef {line!r}")
            chart.class_defs[found.group(1)] = found.group(2)
        elif found := _NODE.fullmatch(line):
            node, label, cls = found.groups()
            if node.lower() in KEYWORDS or node in chart.nodes:
                raise MermaidSyntaxError(f"{where}: node id {node!r} is a keyword or declared twice")
            _check_label(label, where)
            chart.nodes[node] = decode(label)
            if cls is not None:
                if cls not in chart.class_defs:
                    raise MermaidSyntaxError(f"{where}: class {cls!r} has no classDef above")
                chart.classes[node] = cls
        elif found := _EDGE.fullmatch(line):
            head, tail = found.groups()
            missing = [n for n in (head, tail) if n not in chart.nodes]
            if missing:
                raise MermaidSyntaxError(f"{where}: edge to undeclared node(s) {missing}")
            chart.edges.append((head, tail))
        else:
            raise MermaidSyntaxError(f"{where}: not a statement of the subset: {line!r}")
    return chart
