"""The loop guard's pieces: the canonical call key, the limits, the counting rules."""

from __future__ import annotations

import pytest

from manual_slop.ai.loop_guard import GuardLimits, RepeatGuard, call_key, refusal_text
from manual_slop.ai.messages import Message, ToolOutput
from manual_slop.tools.tool import ToolCall, ToolStatus


def test_calls_written_differently_have_one_key() -> None:
    assert call_key("read_file", {"path": "a.py"}) == call_key("read_file", {"path": " ./a.py"})
    assert call_key("read_file", {"path": "src\\a.py"}) == call_key("read_file", {"path": "src/x/../a.py"})
    assert call_key("grep", {"a": 1, "b": 2.0}) == call_key("grep", {"b": 2, "a": 1})
    assert call_key("grep", {"pattern": "./x"}) != call_key("grep", {"pattern": "x"})  # not a path
    assert call_key("read_file", {"path": "a.py"}) != call_key("list_directory", {"path": "a.py"})


@pytest.mark.parametrize("bad", [{"warn_at": -1}, {"refuse_at": 1.5}, {"warn_at": True}])
def test_limits_must_be_whole_numbers(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="must be a whole number"):
        GuardLimits(**bad)  # type: ignore[arg-type]


def test_seeding_pairs_each_round_with_its_own_outputs() -> None:
    """Providers reuse call ids across sends: a round's outputs are read from the next message."""
    call = ToolCall("call_0", "read_file", {"path": "a"})
    history = [
        Message.user("one"),
        Message.assistant("", [call]),
        Message.tool([ToolOutput("call_0", "read_file", "first")]),
        Message.user("two"),
        Message.assistant("", [call]),
        Message.tool([ToolOutput("call_0", "read_file", "second")]),
    ]
    guard = RepeatGuard(GuardLimits(), lambda name: False)
    guard.seed(history)
    check = guard.check(call)
    assert (check.count, check.refuse, check.previous) == (3, True, "second")


def test_a_refusal_quotes_at_most_2000_characters() -> None:
    text = refusal_text("read_file", 3, "x" * 5_000)
    assert "x" * 2_000 in text and "x" * 2_001 not in text and "(3000 more characters)" in text


def test_a_failed_change_does_not_reset_the_counts() -> None:
    guard = RepeatGuard(GuardLimits(), lambda name: name == "write_file")
    write = ToolCall("1", "write_file", {"path": "a", "content": "x"})
    read = ToolCall("2", "read_file", {"path": "a"})
    guard.check(read)
    guard.record(read, ToolOutput("2", "read_file", "a"))
    guard.check(write)
    guard.record(write, ToolOutput("1", "write_file", "denied", ToolStatus.DENIED))
    assert guard.check(read).warn
