"""The grammars and schemas that hold the local model's structured output (ai/grammar.py,
mma/schemas.py); the real model under them is in tests/integration/ai/test_local_structure.py."""

from __future__ import annotations

import json
import re

import pytest

from manual_slop.ai.grammar import (
    MAX_CALLS,
    RELATIVE_PATH,
    bounded,
    calls_schema,
    json_answer_format,
    mentioned_paths,
    named_tools,
    text_grammar,
    turn_grammar,
)
from manual_slop.mma.planning import parse_tickets, parse_tracks
from manual_slop.mma.schemas import tickets_schema, tracks_schema
from manual_slop.tools.registry import default_registry

DECLARATIONS = default_registry().declarations("openai")


def strings(node, required=False, out=None):
    """(schema, required?) of every string in a schema."""
    out = [] if out is None else out
    if isinstance(node, dict):
        if node.get("type") == "string":
            out.append((node, required))
        needed = set(node.get("required") or ())
        for name, child in (node.get("properties") or {}).items():
            strings(child, name in needed, out)
        for key in ("items", "anyOf", "prefixItems"):
            if key in node:
                strings(node[key], False, out)
    elif isinstance(node, list):
        for item in node:
            strings(item, required, out)
    return out


def test_every_string_gets_a_bound_and_required_ones_cannot_be_empty() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "b": {"type": "string", "maxLength": 9},
            "c": {"type": "string"},
        },
        "required": ["a"],
    }
    out = bounded(schema, 100)
    assert out["properties"]["a"] == {"type": "string", "maxLength": 100, "minLength": 1}
    assert out["properties"]["b"]["maxLength"] == 9 and "minLength" not in out["properties"]["c"]
    assert "maxLength" not in schema["properties"]["a"]  # a copy: the tool's own schema is untouched


def test_the_calls_schema_lists_every_tool_with_its_bounded_parameters() -> None:
    schema = calls_schema(DECLARATIONS)
    variants = schema["items"]["anyOf"]
    assert [v["properties"]["name"]["const"] for v in variants] == [
        d["function"]["name"] for d in DECLARATIONS
    ]
    assert schema["maxItems"] == MAX_CALLS and schema["minItems"] == 1
    assert all("maxLength" in s or "enum" in s for s, _ in strings(schema))
    read_file = next(v for v in variants if v["properties"]["name"]["const"] == "read_file")
    assert read_file["properties"]["args"]["properties"]["path"]["pattern"] == RELATIVE_PATH


def test_a_forced_turn_calls_only_the_named_tools_on_the_mentioned_paths() -> None:
    grammar = turn_grammar(DECLARATIONS, ["read_file"], ["README.md", "docs/README.md"])
    header, calls = grammar.split("calls: %json ", 1)
    assert 'start: "<execute>" calls "</execute>"\n' in header  # no free text: the block itself
    schema = json.loads(calls)
    (variant,) = schema["items"]["anyOf"]
    assert variant["properties"]["args"]["properties"]["path"] == {
        "description": variant["properties"]["args"]["properties"]["path"]["description"],
        "enum": ["README.md", "docs/README.md"],
    }
    free = turn_grammar(DECLARATIONS)
    assert 'start: TEXT ("<execute>" calls "</execute>")?' in free
    assert "calls" not in text_grammar() and "start: TEXT" in text_grammar()
    with pytest.raises(ValueError, match="no tool"):
        calls_schema(DECLARATIONS, ["no_such_tool"])


@pytest.mark.parametrize(
    ("path", "ok"),
    [
        ("README.md", True),
        ("src/app.py", True),
        (".", True),
        ("/etc/passwd", False),
        ("../x", False),
        ("", False),
    ],
)
def test_a_path_argument_stays_relative(path: str, ok: bool) -> None:
    assert bool(re.fullmatch(RELATIVE_PATH.strip("^$"), path)) is ok


def test_tools_are_named_by_their_own_names_only() -> None:
    names = ["read_file", "grep", "get_tree", "run_shell"]
    assert named_tools("Use read_file on README.md", names) == ["read_file"]
    assert named_tools("how do I grep for a word?", names) == []  # a plain word is not a request
    assert named_tools("run `grep` on src", names) == ["grep"]
    assert named_tools("read_files and x.read_file are not it", names) == []


def test_paths_a_message_mentions_and_the_context_files_they_name() -> None:
    known = ["src/app.py", "docs/README.md", "README.md"]
    assert mentioned_paths("Use read_file on README.md.", known) == ["README.md", "docs/README.md"]
    assert mentioned_paths("see app.py and the tests/ folder, version 1.2", known) == [
        "app.py",
        "src/app.py",
        "tests/",
    ]
    assert mentioned_paths("nothing here", known) == []


def test_a_structured_answer_is_a_json_schema_response_format() -> None:
    schema = tracks_schema()
    fmt = json_answer_format(schema, "tracks")
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "tracks"
    assert all("maxLength" in s for s, _ in strings(fmt["json_schema"]["schema"]))


def test_the_tickets_schema_is_a_dag_by_construction_and_skips_taken_ids() -> None:
    schema = tickets_schema(4, taken=["T1", "T3"], kept=["done_1"])
    items = schema["properties"]["tickets"]["prefixItems"]
    ids = [i["properties"]["id"]["const"] for i in items]
    assert ids == ["T2", "T4", "T5", "T6"]
    for index, item in enumerate(items):
        allowed = item["properties"]["depends_on"].get("items", {}).get("enum", [])
        assert allowed == ["done_1", *ids[:index]]
    # the largest answer the schema allows is one the parser accepts
    tickets = [
        {
            "id": i,
            "description": "do the thing",
            "depends_on": ["done_1", *ids[:n]][:3],
            "priority": "low",
            "target_files": ["src/a.py"],
        }
        for n, i in enumerate(ids)
    ]
    assert [t.id for t in parse_tickets({"tickets": tickets}, ["done_1"])] == ids


def test_the_same_track_twice_is_planned_once() -> None:
    same = {"title": "Add multiply", "description": "calc.py gets multiply", "priority": "high"}
    tracks = parse_tracks({"tracks": [same, {**same, "title": "add MULTIPLY"}, {**same, "title": "Tests"}]})
    assert [t.title for t in tracks] == ["Add multiply", "Tests"]
