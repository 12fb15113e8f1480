"""What the planner, the merge and the judge are asked, and the shapes their answers must have.

Kept in one module so the contract between the pipeline and the models (the plan's JSON shape,
the judge's JSON, how results are cut for the merge) is read in one place. The JSON schemas are
given to providers that can hold their output to one (the local model, through a grammar);
the prompts describe the same shapes in words for the others. Validation
(:mod:`manual_slop.plan.validate`) is the judge of a plan either way.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from manual_slop.mma.errors import MMAError
from manual_slop.mma.planning import find_json_object
from manual_slop.plan.model import Plan, Subtask

__all__ = [
    "MERGE_RESULT_CHARS",
    "SCHEMA_MAX_SUBTASKS",
    "JudgeScore",
    "judge_prompt",
    "judge_schema",
    "merge_prompt",
    "parse_judge",
    "plan_schema",
    "planner_prompt",
    "replan_prompt",
    "subtask_prompt",
    "system_info",
]

MERGE_RESULT_CHARS = 2000  # of each subtask's result, in the merge request
_DEPENDENCY_RESULT_CHARS = 2000  # of each result a subtask depends on, in its own prompt
_PLAN_SHAPE = (
    '{"subtasks": [{"id": "S1", "title": str, "objective": str, "agent_key": str, "engine": str, '
    '"parallel_group": int, "depends_on": [str], "tools"?: [str], "files"?: [str], "notes"?: str}], '
    '"merge": {"strategy": str}}'
)


def system_info() -> dict[str, Any]:
    """What the planner is told about the machine: OS, CPU cores and memory."""
    info: dict[str, Any] = {"os": platform.system().lower() or "unknown", "cpu_cores": os.cpu_count() or 1}
    try:
        import psutil

        info["ram_gb"] = round(psutil.virtual_memory().total / 2**30, 1)
    except Exception:  # psutil is a dependency; a sandbox may still hide the numbers
        info["ram_gb"] = None
    return info


def planner_prompt(
    goal: str,
    *,
    agents: Sequence[Mapping[str, str]],
    engines: Mapping[str, str],
    memory_summary: str,
    info: Mapping[str, Any],
    max_subtasks: int,
) -> str:
    """The planner's request: the goal, who and what can do the work, and the answer's shape.

    ``agents``: ``[{"key", "description"}]``; ``engines``: available engine → what it does."""
    agent_lines = "\n".join(f"- {a['key']}: {a.get('description') or '(no description)'}" for a in agents)
    engine_lines = "\n".join(f"- {name}: {what}" for name, what in engines.items())
    return (
        "You are the task planner of a software workbench. Decompose the goal into subtasks, each "
        "done by one of the agents below on one of the engines below.\n"
        "Rules: ids are short and unique (S1, S2, ...). Subtasks with the same parallel_group run at "
        "the same time; groups run in increasing order, so a subtask may depend (depends_on) only on "
        f"subtasks of earlier groups. Use at most {max_subtasks} subtasks; prefer few, coherent ones. "
        "files lists project paths a subtask changes (the aider engine edits exactly those). The merge "
        "strategy says how the results are combined into the final answer.\n\n"
        f"GOAL: {goal.strip()}\n\n"
        f"AVAILABLE AGENTS:\n{agent_lines or '- (none)'}\n\n"
        f"AVAILABLE ENGINES:\n{engine_lines}\n\n"
        f"CONTEXT:\nMemory: {memory_summary}\nSystem: {json.dumps(dict(info), sort_keys=True)}\n\n"
        f"Answer with only one JSON object of this shape:\n{_PLAN_SHAPE}\n"
    )


def replan_prompt(
    plan: Plan, failed: Subtask, error: str, done: Sequence[Subtask], remaining: Sequence[Subtask]
) -> str:
    """The planner's request after a subtask failed for good: plan the remaining work again."""
    finished = "\n".join(f"- {s.id} ({s.title}): completed" for s in done) or "- (none)"
    left = [
        {"id": s.id, "title": s.title, "objective": s.objective, "agent_key": s.agent_key,
         "engine": s.engine, "parallel_group": s.parallel_group, "depends_on": s.depends_on}
        for s in remaining
    ]  # fmt: skip
    return (
        f"A subtask of the plan for this goal failed: {plan.goal.strip()}\n\n"
        f"Failed: {failed.id} ({failed.title}) on engine {failed.engine}, agent {failed.agent_key}.\n"
        f"Error:\n{error.strip()[:2000]}\n\n"
        f"Completed so far (keep them; new subtasks may depend on their ids):\n{finished}\n\n"
        f"The remaining subtasks, which your answer replaces:\n{json.dumps(left, indent=2)}\n\n"
        "Plan the remaining work again so that it can succeed: change the approach, the agent or the "
        "engine of what failed. Do not reuse the ids of completed subtasks.\n"
        f"Answer with only one JSON object of this shape:\n{_PLAN_SHAPE}\n"
    )


def subtask_prompt(plan: Plan, subtask: Subtask, dependency_results: Mapping[str, str]) -> str:
    """What a subtask's engine is asked: its objective, notes, and the results it builds on."""
    parts = [
        f"Overall goal: {plan.goal.strip()}",
        f"Subtask {subtask.id}: {subtask.title}",
        f"Objective: {subtask.objective.strip()}",
    ]
    if subtask.notes.strip():
        parts.append(f"Notes: {subtask.notes.strip()}")
    if subtask.files:
        parts.append("Files: " + ", ".join(subtask.files))
    for sid, result in dependency_results.items():
        shown = (
            result if len(result) <= _DEPENDENCY_RESULT_CHARS else result[:_DEPENDENCY_RESULT_CHARS] + " …"
        )
        parts.append(f"Result of {sid} (this subtask builds on it):\n{shown}")
    return "\n\n".join(parts) + "\n"


def merge_prompt(goal: str, results: Sequence[tuple[str, str, str]], strategy: str) -> str:
    """The merge request: the goal, each result (id, title, first MERGE_RESULT_CHARS characters)
    and the planner's strategy."""
    blocks = "\n\n".join(f"{sid} ({title}):\n{text[:MERGE_RESULT_CHARS]}" for sid, title, text in results)
    return (
        "Synthesize the results of these subtasks into one coherent final answer.\n\n"
        f"ORIGINAL GOAL: {goal.strip()}\n\n"
        f"SUBTASK RESULTS:\n\n{blocks}\n\n"
        f"MERGE STRATEGY: {strategy.strip() or '(none given)'}\n\n"
        "Write the final answer: say what was accomplished, how the parts fit together, and what "
        "is left to do, if anything.\n"
    )


@dataclass(frozen=True, slots=True)
class JudgeScore:
    """The judge's verdict on a finished plan."""

    score: float
    verdict: str
    reasons: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"score": self.score, "verdict": self.verdict, "reasons": list(self.reasons)}


def judge_schema() -> dict[str, Any]:
    """``{"score": 0-10, "verdict": str, "reasons": [str]}``, strings bounded."""
    return {
        "type": "object",
        "properties": {
            "score": {"type": "integer", "minimum": 0, "maximum": 10},
            "verdict": {"type": "string", "minLength": 1, "maxLength": 200},
            "reasons": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": 200},
                "minItems": 1,
                "maxItems": 5,
            },
        },
        "required": ["score", "verdict", "reasons"],
        "additionalProperties": False,
    }


def judge_prompt(plan: Plan, merged: str) -> str:
    """The judge's request: the goal, what each subtask did, and the merged answer."""
    done = "\n".join(f"- {s.id} ({s.title}): {s.status}" for s in plan.subtasks)
    return (
        "You are the judge of a finished plan. Score how well the final answer achieves the goal.\n\n"
        f"GOAL: {plan.goal.strip()}\n\nSUBTASKS:\n{done}\n\n"
        f"FINAL ANSWER:\n{merged[:8000]}\n\n"
        'Respond ONLY with valid JSON: {"score": 0-10, "verdict": str, "reasons": [str]}\n'
    )


def parse_judge(text: str) -> JudgeScore:
    """The judge's JSON; ValueError saying what is wrong otherwise."""
    try:
        data = find_json_object(text)
    except (MMAError, ValueError) as exc:
        raise ValueError(f"the judge's answer has no JSON object: {exc}") from None
    score = data.get("score")
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 10:
        raise ValueError(f"the judge's score must be a number from 0 to 10, got {score!r}")
    verdict = data.get("verdict")
    if not isinstance(verdict, str) or not verdict.strip():
        raise ValueError(f"the judge's verdict must be a non-empty string, got {verdict!r}")
    reasons = data.get("reasons", [])
    if not isinstance(reasons, list) or not all(isinstance(r, str) for r in reasons):
        raise ValueError(f"the judge's reasons must be a list of strings, got {reasons!r}")
    return JudgeScore(float(score), verdict.strip(), tuple(r.strip() for r in reasons))


SCHEMA_MAX_SUBTASKS = 5  # a plan held to the schema fits the planner's 768 tokens (local model)


def plan_schema(agents: Sequence[str], engines: Sequence[str], max_subtasks: int) -> dict[str, Any]:
    """The plan's JSON schema for a model held to one (the local model, through a grammar): a plan
    valid by construction. The i-th subtask's id is ``S<i>`` and its group is ``i`` (one subtask
    per group, so it may depend on any earlier one: no cycle, no dangling id, no dependency on a
    later group); only known agents and available engines; at most :data:`SCHEMA_MAX_SUBTASKS`
    subtasks and short strings, so the whole answer fits the planner's token limit (a cut answer
    does not decode). Models not held to a schema read the shape in the prompt and may group
    subtasks to run side by side."""
    limit = max(1, min(max_subtasks, SCHEMA_MAX_SUBTASKS))

    def text(low: int, high: int) -> dict[str, Any]:
        return {"type": "string", "minLength": low, "maxLength": high}

    items = []
    for index in range(limit):
        earlier = [f"S{n}" for n in range(1, index + 1)]
        depends_on: dict[str, Any] = (
            {"type": "array", "items": {"enum": earlier}, "maxItems": min(3, len(earlier))}
            if earlier
            else {"type": "array", "maxItems": 0}
        )
        items.append(
            {
                "type": "object",
                "properties": {
                    "id": {"const": f"S{index + 1}"},
                    "title": text(3, 60),
                    "objective": text(10, 200),
                    "agent_key": {"enum": list(agents)} if agents else text(1, 64),
                    "engine": {"enum": list(engines)},
                    "parallel_group": {"const": index + 1},
                    "depends_on": depends_on,
                },
                "required": [
                    "id",
                    "title",
                    "objective",
                    "agent_key",
                    "engine",
                    "parallel_group",
                    "depends_on",
                ],
                "additionalProperties": False,
            }
        )
    return {
        "type": "object",
        "properties": {
            "subtasks": {"type": "array", "prefixItems": items, "minItems": 1, "maxItems": limit},
            "merge": {
                "type": "object",
                "properties": {"strategy": text(5, 150)},
                "required": ["strategy"],
                "additionalProperties": False,
            },
        },
        "required": ["subtasks", "merge"],
        "additionalProperties": False,
    }
