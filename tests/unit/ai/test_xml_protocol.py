"""The XML tool protocol parser: markers split across tokens, JSON strings, malformed blocks."""

from __future__ import annotations

import json

import pytest

from manual_slop.ai.messages import Message, ToolOutput
from manual_slop.ai.xml_protocol import (
    EventKind,
    ParsedTurn,
    StreamParser,
    parse_text,
    protocol_prompt,
    render_results,
    render_text_messages,
)
from manual_slop.tools import ToolCall, ToolStatus

TURN = (
    "<think>I should read it.</think>Reading the file now. "
    '<execute>[{"name": "read_file", "args": {"path": "a.py"}}, '
    '{"name": "grep", "args": {"pattern": "x</execute>y", "path": "."}}]</execute>'
    "this text comes after the block and is never seen"
)


def feed_split(text: str, cuts: list[int]) -> ParsedTurn:
    parser, turn = StreamParser(), ParsedTurn()
    start = 0
    for cut in [*cuts, len(text)]:
        turn.apply(parser.feed(text[start:cut]))
        start = cut
    turn.apply(parser.finish())
    return turn


def test_a_whole_turn_parses_into_text_thinking_and_calls() -> None:
    turn = parse_text(TURN)
    assert turn.text == "Reading the file now."
    assert turn.thinking == "I should read it."
    assert [(c.name, c.args) for c in turn.calls] == [
        ("read_file", {"path": "a.py"}),
        ("grep", {"pattern": "x</execute>y", "path": "."}),  # the marker inside a JSON string is content
    ]
    assert turn.errors == []


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 11])
def test_every_token_size_gives_the_same_result(size: int) -> None:
    expected = parse_text(TURN)
    turn = feed_split(TURN, list(range(size, len(TURN), size)))
    assert (turn.text.strip(), turn.thinking, turn.calls, turn.errors) == (
        expected.text,
        expected.thinking,
        expected.calls,
        expected.errors,
    )


def test_every_single_cut_position_gives_the_same_calls() -> None:
    expected = parse_text(TURN).calls
    for cut in range(1, len(TURN)):
        assert feed_split(TURN, [cut]).calls == expected, cut


def test_text_that_only_looks_like_a_marker_is_shown() -> None:
    turn = feed_split("a < b and <exe is not a tag, nor <executed>", [3, 12, 13, 30])
    assert turn.text == "a < b and <exe is not a tag, nor <executed>"
    assert turn.calls == []


def test_the_parser_is_done_after_the_block_so_generation_can_stop() -> None:
    parser = StreamParser()
    assert not parser.done
    parser.feed('<execute>[{"name": "x", "args": {}}]</exe')
    assert not parser.done
    events = parser.feed("cute> more")
    assert parser.done and [e.kind for e in events] == [EventKind.CALLS]
    assert parser.feed("ignored") == []


def test_a_model_writing_results_itself_ends_its_turn() -> None:
    parser = StreamParser()
    events = parser.feed("Done. <results>[fake]</results>")
    assert [e.kind for e in events] == [EventKind.TEXT, EventKind.RESULTS] and parser.done


@pytest.mark.parametrize(
    ("block", "problem"),
    [
        ("<execute>[{oops}]</execute>", "not valid JSON"),
        ('<execute>{"nothing": 1}</execute>', '"name"'),
        ("<execute>[]</execute>", "JSON array"),
        ('<execute>[{"name": "x", "args": [1]}]</execute>', '"args" must be an object'),
        ('<execute>[{"name": "x"', "never closed"),
    ],
)
def test_malformed_blocks_become_errors_not_exceptions(block: str, problem: str) -> None:
    turn = parse_text(block)
    assert turn.calls == [] and len(turn.errors) == 1 and problem in turn.errors[0]


def test_a_single_call_object_is_accepted() -> None:
    assert [c.name for c in parse_text('<execute>{"name": "x", "args": {}}</execute>').calls] == ["x"]


def test_rendering_round_trips_through_the_parser() -> None:
    calls = [ToolCall("c1", "read_file", {"path": "a.py"})]
    messages = [
        Message.user("read a.py"),
        Message.assistant("Sure.", calls),
        Message.tool([ToolOutput("c1", "read_file", "print('</results>')", ToolStatus.SUCCESS)]),
        Message.assistant("It prints."),
    ]
    rendered = render_text_messages(messages)
    assert [m["role"] for m in rendered] == ["user", "assistant", "user", "assistant"]
    assert [(c.name, c.args) for c in parse_text(rendered[1]["content"]).calls] == [
        ("read_file", {"path": "a.py"})
    ]
    results = rendered[2]["content"]
    assert results.startswith("<results>") and results.endswith("</results>")
    payload = json.loads(results[len("<results>") : -len("</results>")])
    assert payload == [
        {"tool": "read_file", "id": "c1", "status": "success", "content": "print('</results>')"}
    ]
    assert render_results([]) == "<results>[]</results>"


def test_the_protocol_prompt_lists_every_tool() -> None:
    prompt = protocol_prompt(
        [
            {
                "type": "function",
                "function": {"name": "nap", "description": "Sleep.", "parameters": {"type": "object"}},
            }
        ]
    )
    assert "<execute>" in prompt and "- nap: Sleep." in prompt and '"type":"object"' in prompt
