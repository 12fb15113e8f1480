"""Memory end to end: the real AI client against the wire-level OpenAI-compatible fake, the
real store on disk, a real ``kill -9``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from manual_slop.ai import AIClient, RetryPolicy
from manual_slop.memory.store import memory_file_for
from manual_slop.mma.client import AIClientAdapter, TierCaller, TierUsage
from manual_slop.token_profiles import TokenProfiles
from tests.fakes import Call, OpenAIFake, Reply
from tests.helpers import pump_until

KEY = "sk-deepseek-secret"


@pytest.fixture
def fake() -> Iterator[OpenAIFake]:
    with OpenAIFake() as server:
        yield server


def controller(make_controller, fake: OpenAIFake, **settings: object):
    client = AIClient(retry=RetryPolicy(base_delay_s=0.01))
    ctrl = make_controller(backend=client, environ={"DEEPSEEK_API_KEY": KEY})
    ctrl.fields.set("current_provider", "deepseek")
    ctrl.fields.set("provider_base_url", fake.base_url)
    for name, value in settings.items():
        ctrl.fields.set(name, value)
    return ctrl, client


def send(ctrl, text: str) -> str:
    ctrl.fields.set("ai_input", text)
    ctrl.actions.invoke("btn_gen_send")
    pump_until(ctrl, lambda: ctrl.state.ai_status in ("done", "error"), timeout=30)
    assert ctrl.state.ai_status == "done", ctrl.state.ai_response
    ctrl.set_ai_status("idle")
    return ctrl.state.ai_response


def chat(body: dict) -> list[tuple[str, str]]:
    return [(m["role"], str(m.get("content") or "")) for m in body["messages"] if m["role"] != "system"]


def system(body: dict) -> str:
    return "\n".join(str(m.get("content") or "") for m in body["messages"] if m["role"] == "system")


def test_an_mma_tier_call_never_touches_the_discussions_conversation(make_controller, fake) -> None:
    ctrl, client = controller(make_controller, fake)
    fake.push(Reply("Hello Ada."))
    send(ctrl, "My name is Ada.")
    caller = TierCaller(AIClientAdapter(client), TierUsage())
    try:
        fake.push(Reply("ticket done"))
        assert caller.call("Tier 3", "", "Implement ticket T1: add a flag.") == "ticket done"
    finally:
        caller.shutdown()
    fake.push(Reply("You are Ada."))
    send(ctrl, "What is my name?")
    tier_call, follow_up = fake.model_calls()[1].body, fake.model_calls()[2].body
    assert chat(tier_call) == [("user", "Implement ticket T1: add a flag.")]  # a conversation of its own
    assert chat(follow_up) == [
        ("user", "My name is Ada."),
        ("assistant", "Hello Ada."),
        ("user", "What is my name?"),
    ]
    store = ctrl.memory.service.store
    kinds = {c["id"].split(":")[0] for c in store.conversations()}
    assert kinds == {"discussion", "mma"}


WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from manual_slop.ai import AIClient
    from manual_slop.controller import AppController, LaunchOptions

    app_dir, base_url = Path(sys.argv[1]), sys.argv[2]
    ctrl = AppController(app_dir / "config.toml", options=LaunchOptions(headless=True),
                         backend=AIClient(), environ={"DEEPSEEK_API_KEY": "sk-deepseek-secret"})
    ctrl.bind_main_thread()
    ctrl.fields.set("current_provider", "deepseek")
    ctrl.fields.set("provider_base_url", base_url)
    ctrl.fields.set("ai_input", "Remember the number 4711.")
    ctrl.actions.invoke("btn_gen_send")
    deadline = time.monotonic() + 30
    while ctrl.state.ai_status not in ("done", "error") and time.monotonic() < deadline:
        ctrl.run_frame()
        time.sleep(0.01)
    print(ctrl.state.ai_status, flush=True)
    time.sleep(60)  # killed here, before any save
    """
)


def test_a_conversation_continues_identically_after_kill_9(make_controller, app_dir: Path, fake) -> None:
    fake.push(Reply("", [Call("list_directory", {"path": "."})]), Reply("Noted: 4711."))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3] / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(app_dir), fake.base_url],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "done"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()
    before = fake.model_calls()[1].body  # the first exchange's last call, as the killed app sent it
    assert (
        not (app_dir / "manual_slop_history.toml").exists()
        or "4711" not in (app_dir / "manual_slop_history.toml").read_text()
    )  # nothing was saved: only the store has the exchange

    ctrl, _client = controller(make_controller, fake)
    entries = [(e["role"], e["content"]) for e in ctrl.state.discussion_entries()]
    assert entries == [("User", "Remember the number 4711."), ("AI", "Noted: 4711.")]  # store -> view
    fake.push(Reply("It was 4711."))
    assert send(ctrl, "Which number?") == "It was 4711."
    after = fake.model_calls()[2].body
    # the same conversation, tool round included, then the new question
    assert after["messages"][: len(before["messages"])][1:] == before["messages"][1:]
    assert after["messages"][len(before["messages"])]["role"] == "assistant"
    assert chat(after)[-1] == ("user", "Which number?")


def test_compaction_keeps_every_user_message_and_the_prompt_under_budget(make_controller, fake) -> None:
    ctrl, _client = controller(make_controller, fake, memory_budget_tokens=800)
    ctrl.agents.set_token_profile(TokenProfiles("custom", {"summary": 333}))
    words = [f"Question {n}: " + ("why " * 60) for n in range(5)]
    for n, text in enumerate(words):
        if n >= 2:
            fake.push(Reply(f"summary after {n}"))  # the compaction sub-call
        fake.push(Reply(f"Answer {n}: " + ("because " * 60)))
        send(ctrl, text)
    calls = [c.body for c in fake.model_calls()]
    summaries = [b for b in calls if "You compact a conversation" in system(b)]
    assert len(summaries) == 3  # 70 % of the 400 working tokens passed before questions 2, 3, 4
    assert {b["max_tokens"] for b in summaries} == {333}  # the token profile's summary phase
    assert {b["max_tokens"] for b in calls if b not in summaries} == {1024}  # its chat phase
    last = calls[-1]
    sent = json.dumps(last["messages"])
    for text in words:
        assert text.strip() in sent  # every user message survives verbatim
    assert "summary after 4" in sent and "Answer 0" not in sent
    working = sum(len(content) for _, content in chat(last)) / 4
    assert working <= 400  # the working share of the 800-token budget
    store = ctrl.memory.service.store
    assert [e.content for e in store.events("discussion:main") if e.kind == "summary"][
        -1
    ] == "summary after 4"


def test_recall_finds_an_earlier_discussion_and_never_the_current_one(make_controller, fake) -> None:
    ctrl, _client = controller(make_controller, fake)
    fake.push(Reply("The deploy key rotates every Tuesday at noon."))
    send(ctrl, "When does the deploy key rotate?")
    ctrl.actions.invoke("btn_new_discussion", "second")
    fake.push(
        Reply("", [Call("recall", {"query": "deploy key rotation schedule"})]),
        Reply("It rotates on Tuesdays."),
    )
    assert send(ctrl, "Remind me: deploy key rotation?") == "It rotates on Tuesdays."
    result = next(m["content"] for m in fake.model_calls()[-1].body["messages"] if m["role"] == "tool")
    assert "discussion:main" in result and "every Tuesday at noon" in result
    assert "discussion:second" not in result  # never the conversation it runs in


def test_notes_and_profile_reach_the_next_system_prompt_and_leave_when_deleted(make_controller, fake) -> None:
    ctrl, _client = controller(make_controller, fake)
    service = ctrl.memory.service
    note = service.notes.add("The CI runs on Python 3.12 only.", "build")
    service.profile.replace(["Prefers answers under five lines."])
    fake.push(Reply("ok"), Reply("ok again"))
    send(ctrl, "hello")
    first = system(fake.model_calls()[0].body)
    assert "The CI runs on Python 3.12 only." in first and "Prefers answers under five lines." in first
    service.notes.delete(note.id)
    service.profile.replace([])
    send(ctrl, "hello again")
    second = system(fake.model_calls()[1].body)
    assert "Python 3.12" not in second and "five lines" not in second


def test_the_profile_switch_and_learning_sub_call(make_controller, fake) -> None:
    ctrl, client = controller(make_controller, fake, memory_learn_profile=True)
    service = ctrl.memory.service
    fake.push(Reply("Sure, tabs."), Reply("- Prefers tabs over spaces.\n- Works in Rust."))
    send(ctrl, "Indent my Rust with tabs, please.")
    pump_until(ctrl, lambda: len(service.profile.lines()) == 2, timeout=10)
    learning = fake.model_calls()[1].body
    assert "stable preferences" in system(learning) and "Indent my Rust with tabs" in str(learning)
    assert [line.source for line in service.profile.lines()] == ["learned", "learned"]
    assert service.learn_profile("again", client.run_text, ctrl.memory.settings()) == []  # rate-limited
    ctrl.fields.set("memory_profile", False)
    fake.push(Reply("ok"))
    send(ctrl, "hi")
    assert "Prefers tabs" not in system(fake.model_calls()[-1].body)  # switched off: not sent


def test_a_corrupt_store_is_moved_aside_and_a_new_one_started(make_controller, app_dir: Path, fake) -> None:
    target = memory_file_for(app_dir / "manual_slop.toml")
    target.parent.mkdir(parents=True)
    target.write_bytes(b"this is not a database" * 100)
    ctrl, _client = controller(make_controller, fake)
    aside = list(target.parent.glob(target.name + ".corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes().startswith(b"this is not a database")
    assert any("moved aside" in n.message for n in ctrl.state.notifications)
    fake.push(Reply("fine"))
    assert send(ctrl, "still works?") == "fine"


def test_no_known_secret_reaches_the_store_the_index_or_the_next_request(
    make_controller, app_dir: Path, fake
) -> None:
    (app_dir / "settings.py").write_text(f"TOKEN = '{KEY}'\n\ndef load():\n    return TOKEN\n")
    ctrl, _client = controller(make_controller, fake)
    ctrl.fields.set("project_files", ["settings.py"])
    fake.push(
        Reply("", [Call("record_note", {"content": f"the key is {KEY}", "category": "secrets"})]),
        Reply(f"Noted the key {KEY}."),
        Reply("ok"),
    )
    send(ctrl, "Please remember the key.")  # the model repeats the key in a call and in its answer
    send(ctrl, "Thanks.")
    assert KEY not in json.dumps(fake.model_calls()[-1].body)  # history keeps no secret
    assert KEY not in json.dumps(fake.model_calls()[1].body)  # not even within the same send
    ctrl.actions.invoke("btn_rag_index")
    pump_until(
        ctrl, lambda: ctrl.state.rag_status.get("state") == "idle" and ctrl.state.rag_status.get("chunks"), 60
    )
    cache = app_dir / ".slop_cache"
    on_disk = b"".join(p.read_bytes() for p in cache.rglob("*") if p.is_file())
    assert KEY.encode() not in on_disk  # neither the memory store nor the index holds it
    assert b"[REDACTED:" in on_disk
    note = ctrl.memory.service.notes.all()[0]
    assert note.content.startswith("the key is [REDACTED:") and KEY not in note.content
