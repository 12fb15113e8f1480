"""Skills end to end: a send through the real request path (controller, AI client, tool loop)
against the wire-level OpenAI-compatible fake; the captured requests show what the model saw."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from manual_slop.ai import AIClient, RetryPolicy
from tests.fakes import Call, OpenAIFake, Reply
from tests.helpers import pump_until

KEY = "sk-deepseek-secret"
MARKER = "BODY-MARKER-7f3a9c"  # only in the skill's body
DESCRIPTION = "Release checklist (tag, changelog, publish); use it before any release."


def write_skill(
    root: Path, name: str, front: str, body: str = "", files: dict[str, str] | None = None
) -> Path:
    folder = root / "skills" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\n{front}\n---\n{body}", encoding="utf-8")
    for relative, text in (files or {}).items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def fake() -> Iterator[OpenAIFake]:
    with OpenAIFake() as server:
        yield server


@pytest.fixture
def ctrl(make_controller, app_dir: Path, fake: OpenAIFake):
    write_skill(
        app_dir,
        "release",
        f"name: release\ndescription: {DESCRIPTION}",
        f"# Releasing\n\nStep one: {MARKER}\n",
        {"reference/tags.md": "tag names are vX.Y.Z"},
    )
    write_skill(app_dir, "broken", "name: [unclosed")
    controller = make_controller(
        backend=AIClient(retry=RetryPolicy(base_delay_s=0.01)), environ={"DEEPSEEK_API_KEY": KEY}
    )
    controller.fields.set("current_provider", "deepseek")
    controller.fields.set("provider_base_url", fake.base_url)
    return controller


def send(ctrl, text: str) -> str:
    ctrl.fields.set("ai_input", text)
    ctrl.actions.invoke("btn_gen_send")
    pump_until(ctrl, lambda: ctrl.state.ai_status in ("done", "error"), timeout=30)
    assert ctrl.state.ai_status == "done", ctrl.state.ai_response
    ctrl.set_ai_status("idle")
    return ctrl.state.ai_response


def test_a_skills_body_reaches_the_model_only_after_get_skill(ctrl, fake) -> None:
    fake.push(
        Reply(calls=[Call("get_skill", {"name": "release"})]),
        Reply(calls=[Call("get_skill", {"name": "release", "file": "reference/tags.md"})]),
        Reply("done releasing"),
    )
    assert send(ctrl, "cut a release") == "done releasing"
    first, second, third = (json.dumps(call.body) for call in fake.model_calls())
    assert f"release: {DESCRIPTION}" in first and "get_skill" in first
    assert MARKER not in first
    assert "broken" not in first  # an invalid skill is never offered
    assert MARKER in second  # the tool result carried the body
    assert "reference/tags.md" in second and "tag names are vX.Y.Z" in third
    calls = [c for c in ctrl.state.tool_calls if c.get("tool") == "get_skill" or c.get("name") == "get_skill"]
    assert len(calls) == 2


def test_a_disabled_skill_is_neither_listed_nor_loadable(ctrl, fake) -> None:
    ctrl.actions.invoke("btn_skill_enable", {"name": "release", "enabled": False})
    fake.push(Reply(calls=[Call("get_skill", {"name": "release"})]), Reply("ok"))
    send(ctrl, "cut a release")
    first, second = (json.dumps(call.body) for call in fake.model_calls())
    assert DESCRIPTION not in first and "Available skills" not in first
    assert "no enabled skill named 'release'" in second and MARKER not in second
