"""The planner's reply: find its JSON, check every rule, build a :class:`~manual_slop.plan.model.Plan`.

A reply is checked completely before anything is built, and every broken rule is
reported (not just the first), so one retry can fix them all: :func:`issues_text` is
what goes back to the planner. Each issue names its subtask and its rule from
:data:`RULES`, the public table of rule names.

Groups run in order and a group's subtasks run side by side, so a subtask may depend
only on subtasks of earlier groups.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from manual_slop.mma.models import ID_PATTERN
from manual_slop.plan.model import Plan, PlanError, Subtask

__all__ = [
    "PLANNER_KEYS",
    "RULES",
    "PlanInvalid",
    "PlanIssue",
    "build_plan",
    "issues_text",
    "parse_plan_reply",
    "validate_plan",
]

RULES: dict[str, str] = {
    "shape": (
        'the top level is an object with a non-empty "subtasks" list of objects and a "merge" object '
        'with a string "strategy"'
    ),
    "required": (
        "each subtask has id, title, objective, agent_key, engine, parallel_group and depends_on; "
        "text fields are not empty"
    ),
    "type": (
        "each field has its JSON type: text fields are strings, depends_on, tools and files are lists "
        "of strings, notes is a string"
    ),
    "id_format": "ids are 1-64 letters, digits, '_', '.', ':' or '-', starting with a letter or digit",
    "duplicate_id": "no two subtasks share an id",
    "unknown_agent": "agent_key names one of the available agents",
    "unknown_engine": "engine names one of the known engines",
    "engine_unavailable": "the engine is installed and usable here (the message gives the reason it is not)",
    "group_integer": "parallel_group is an integer >= 1 (booleans and fractions are refused)",
    "dangling_dependency": "every id in depends_on names a subtask of the plan",
    "cycle": "dependencies do not form a cycle (a subtask depending on itself is one)",
    "dependency_order": "a subtask depends only on subtasks of earlier groups",
    "too_many_subtasks": "the plan has no more subtasks than the configured maximum",
}

_TEXT_KEYS = ("id", "title", "objective", "agent_key", "engine")
PLANNER_KEYS = (*_TEXT_KEYS, "parallel_group", "depends_on", "tools", "notes", "files")
_PREVIEW = 80


@dataclass(frozen=True, slots=True)
class PlanIssue:
    """One broken rule. ``subtask``: the id as the planner wrote it, ``#n`` (1-based position)
    for a subtask without a usable id, None for the plan as a whole."""

    subtask: str | None
    rule: str
    message: str  # names the subtask, says what is wrong, ends with " [rule: <rule>]"


class PlanInvalid(PlanError):
    """A planner's reply broke validation rules; ``issues`` lists every one."""

    def __init__(self, issues: Sequence[PlanIssue], reply: str = "") -> None:
        self.issues: list[PlanIssue] = list(issues)
        self.reply = reply  # the planner's answer as given, when there was one
        super().__init__("\n".join(issue.message for issue in self.issues))


# -- finding the JSON --------------------------------------------------------------------------
def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= _PREVIEW else flat[:_PREVIEW] + "…")


def _object_end(text: str, start: int) -> int:
    """Index just past the '}' closing the '{' at ``start``, or len(text) when it never closes."""
    depth, in_string, escaped = 0, False, False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index + 1
    return len(text)


def parse_plan_reply(text: str) -> dict[str, Any]:
    """The plan object in a planner's reply, inside Markdown fences or prose; PlanError otherwise.

    Only top-level objects count: a broken object is skipped whole. (mma's
    ``find_json_object`` would return the first subtask of a plan cut off mid-reply, which
    then reads as a misleading shape error.) Fences need no stripping: reading starts at a
    '{' and stops at its closing '}'. The first object with "subtasks" wins, else the first.
    """
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    first_error: json.JSONDecodeError | None = None
    start = text.find("{")
    while start != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            first_error = first_error or exc
            end = _object_end(text, start)
        else:
            if "subtasks" in value:
                return value
            found.append(value)
        start = text.find("{", end)
    if found:
        return found[0]
    if first_error is not None:
        where = f"{first_error.msg} at line {first_error.lineno} column {first_error.colno}"
        raise PlanError(
            f"the planner's reply has a JSON object that does not decode ({where}): {_preview(text)}"
        )
    raise PlanError(f"the planner's reply contains no JSON object: {_preview(text)}")


# -- validation --------------------------------------------------------------------------------
@dataclass(slots=True)
class _Entry:
    """What the graph checks need from one subtask object."""

    position: int
    id: str | None  # None when missing, blank or not a string
    group: int | None  # None when not a valid group
    depends_on: list[str] = field(default_factory=list)  # the string entries, without repeats

    @property
    def key(self) -> str:
        return self.id if self.id is not None else f"#{self.position + 1}"

    @property
    def label(self) -> str:
        if self.id is None:
            return f"subtask #{self.position + 1}"
        return f"subtask {self.id if re.fullmatch(ID_PATTERN, self.id) else repr(self.id)}"


def _issue(subtask: str | None, label: str, rule: str, text: str) -> PlanIssue:
    assert rule in RULES, rule  # a typo here would publish a rule the docs do not list
    return PlanIssue(subtask, rule, f"{label}: {text} [rule: {rule}]")


def _names(values: Iterable[str]) -> str:
    return ", ".join(sorted(values)) or "none"


def _show(value: object) -> str:
    """A field's value as the planner wrote it (JSON), shortened."""
    shown = json.dumps(value, ensure_ascii=False, default=repr)
    return shown if len(shown) <= 60 else shown[:60] + "…"


def _shape(data: object, issues: list[PlanIssue]) -> list[object] | None:
    """The subtasks list when the top level is usable; shape issues otherwise."""
    if not isinstance(data, Mapping):
        text = f"the reply must be a JSON object, got {type(data).__name__}"
        issues.append(_issue(None, "plan", "shape", text))
        return None
    merge = data.get("merge")
    if not isinstance(merge, Mapping) or not isinstance(merge.get("strategy"), str):
        text = 'the reply needs a "merge" object with a string "strategy"'
        issues.append(_issue(None, "plan", "shape", text))
    subtasks = data.get("subtasks")
    if not isinstance(subtasks, list) or not subtasks:
        issues.append(_issue(None, "plan", "shape", 'the reply needs a non-empty "subtasks" list'))
        return None
    return subtasks


def _fields(
    position: int,
    item: Mapping[str, Any],
    agents: Collection[str],
    engines: Mapping[str, str | None],
    issues: list[PlanIssue],
) -> _Entry:
    """Check one subtask's own fields; return what the graph checks need."""
    raw_id = item.get("id")
    entry = _Entry(position, raw_id if isinstance(raw_id, str) and raw_id.strip() else None, None)
    key, label = entry.key, entry.label

    def report(rule: str, text: str) -> None:
        issues.append(_issue(key, label, rule, text))

    given: dict[str, str] = {}  # the usable text fields
    for name in _TEXT_KEYS:
        value = item.get(name)
        if value is None:
            report("required", f'"{name}" is required but missing')
        elif not isinstance(value, str):
            report("type", f'"{name}" must be a string, got {type(value).__name__}')
        elif not value.strip():
            report("required", f'"{name}" is required but empty')
        else:
            given[name] = value
    if "id" in given and not re.fullmatch(ID_PATTERN, given["id"]):
        report("id_format", f"the id {given['id']!r} is not valid: {RULES['id_format']}")
    agent = given.get("agent_key")
    if agent is not None and agent not in agents:
        report("unknown_agent", f"agent_key {agent!r} names no available agent (available: {_names(agents)})")
    engine = given.get("engine")
    if engine is not None and engine not in engines:
        report("unknown_engine", f"engine {engine!r} is not a known engine (known: {_names(engines)})")
    elif engine is not None and engines[engine] is not None:
        report("engine_unavailable", f"engine {engine!r} is known but not available: {engines[engine]}")

    group = item.get("parallel_group")
    if group is None:
        report("required", '"parallel_group" is required but missing')
    elif isinstance(group, bool) or not isinstance(group, int) or group < 1:
        report("group_integer", f"parallel_group must be an integer >= 1, got {_show(group)}")
    else:
        entry.group = group

    depends_on = item.get("depends_on")
    if depends_on is None:
        report("required", '"depends_on" is required but missing (use [] for none)')
    elif not isinstance(depends_on, list) or not all(isinstance(d, str) for d in depends_on):
        report("type", f'"depends_on" must be a list of subtask ids (strings), got {_show(depends_on)}')
    if isinstance(depends_on, list):
        entry.depends_on = list(dict.fromkeys(d for d in depends_on if isinstance(d, str)))

    tools = item.get("tools")
    if tools is not None and (not isinstance(tools, list) or not all(isinstance(t, str) for t in tools)):
        report("type", f'"tools" must be a list of tool names (strings), got {_show(tools)}')
    files = item.get("files")
    if files is not None and (not isinstance(files, list) or not all(isinstance(f, str) for f in files)):
        report("type", f'"files" must be a list of project paths (strings), got {_show(files)}')
    notes = item.get("notes")
    if notes is not None and not isinstance(notes, str):
        report("type", f'"notes" must be a string, got {type(notes).__name__}')
    return entry


def _cycles(deps: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """Dependency cycles as ``[a, b, ..., a]`` (a depends on b), one per back edge of a depth-first
    walk, each starting at its member that comes first in ``deps``."""
    order = {node: index for index, node in enumerate(deps)}
    grey, black = 1, 2
    colour: dict[str, int] = {}
    cycles: list[list[str]] = []
    for root in deps:
        if root in colour:
            continue
        path, stack = [root], [iter(deps[root])]
        colour[root] = grey
        while stack:
            dep = next(stack[-1], None)
            if dep is None:
                colour[path.pop()] = black
                stack.pop()
            elif colour.get(dep) == grey:
                members = path[path.index(dep) :]
                first = min(range(len(members)), key=lambda i: order[members[i]])
                members = members[first:] + members[:first]
                cycles.append([*members, members[0]])
            elif dep not in colour:
                colour[dep] = grey
                path.append(dep)
                stack.append(iter(deps[dep]))
    return cycles


def _graph(entries: list[_Entry], issues: list[PlanIssue], done: Collection[str] = ()) -> None:
    """Duplicate ids, dangling dependencies, dependency order and cycles. ``done``: subtasks kept
    from an earlier run of the plan (a replan's new subtasks may depend on them, never reuse them)."""
    by_id: dict[str, list[_Entry]] = {}
    for entry in entries:
        if entry.id is not None:
            by_id.setdefault(entry.id, []).append(entry)
    for sid, same in by_id.items():
        if sid in done:
            text = f"the id {sid!r} belongs to a subtask kept from the plan so far; choose another"
            issues.append(_issue(sid, same[0].label, "duplicate_id", text))
    for sid, same in by_id.items():
        if len(same) > 1:
            where = ", ".join(f"#{e.position + 1}" for e in same)
            text = f"ids must be unique, but {len(same)} subtasks ({where}) use the id {sid!r}"
            issues.append(_issue(sid, same[0].label, "duplicate_id", text))
    nodes = {sid: same[0] for sid, same in by_id.items()}  # the first of duplicates stands for the id

    for entry in entries:
        for dep in entry.depends_on:
            target = nodes.get(dep)
            if target is None and dep in done:
                continue  # finished before this (re)plan: always an earlier group
            if target is None:
                text = f"depends_on names {dep!r}, which is not a subtask of this plan"
                issues.append(_issue(entry.key, entry.label, "dangling_dependency", text))
            elif dep == entry.id or entry.group is None or target.group is None:
                continue  # a self-dependency is reported as a cycle; a bad group already has its issue
            elif target.group >= entry.group:
                text = (
                    f"it is in group {entry.group} but depends on {dep} in group {target.group}; "
                    "a subtask may depend only on subtasks of earlier groups"
                )
                issues.append(_issue(entry.key, entry.label, "dependency_order", text))

    deps = {sid: [d for d in entry.depends_on if d in nodes] for sid, entry in nodes.items()}
    for cycle in _cycles(deps):
        head = nodes[cycle[0]]
        chain = " → ".join(cycle)
        if len(cycle) == 2:
            text = f"a subtask must not depend on itself ({chain})"
        else:
            text = f"dependencies must not form a cycle, but they do: {chain}"
        issues.append(_issue(head.key, head.label, "cycle", text))


def validate_plan(
    data: Any,
    *,
    agents: Collection[str],
    engines: Mapping[str, str | None],
    max_subtasks: int,
    done: Collection[str] = (),
) -> list[PlanIssue]:
    """Every rule of :data:`RULES` that ``data`` (a decoded planner reply) breaks; [] when valid.

    ``engines`` maps each known engine to None when it is available, else the reason it is not.
    ``done``: ids of subtasks kept from the plan so far (a replan's answer may depend on them).
    """
    issues: list[PlanIssue] = []
    items = _shape(data, issues)
    if items is None:
        return issues
    if len(items) > max_subtasks:
        text = f"{len(items)} subtasks, but at most {max_subtasks} are allowed"
        issues.append(_issue(None, "plan", "too_many_subtasks", text))
    entries: list[_Entry] = []
    for position, item in enumerate(items):
        if isinstance(item, Mapping):
            entries.append(_fields(position, item, agents, engines, issues))
        else:
            text = f"each subtask must be a JSON object, got {type(item).__name__}"
            issues.append(_issue(f"#{position + 1}", f"subtask #{position + 1}", "shape", text))
    _graph(entries, issues, done)
    return issues


def build_plan(
    data: Any,
    *,
    plan_id: str,
    goal: str,
    agents: Collection[str],
    engines: Mapping[str, str | None],
    max_subtasks: int,
    metadata: Mapping[str, Any] | None = None,
    done: Collection[str] = (),
) -> Plan:
    """A proposed :class:`Plan` from a decoded reply; PlanInvalid lists every broken rule.

    Only the planner's keys of each subtask are read (a reply cannot preset status or results);
    ``metadata`` is copied, with ``goal`` set to ``goal``.
    """
    issues = validate_plan(data, agents=agents, engines=engines, max_subtasks=max_subtasks, done=done)
    if issues:
        raise PlanInvalid(issues)
    subtasks = [
        Subtask.from_dict({key: item[key] for key in PLANNER_KEYS if key in item}, f"subtasks[{i}]")
        for i, item in enumerate(data["subtasks"])
    ]
    extra = {key: value for key, value in (metadata or {}).items() if key != "goal"}
    return Plan(
        id=plan_id,
        goal=goal,
        subtasks=subtasks,
        merge_strategy=data["merge"]["strategy"],
        metadata={"goal": goal, **copy.deepcopy(extra)},
    )


def issues_text(issues: Iterable[PlanIssue]) -> str:
    """The correction sent back to the planner for its one retry."""
    bullets = "\n".join(f"- {issue.message}" for issue in issues)
    return (
        "Your plan was rejected. Fix every issue below and answer again with only the corrected "
        f"JSON object:\n{bullets}"
    )
