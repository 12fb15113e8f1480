"""Shared pieces of the /plan tests: fixture agents and a fake provider that answers by content."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.fakes import OpenAIFake, Recorded, Reply, Turn
from tests.integration.hooks.conftest import hook_app_factory  # noqa: F401  (the fixture)

ARCHITECT = {
    "system_prompt": "You are the architect agent. Design before code.",
    "description": "System design",
}
CODER = {
    "system_prompt": "You are the coder agent. Write small, tested code.",
    "description": "Writes code",
    "tools": ["read_file", "list_directory"],
    "memory_categories": ["python"],
}
PLAN = {
    "subtasks": [
        {"id": "S1", "title": "Design the API", "objective": "Define the REST endpoints and their schema",
         "agent_key": "architect", "engine": "llm", "parallel_group": 1, "depends_on": []},
        {"id": "S2", "title": "Implement routes", "objective": "Code the routes for the endpoints",
         "agent_key": "coder", "engine": "llm", "parallel_group": 2, "depends_on": ["S1"]},
        {"id": "S3", "title": "Write tests", "objective": "Write pytest tests for the endpoints",
         "agent_key": "coder", "engine": "llm", "parallel_group": 2, "depends_on": ["S1"]},
    ],
    "merge": {"strategy": "Combine schema, code and tests into one answer"},
}  # fmt: skip


def text_of(request: Recorded) -> str:
    """Every message of an OpenAI-shaped request as one text."""
    body = request.body if isinstance(request.body, dict) else {}
    return "\n".join(str(m.get("content") or "") for m in body.get("messages", []))


def last_user(request: Recorded) -> str:
    body = request.body if isinstance(request.body, dict) else {}
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return str(users[-1].get("content") or "") if users else ""


def phase_of(request: Recorded) -> str:
    """Which call of a plan ``request`` is (by what it asks)."""
    user = last_user(request)
    if "You are the task planner" in user or "Your plan was rejected" in user:
        return "planner"
    if user.startswith("Synthesize the results"):
        return "merge"
    if "You are the judge" in user:
        return "judge"
    if user.startswith("Overall goal:"):
        return "execution"
    return "other"


Responder = Callable[[Recorded], Turn | None]


def scripted(answers: dict[str, Any]) -> Responder:
    """A responder: ``answers`` maps a phase or ``subtask:<id>`` to a Turn (or a list used in order)."""
    used: dict[str, int] = {}

    def respond(request: Recorded) -> Turn | None:
        phase = phase_of(request)
        key = phase
        if phase == "execution":
            user = last_user(request)
            key = "subtask:" + user.split("Subtask ", 1)[1].split(":", 1)[0]
        answer = answers.get(key)
        if isinstance(answer, list):
            index = used.get(key, 0)
            used[key] = index + 1
            answer = answer[min(index, len(answer) - 1)]
        return answer

    return respond


def plan_reply(plan: dict[str, Any] = PLAN) -> Reply:
    return Reply("Here is the plan:\n```json\n" + json.dumps(plan) + "\n```")


@pytest.fixture
def fake() -> Iterator[OpenAIFake]:
    with OpenAIFake() as server:
        yield server
