"""Repairing, compacting and trimming a conversation."""

from __future__ import annotations

from manual_slop.ai.messages import Message, Role, ToolOutput
from manual_slop.ai.transcript import (
    INTERRUPTED_OUTPUT,
    INTERRUPTED_REPLY,
    REFRESH_MARKER,
    STALE_REFRESH_NOTE,
    Conversation,
    strip_refresh,
    truncate_output,
)
from manual_slop.tools import ToolCall, ToolStatus


def call(n: int) -> ToolCall:
    return ToolCall(f"c{n}", "nap", {"label": str(n)})


def output(n: int, text: str = "done") -> ToolOutput:
    return ToolOutput(f"c{n}", "nap", text)


def roles(conversation: Conversation) -> list[str]:
    return [str(m.role) for m in conversation.messages]


def test_a_valid_history_is_left_alone() -> None:
    conversation = Conversation(
        [
            Message.user("q"),
            Message.assistant("", [call(1)]),
            Message.tool([output(1)]),
            Message.assistant("a"),
        ]
    )
    before = list(conversation.messages)
    assert conversation.repair() == []
    assert conversation.messages == before


def test_calls_interrupted_before_they_ran_get_placeholder_outputs() -> None:
    conversation = Conversation([Message.user("q"), Message.assistant("", [call(1), call(2)])])
    notes = conversation.repair()
    assert roles(conversation) == ["user", "assistant", "tool", "assistant"]
    outputs = conversation.messages[2].tool_outputs
    assert [o.call_id for o in outputs] == ["c1", "c2"]
    assert all(o.content == INTERRUPTED_OUTPUT and o.status is ToolStatus.ERROR for o in outputs)
    assert conversation.messages[3].text == INTERRUPTED_REPLY
    assert any("interrupted call" in n for n in notes)


def test_a_partial_round_is_completed_and_stray_outputs_dropped() -> None:
    conversation = Conversation(
        [
            Message.user("q"),
            Message.assistant("", [call(1), call(2)]),
            Message.tool([output(2), output(9)]),
            Message.assistant("a"),
        ]
    )
    notes = conversation.repair()
    assert [o.call_id for o in conversation.messages[2].tool_outputs] == ["c1", "c2"]
    assert conversation.messages[2].tool_outputs[1].content == "done"
    assert any("matching no call" in n for n in notes)


def test_orphan_outputs_leading_replies_and_unanswered_questions_are_dropped() -> None:
    conversation = Conversation(
        [
            Message.assistant("stray"),
            Message.user("q1"),
            Message.tool([output(1)]),
            Message.assistant("a1"),
            Message.user("q2 never answered"),
        ]
    )
    conversation.repair()
    assert [(str(m.role), m.text) for m in conversation.messages] == [("user", "q1"), ("assistant", "a1")]


def test_two_user_messages_in_a_row_are_merged() -> None:
    conversation = Conversation([Message.user("first"), Message.user("second"), Message.assistant("a")])
    conversation.repair()
    assert [(str(m.role), m.text) for m in conversation.messages] == [
        ("user", "first\n\nsecond"),
        ("assistant", "a"),
    ]


def test_compaction_truncates_old_outputs_and_strips_stale_refreshes_but_keeps_the_latest_round() -> None:
    refresh = f"{REFRESH_MARKER}\n\n### a.py (full content)\nprint(1)"
    conversation = Conversation(
        [
            Message.user("q"),
            Message.assistant("", [call(1)]),
            Message.tool([output(1, "x" * 500 + "\n\n" + refresh)]),
            Message.assistant("", [call(2)]),
            Message.tool([output(2, "y" * 500 + "\n\n" + refresh)]),
        ]
    )
    assert conversation.compact(100) == 1
    old, latest = (
        conversation.messages[2].tool_outputs[0].content,
        conversation.messages[4].tool_outputs[0].content,
    )
    assert old.startswith("x" * 100) and "truncated" in old and REFRESH_MARKER not in old
    assert latest == "y" * 500 + "\n\n" + refresh
    assert conversation.compact(100) == 0  # idempotent


def test_once_the_user_asks_again_the_last_round_is_old_too() -> None:
    conversation = Conversation(
        [
            Message.user("q"),
            Message.assistant("", [call(1)]),
            Message.tool([output(1, "z" * 300)]),
            Message.assistant("a"),
            Message.user("next"),
        ]
    )
    conversation.compact(50)
    assert "truncated" in conversation.messages[2].tool_outputs[0].content


def test_trim_drops_whole_exchanges_oldest_first() -> None:
    conversation = Conversation()
    for n in range(5):
        conversation.add(Message.user(f"q{n} " + "u" * 400))
        conversation.add(Message.assistant("", [call(n)]))
        conversation.add(Message.tool([output(n, "o" * 400)]))
        conversation.add(Message.assistant(f"a{n}"))
    assert conversation.trim(trigger_tokens=10_000, target_tokens=10_000) == 0
    dropped = conversation.trim(trigger_tokens=600, target_tokens=500)
    assert dropped % 4 == 0 and dropped >= 4
    assert conversation.messages[0].role is Role.USER
    for index, message in enumerate(conversation.messages):
        if message.role is Role.TOOL:  # never separated from its call
            assert conversation.messages[index - 1].tool_calls[0].id == message.tool_outputs[0].call_id
    assert conversation.messages[-1].text == "a4"


def test_trim_always_keeps_the_latest_exchange() -> None:
    conversation = Conversation([Message.user("q" * 10_000), Message.assistant("a")])
    assert conversation.trim(trigger_tokens=10, target_tokens=10) == 0
    assert len(conversation) == 2


def test_text_helpers() -> None:
    assert truncate_output("abc", 5) == "abc"
    assert truncate_output("abcdefgh", 3).startswith("abc\n[... 5 more characters")
    assert strip_refresh("out") == "out"
    assert strip_refresh(f"out\n{REFRESH_MARKER}\nfiles") == f"out\n\n{STALE_REFRESH_NOTE}"
