"""Agent profiles and token profiles end to end: the real AI client against the wire-level
OpenAI-compatible fake, commands typed in the message box and sent over the Hook API."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from manual_slop.ai import AIClient, RetryPolicy
from manual_slop.automation import InvalidValue
from tests.fakes import OpenAIFake, Reply
from tests.helpers import pump_until

KEY = "sk-deepseek-secret"


@pytest.fixture
def fake() -> Iterator[OpenAIFake]:
    with OpenAIFake() as server:
        yield server


def controller(make_controller, fake: OpenAIFake):
    ctrl = make_controller(
        backend=AIClient(retry=RetryPolicy(base_delay_s=0.01)), environ={"DEEPSEEK_API_KEY": KEY}
    )
    ctrl.fields.set("current_provider", "deepseek")
    ctrl.fields.set("provider_base_url", fake.base_url)
    return ctrl


def send(ctrl, text: str) -> str:
    ctrl.fields.set("ai_input", text)
    ctrl.actions.invoke("btn_gen_send")
    pump_until(ctrl, lambda: ctrl.state.ai_status in ("done", "error"), timeout=30)
    assert ctrl.state.ai_status == "done", ctrl.state.ai_response
    ctrl.set_ai_status("idle")
    return ctrl.state.ai_response


def system(body: dict) -> str:
    return "\n".join(str(m.get("content") or "") for m in body["messages"] if m["role"] == "system")


def test_the_active_agent_shapes_every_chat_request(make_controller, fake) -> None:
    ctrl = controller(make_controller, fake)
    ctrl.fields.set("system_prompt", "Project rule: tabs.")
    ctrl.agents.save(
        "coder",
        {
            "system_prompt": "You are the coder agent.",
            "tools": ["read_file", "list_directory"],
            "memory_categories": ["python"],
            "model": "coder-model",
        },
    )
    notes = ctrl.memory.service.notes
    notes.add("Use pytest fixtures for setup.", "python")
    notes.add("Colours come from the theme file.", "css")
    fake.push(Reply("plain"), Reply("as coder"))
    send(ctrl, "hello")  # no agent yet: everything as before, the chat limit of the profile
    plain = fake.model_calls()[0].body
    assert plain["max_tokens"] == 1024 and plain["model"] != "coder-model"
    assert "coder agent" not in system(plain) and "Colours come from" in system(plain)
    assert len(plain["tools"]) > 2

    assert "Active agent: coder" in send(ctrl, "/agent coder")
    assert len(fake.model_calls()) == 1  # a command is not sent to any model
    assert send(ctrl, "hello again") == "as coder"
    body = fake.model_calls()[1].body
    assert "## System Prompt\n\nYou are the coder agent.\n\nProject rule: tabs." in system(body)  # role first
    assert system(body).count("Project rule: tabs.") == 1
    assert body["model"] == "coder-model"
    assert sorted(t["function"]["name"] for t in body["tools"]) == ["list_directory", "read_file"]
    assert "pytest fixtures" in system(body) and "Colours come from" not in system(body)  # its categories
    assert [e["content"] for e in ctrl.state.discussion_entries()].count("/agent coder") == 0


def test_token_commands_set_each_requests_max_tokens(make_controller, fake) -> None:
    ctrl = controller(make_controller, fake)
    ctrl.fields.set("max_tokens", 3000)
    shown = send(ctrl, "/tokens")
    assert "Token profile: balanced" in shown and "- chat: 1,024" in shown
    send(ctrl, "/extreme")
    fake.push(Reply("a"), Reply("b"), Reply("c"))
    send(ctrl, "one")
    assert fake.model_calls()[0].body["max_tokens"] == 3000  # extreme's 16,384, capped by ai.max_tokens
    assert "- chat: 700" in send(ctrl, "/tokens chat 700")
    assert ctrl.fields.get("token_profile") == "custom"
    send(ctrl, "two")
    assert fake.model_calls()[1].body["max_tokens"] == 700
    ctrl.fields.set("token_profile", "balanced")
    send(ctrl, "three")
    assert fake.model_calls()[2].body["max_tokens"] == 1024


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("/agent nobody", "no agent 'nobody'"),
        ("/tokens huge", "expected a profile"),
        ("/tokens chat 3", "from 16"),
        ("/extreme now", "takes no arguments"),
    ],
)
def test_bad_commands_change_nothing_and_say_why(make_controller, fake, command: str, message: str) -> None:
    ctrl = controller(make_controller, fake)
    before = (ctrl.state.active_agent, ctrl.state.token_profile, dict(ctrl.state.token_custom))
    ctrl.fields.set("ai_input", command)
    with pytest.raises(InvalidValue, match=message):
        ctrl.actions.invoke("btn_gen_send")
    assert (ctrl.state.active_agent, ctrl.state.token_profile, dict(ctrl.state.token_custom)) == before
    assert fake.model_calls() == []


def test_a_message_that_only_starts_with_a_slash_is_sent(make_controller, fake) -> None:
    ctrl = controller(make_controller, fake)
    fake.push(Reply("it is a folder"))
    assert send(ctrl, "/usr/bin is what?") == "it is a folder"
    assert fake.model_calls()[0].body["messages"][-1]["content"] == "/usr/bin is what?"


def test_a_deleted_active_agent_stops_applying(make_controller, fake) -> None:
    ctrl = controller(make_controller, fake)
    ctrl.agents.save("reviewer", {"system_prompt": "You review."})
    send(ctrl, "/agent reviewer")
    ctrl.agents.delete("reviewer")
    assert ctrl.state.active_agent == ""
    fake.push(Reply("ok"))
    send(ctrl, "hi")
    assert "You review." not in system(fake.model_calls()[0].body)


def test_summaries_and_compaction_answer_within_the_summary_limit(make_controller, fake) -> None:
    ctrl = controller(make_controller, fake)
    ctrl.fields.set("max_tokens", 4000)
    send(ctrl, "/tokens summary 300")
    settings = ctrl.ai_settings()
    assert settings["summary_max_tokens"] == 300
    client = ctrl.backend
    client.apply_settings(settings)
    fake.push(Reply("a summary"), Reply("a file summary"), Reply("--- a/x\n+++ b/x\n"))
    assert client.run_discussion_compression("User: hi\n\nAI: hello") == "a summary"
    client.run_subagent_summarization("a.py", "x = 1\n", True, "")
    client.run_tier4_patch_generation("boom", "x.py")
    limits = [call.body["max_tokens"] for call in fake.model_calls()]
    assert limits == [300, 300, 4000]  # a patch is no summary: it keeps the model's full room
    send(ctrl, "/tokens balanced")
    assert ctrl.ai_settings()["summary_max_tokens"] == 1024
