"""HITL rules: which events wait for a human, which are allowed or denied at once, and what a
timeout does.

A :class:`Rule` fires on one *trigger* (an event kind, or ``path_glob`` / ``pattern``, which
fire on any event whose path or text matches), narrowed by filters (``tool``, ``path_glob``,
``pattern``, ``threshold_usd``), and decides ``ask``, ``allow`` or ``deny``. Of the rules that
match an event, the highest ``priority`` wins; on a tie ``deny`` beats ``ask`` beats ``allow``,
then the one listed first. When none matches, a built-in rule decides, so every decision
names a rule (:data:`BUILTIN_RULES`).

The approval policy chooses which of the project's rules take part (:meth:`RuleSet.for_policy`):

==============  =================================  ==================================
policy          project rules that apply           when none matches
==============  =================================  ==================================
``manual``      ``ask`` and ``deny``               ``policy=manual`` asks
``allow_list``  all                                ``policy=allow_list`` asks
``auto``        ``deny``                           ``policy=auto`` allows
==============  =================================  ==================================

(``after_tool``, ``on_error`` and ``cost_over`` are only looked at: without a rule that asks or
denies, ``policy=pass`` lets them through.)

Rules are read from the project file's ``[[approval.rules]]``. An entry with none of the new
keys (``name``, ``trigger``, ``action``, ...) is an allow-list rule of the first format
(``tool``, ``pattern``, ``path_glob``) and becomes an ``allow`` rule named after its filters
(:func:`parse_rules`). See docs/guide_governance.md.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = [
    "BUILTIN_RULES",
    "GATE_TRIGGERS",
    "MAX_RULES",
    "OBSERVED_TRIGGERS",
    "ON_TIMEOUT_DOCS",
    "POLICY_ACTIONS",
    "RULE_KEYS",
    "TRIGGER_DOCS",
    "Action",
    "AllowRule",
    "ApprovalPolicy",
    "BuiltinRule",
    "OnTimeout",
    "Rule",
    "RuleError",
    "RuleEvent",
    "RuleProblem",
    "RuleSet",
    "Trigger",
    "Verdict",
    "parse_rules",
    "rules_or_raise",
]

MAX_RULES = 500
MAX_NAME = 100
MAX_TEXT = 2_000  # a filter (glob or regex) longer than this is refused
MAX_PRIORITY = 1_000_000
MAX_TIMEOUT_S = 7 * 24 * 3600.0
MAX_THRESHOLD_USD = 1_000_000.0
RESERVED_PREFIX = "policy="  # the built-in rules' names


class ApprovalPolicy(StrEnum):
    MANUAL = "manual"
    ALLOW_LIST = "allow_list"
    AUTO = "auto"


class Trigger(StrEnum):
    BEFORE_TOOL = "before_tool"
    AFTER_TOOL = "after_tool"
    ON_ERROR = "on_error"
    ON_SPAWN = "on_spawn"
    ON_STEP = "on_step"
    COST_OVER = "cost_over"
    PATH_GLOB = "path_glob"
    PATTERN = "pattern"


class Action(StrEnum):
    ASK = "ask"
    ALLOW = "allow"
    DENY = "deny"


class OnTimeout(StrEnum):
    REJECT = "reject"
    APPROVE = "approve"
    KEEP_WAITING = "keep_waiting"
    ESCALATE = "escalate"


# Something waits on these: a tool call, a worker spawn, an MMA step.
GATE_TRIGGERS: tuple[Trigger, ...] = (Trigger.BEFORE_TOOL, Trigger.ON_SPAWN, Trigger.ON_STEP)
# Only looked at: nothing waits unless a rule asks or denies.
OBSERVED_TRIGGERS: tuple[Trigger, ...] = (Trigger.AFTER_TOOL, Trigger.ON_ERROR, Trigger.COST_OVER)
# Fire on any event (cost_over excepted) whose path or text matches.
CONTENT_TRIGGERS: frozenset[Trigger] = frozenset({Trigger.PATH_GLOB, Trigger.PATTERN})
_RANK = {Action.ALLOW: 0, Action.ASK: 1, Action.DENY: 2}  # the tie-break: deny > ask > allow

TRIGGER_DOCS: dict[Trigger, str] = {
    Trigger.BEFORE_TOOL: "a tool dialog: a script to run, a file edit, an external agent's ask",
    Trigger.AFTER_TOOL: "a tool's result, before the model sees it",
    Trigger.ON_ERROR: "a tool result with error or timeout status",
    Trigger.ON_SPAWN: "an MMA worker about to start on a ticket",
    Trigger.ON_STEP: "an MMA step (a worker's tool call, a replan)",
    Trigger.COST_OVER: "the session's spend crossing threshold_usd while a track runs (once per run)",
    Trigger.PATH_GLOB: "any event above (but cost_over) whose path matches path_glob",
    Trigger.PATTERN: "any event above (but cost_over) whose text matches pattern",
}

ON_TIMEOUT_DOCS: dict[OnTimeout, str] = {
    OnTimeout.REJECT: "rejected, decider timeout (the model is told)",
    OnTimeout.APPROVE: "approved, decider timeout, the rule named",
    OnTimeout.KEEP_WAITING: "stays pending until someone decides or the app shuts down",
    OnTimeout.ESCALATE: "stays pending, marked escalated: an error notification and an escalated "
    "audit entry, then waits like keep_waiting",
}

# key -> (type, values, default): the rule schema (docs/guide_governance.md shows this table)
RULE_KEYS: dict[str, tuple[str, str, str]] = {
    "name": ("string", f"unique, 1-{MAX_NAME} characters, not starting with {RESERVED_PREFIX}", "required"),
    "trigger": ("string", ", ".join(Trigger), "required"),
    "action": ("string", ", ".join(Action), "required"),
    "priority": ("integer", f"-{MAX_PRIORITY:,} to {MAX_PRIORITY:,}; higher wins", "0"),
    "tool": ("string", "fnmatch glob on the tool name (case-sensitive)", "any tool"),
    "path_glob": ("string", "fnmatch glob on the path the event names", "any path"),
    "pattern": ("string", "regular expression searched in the event's text", "any text"),
    "threshold_usd": ("number", "> 0; cost_over only", "—"),
    "timeout_s": ("number", f"> 0, at most {MAX_TIMEOUT_S:g}; ask only", "approval.timeout_s"),
    "on_timeout": ("string", ", ".join(OnTimeout) + "; ask only", "reject"),
}
_LEGACY_KEYS = ("tool", "pattern", "path_glob")
_NEW_ONLY = frozenset(RULE_KEYS) - frozenset(_LEGACY_KEYS)


# =========================================================================================
# problems
# =========================================================================================
@dataclass(frozen=True, slots=True)
class RuleProblem:
    """What is wrong with one rule: its index in the list, its name when it has one, the key."""

    index: int
    name: str
    key: str
    message: str

    def __str__(self) -> str:
        where = f"approval.rules[{self.index}]" + (f" {self.name!r}" if self.name else "")
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "name": self.name, "key": self.key, "message": str(self)}


class RuleError(ValueError):
    """One or more rules are malformed; ``problems`` lists each with its rule and key."""

    def __init__(self, problems: Sequence[RuleProblem]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(str(p) for p in self.problems))


# =========================================================================================
# events, rules, verdicts
# =========================================================================================
@dataclass(frozen=True, slots=True)
class RuleEvent:
    """What a rule is matched against. ``trigger`` None: an event no trigger names (a dialog
    kind the rules do not know), decided by the policy's default for gates."""

    trigger: Trigger | None
    tool: str = ""
    text: str = ""
    path: str | None = None
    spent_usd: float = 0.0
    since_usd: float = 0.0  # cost_over: the spend when the run last asked (thresholds above it count)
    budget: bool = False  # cost_over: a usage.* budget was crossed (asks unless a rule decides)


@dataclass(frozen=True, slots=True)
class Verdict:
    """The decision for one event and the rule that made it."""

    action: Action
    rule_name: str
    on_timeout: OnTimeout = OnTimeout.REJECT
    timeout_s: float | None = None  # None: the app's approval.timeout_s


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule of the project (see the module docstring and :data:`RULE_KEYS`)."""

    name: str
    trigger: Trigger
    action: Action
    priority: int = 0
    tool: str = ""
    path_glob: str = ""
    pattern: str = ""
    threshold_usd: float | None = None
    timeout_s: float | None = None
    on_timeout: OnTimeout = OnTimeout.REJECT
    _regex: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_regex", re.compile(self.pattern) if self.pattern else None)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], index: int = 0) -> Rule:
        """A rule in the current format; RuleError lists every key that is wrong."""
        rule, problems = _check_rule(data, index)
        if rule is None:
            raise RuleError(problems)
        return rule

    def matches(self, event: RuleEvent) -> bool:
        if event.trigger is None:
            return False
        if self.trigger in CONTENT_TRIGGERS:
            if event.trigger is Trigger.COST_OVER:
                return False
        elif self.trigger is not event.trigger:
            return False
        if self.tool and not fnmatch.fnmatchcase(event.tool, self.tool):
            return False
        if self.path_glob and (event.path is None or not fnmatch.fnmatchcase(event.path, self.path_glob)):
            return False
        if self._regex is not None and not self._regex.search(event.text):
            return False
        return self.threshold_usd is None or event.since_usd < self.threshold_usd <= event.spent_usd

    def verdict(self) -> Verdict:
        return Verdict(self.action, self.name, self.on_timeout, self.timeout_s)

    def to_dict(self) -> dict[str, Any]:
        """The rule as the project file and the Hook API hold it (keys left at their default are
        left out; ``on_timeout`` is always given for an ``ask`` rule)."""
        data: dict[str, Any] = {
            "name": self.name,
            "trigger": str(self.trigger),
            "action": str(self.action),
            "priority": self.priority,
        }
        for key in ("tool", "path_glob", "pattern"):
            if getattr(self, key):
                data[key] = getattr(self, key)
        if self.threshold_usd is not None:
            data["threshold_usd"] = self.threshold_usd
        if self.timeout_s is not None:
            data["timeout_s"] = self.timeout_s
        if self.action is Action.ASK:
            data["on_timeout"] = str(self.on_timeout)
        return data

    def describe(self) -> str:
        """One line: ``before_tool tool=run_shell pattern=^rm -> deny (priority 10)``."""
        filters = [
            f"{key}={getattr(self, key)}" for key in ("tool", "path_glob", "pattern") if getattr(self, key)
        ]
        if self.threshold_usd is not None:
            filters.append(f"over ${self.threshold_usd:g}")
        then = f" -> {self.action} (priority {self.priority})"
        return " ".join([str(self.trigger), *filters]) + then


@dataclass(frozen=True, slots=True)
class BuiltinRule:
    """A default that decides when no rule of the project matches."""

    name: str
    action: Action
    triggers: tuple[Trigger, ...]
    policies: tuple[ApprovalPolicy, ...]
    meaning: str

    def verdict(self) -> Verdict:
        return Verdict(self.action, self.name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "action": str(self.action),
            "triggers": [str(t) for t in self.triggers],
            "policies": [str(p) for p in self.policies],
            "meaning": self.meaning,
        }


BUILTIN_RULES: tuple[BuiltinRule, ...] = (
    BuiltinRule("policy=manual", Action.ASK, GATE_TRIGGERS, (ApprovalPolicy.MANUAL,),
                "every tool call, spawn and step waits for a human"),
    BuiltinRule("policy=allow_list", Action.ASK, GATE_TRIGGERS, (ApprovalPolicy.ALLOW_LIST,),
                "what no rule allows or denies waits for a human"),
    BuiltinRule("policy=auto", Action.ALLOW, (*GATE_TRIGGERS, *OBSERVED_TRIGGERS), (ApprovalPolicy.AUTO,),
                "everything not denied runs without asking (simulations only)"),
    BuiltinRule("policy=pass", Action.ALLOW, OBSERVED_TRIGGERS,
                (ApprovalPolicy.MANUAL, ApprovalPolicy.ALLOW_LIST),
                "results, errors and spend go on unless a rule asks or denies"),
)  # fmt: skip

# A crossed usage.* budget that no project rule decides: it asks (the user set the budget to be
# asked; only policy=auto lets it pass, like every other observed event)
BUDGET_RULE = BuiltinRule(
    "budget",
    Action.ASK,
    (Trigger.COST_OVER,),
    (ApprovalPolicy.MANUAL, ApprovalPolicy.ALLOW_LIST),
    "a usage.budget_usd or usage.track_budget_usd crossed asks unless a rule decides",
)

# The project rules each policy lets take part, by action.
POLICY_ACTIONS: dict[ApprovalPolicy, frozenset[Action]] = {
    ApprovalPolicy.MANUAL: frozenset({Action.ASK, Action.DENY}),
    ApprovalPolicy.ALLOW_LIST: frozenset(Action),
    ApprovalPolicy.AUTO: frozenset({Action.DENY}),
}


class RuleSet:
    """The rules one policy applies, and the built-in defaults behind them (immutable)."""

    def __init__(self, policy: ApprovalPolicy | str, rules: Sequence[Rule] = ()) -> None:
        self.policy = ApprovalPolicy(policy)
        self.project_rules: tuple[Rule, ...] = tuple(rules)
        allowed = POLICY_ACTIONS[self.policy]
        self.rules: tuple[Rule, ...] = tuple(r for r in self.project_rules if r.action in allowed)
        self.defaults: dict[Trigger, BuiltinRule] = {
            trigger: builtin
            for builtin in BUILTIN_RULES
            if self.policy in builtin.policies
            for trigger in builtin.triggers
        }

    @classmethod
    def for_policy(cls, policy: ApprovalPolicy | str, rules: Sequence[Rule] = ()) -> RuleSet:
        return cls(policy, rules)

    def deciding(self, event: RuleEvent) -> Rule | BuiltinRule:
        """The rule that decides ``event``: the best match, else the built-in default."""
        best: Rule | None = None
        for rule in self.rules:  # strictly better only: the first of equals stays
            if rule.matches(event) and (best is None or _rank(rule) > _rank(best)):
                best = rule
        if best is not None:
            return best
        if event.budget and self.policy is not ApprovalPolicy.AUTO:
            return BUDGET_RULE
        return self.defaults.get(event.trigger or Trigger.BEFORE_TOOL, self.defaults[Trigger.BEFORE_TOOL])

    def decide(self, event: RuleEvent) -> Verdict:
        return self.deciding(event).verdict()

    def intercepts(self, event: RuleEvent) -> bool:
        """Does a rule stop ``event`` (ask or deny)? An observed event nobody stops costs nothing."""
        return self.decide(event).action is not Action.ALLOW

    def inactive(self) -> list[str]:
        """Names of the project's rules this policy leaves out."""
        return [r.name for r in self.project_rules if r not in self.rules]

    def cost_rules(self) -> tuple[Rule, ...]:
        return tuple(r for r in self.rules if r.trigger is Trigger.COST_OVER)


def _rank(rule: Rule) -> tuple[int, int]:
    return rule.priority, _RANK[rule.action]


# =========================================================================================
# the allow-list rules of the first format
# =========================================================================================
@dataclass(frozen=True, slots=True)
class AllowRule:
    """An allow-list rule of the first format: ``tool`` must match exactly; ``pattern`` (regex,
    searched) and ``path_glob`` narrow it. :meth:`to_rule` makes it an ``allow`` rule."""

    tool: str
    pattern: str = ""
    path_glob: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], index: int = 0) -> AllowRule:
        rule, problems = _check_legacy(data, index, need_tool=True)
        if rule is None:
            raise RuleError(problems)
        return rule

    def describe(self) -> str:
        parts = [
            f"{key}={getattr(self, key)}" for key in ("tool", "pattern", "path_glob") if getattr(self, key)
        ]
        return " ".join(parts)

    def to_rule(self, name: str = "") -> Rule:
        tool = self.tool
        # The first format named MMA dialogs by kind in ``tool``; their trigger says it now.
        trigger = {"mma_spawn": Trigger.ON_SPAWN, "mma_step": Trigger.ON_STEP}.get(tool)
        if trigger is not None:
            tool = ""
        elif not tool:
            trigger = Trigger.PATH_GLOB if self.path_glob else Trigger.PATTERN
        else:
            trigger = Trigger.BEFORE_TOOL
        return Rule(
            name or self.describe(),
            trigger,
            Action.ALLOW,
            tool=_literal_glob(tool),
            path_glob=self.path_glob,
            pattern=self.pattern,
        )


def _literal_glob(name: str) -> str:
    """``name`` as a glob matching only itself (the first format compared tool names exactly)."""
    return re.sub(r"([*?\[])", r"[\1]", name)


# =========================================================================================
# parsing
# =========================================================================================
def parse_rules(raw: Any) -> tuple[list[Rule], list[RuleProblem]]:
    """The rules of an ``approval.rules`` list (both formats) and what is wrong with the others.

    A malformed rule is left out and reported; a name used twice is reported on the later rule
    (generated names of first-format rules get ``#<index>`` instead)."""
    if not isinstance(raw, list):
        return [], [RuleProblem(0, "", "", f"approval.rules must be a list of tables, got {_kind(raw)}")]
    rules: list[Rule] = []
    problems: list[RuleProblem] = []
    if len(raw) > MAX_RULES:
        problems.append(RuleProblem(MAX_RULES, "", "", f"at most {MAX_RULES} rules; the rest are ignored"))
    used: dict[str, int] = {}
    for index, data in enumerate(raw[:MAX_RULES]):
        if not isinstance(data, Mapping):
            problems.append(RuleProblem(index, "", "", f"expected a table of rule keys, got {_kind(data)}"))
            continue
        if _NEW_ONLY & set(data):
            rule, found = _check_rule(data, index)
        else:
            legacy, found = _check_legacy(data, index, need_tool=False)
            rule = None
            if legacy is not None:
                name = legacy.describe()
                rule = legacy.to_rule(name if name not in used else f"{name} #{index}")
        if rule is None:
            problems.extend(found)
            continue
        if rule.name in used:
            problems.append(
                RuleProblem(
                    index, rule.name, "name", f"is already the name of approval.rules[{used[rule.name]}]"
                )
            )
            continue
        used[rule.name] = index
        rules.append(rule)
    return rules, problems


def rules_or_raise(raw: Any) -> list[Rule]:
    """Every rule of ``raw``, or RuleError listing every problem (nothing is half applied)."""
    rules, problems = parse_rules(raw)
    if problems:
        raise RuleError(problems)
    return rules


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"a boolean ({value})"
    if isinstance(value, int | float):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"{value[:60]!r}"
    return f"a {type(value).__name__}"


class _Checker:
    """Collects the problems of one rule while its keys are read."""

    def __init__(self, data: Mapping[str, Any], index: int) -> None:
        self.data = data
        self.index = index
        name = data.get("name")
        self.name = name if isinstance(name, str) else ""
        self.problems: list[RuleProblem] = []

    def bad(self, key: str, message: str) -> None:
        self.problems.append(RuleProblem(self.index, self.name, key, message))

    def choice(self, key: str, enum: type[StrEnum], default: StrEnum | None = None) -> Any:
        value = self.data.get(key)
        if value is None:
            if default is None:
                self.bad(key, f"is required: one of {', '.join(enum)}")
            return default
        try:
            return enum(value) if isinstance(value, str) else enum(None)
        except ValueError:
            self.bad(key, f"expected one of {', '.join(enum)}, got {_kind(value)}")
            return None

    def text(self, key: str) -> str:
        value = self.data.get(key)
        if value is None:
            return ""
        if not isinstance(value, str) or not value:
            self.bad(key, f"expected a non-empty string, got {_kind(value)} (leave the key out for any)")
            return ""
        if len(value) > MAX_TEXT:
            self.bad(key, f"{len(value):,} characters; at most {MAX_TEXT:,} are allowed")
            return ""
        return value

    def regex(self, key: str) -> str:
        pattern = self.text(key)
        if pattern:
            try:
                re.compile(pattern)
            except re.error as exc:
                self.bad(key, f"{pattern!r} is not a valid regular expression ({exc})")
                return ""
        return pattern

    def number(self, key: str, maximum: float) -> float | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            self.bad(key, f"expected a number, got {_kind(value)}")
            return None
        if not 0 < value <= maximum:
            self.bad(key, f"expected more than 0 and at most {maximum:g}, got {value:g}")
            return None
        return float(value)

    def integer(self, key: str, default: int) -> int:
        value = self.data.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            self.bad(key, f"expected an integer, got {_kind(value)}")
            return default
        if abs(value) > MAX_PRIORITY:
            self.bad(key, f"expected -{MAX_PRIORITY:,} to {MAX_PRIORITY:,}, got {value:,}")
            return default
        return value


def _check_rule(data: Mapping[str, Any], index: int) -> tuple[Rule | None, list[RuleProblem]]:
    check = _Checker(data, index)
    for key in sorted(set(data) - set(RULE_KEYS)):
        check.bad(str(key), f"unknown key; a rule has {', '.join(RULE_KEYS)}")
    name = data.get("name")
    if name is None:
        check.bad("name", "is required: a unique name, recorded with every decision the rule makes")
    elif not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME:
        check.bad("name", f"expected 1-{MAX_NAME} characters, got {_kind(name)}")
    elif name.startswith(RESERVED_PREFIX):
        check.bad("name", f"names starting with {RESERVED_PREFIX!r} belong to the built-in rules")
    trigger: Trigger | None = check.choice("trigger", Trigger)
    action: Action | None = check.choice("action", Action)
    on_timeout: OnTimeout | None = check.choice("on_timeout", OnTimeout, OnTimeout.REJECT)
    tool, path_glob, pattern = check.text("tool"), check.text("path_glob"), check.regex("pattern")
    threshold = check.number("threshold_usd", MAX_THRESHOLD_USD)
    timeout_s = check.number("timeout_s", MAX_TIMEOUT_S)
    priority = check.integer("priority", 0)
    if trigger is not None:
        _check_combination(check, trigger, action)
    if check.problems or trigger is None or action is None or on_timeout is None:
        return None, check.problems
    return Rule(
        str(name), trigger, action, priority, tool, path_glob, pattern, threshold, timeout_s, on_timeout
    ), []


def _check_combination(check: _Checker, trigger: Trigger, action: Action | None) -> None:
    """Keys that make no sense together (the keys themselves were checked already)."""
    has = {key for key in RULE_KEYS if check.data.get(key) is not None}
    if trigger is Trigger.COST_OVER:
        if "threshold_usd" not in has:
            check.bad("threshold_usd", "a cost_over rule needs threshold_usd (dollars of session spend)")
        for key in sorted(has & {"tool", "path_glob", "pattern"}):
            check.bad(key, "a cost_over rule watches the session's spend; there is no tool, path or text")
    elif "threshold_usd" in has:
        check.bad("threshold_usd", f"only a cost_over rule has a threshold (this one's trigger is {trigger})")
    if trigger in (Trigger.PATH_GLOB, Trigger.PATTERN) and str(trigger) not in has:
        check.bad(str(trigger), f"a {trigger} rule needs {trigger} (what it fires on)")
    if trigger in (Trigger.ON_SPAWN, Trigger.ON_STEP):
        for key in sorted(has & {"tool", "path_glob"}):
            check.bad(key, f"{trigger} events have no tool name or path (pattern matches their text)")
    if action is not None and action is not Action.ASK:
        for key in sorted(has & {"timeout_s", "on_timeout"}):
            check.bad(key, f"only an ask rule waits for a decision; a {action} rule decides at once")


def _check_legacy(
    data: Mapping[str, Any], index: int, *, need_tool: bool
) -> tuple[AllowRule | None, list[RuleProblem]]:
    check = _Checker(data, index)
    for key in sorted(set(data) - set(_LEGACY_KEYS)):
        check.bad(str(key), f"unknown key; an allow-list rule has {', '.join(_LEGACY_KEYS)} (or use the keys "
                  f"of a rule: {', '.join(RULE_KEYS)})")  # fmt: skip
    tool, pattern, path_glob = check.text("tool"), check.regex("pattern"), check.text("path_glob")
    if "tool" not in data and (need_tool or not (pattern or path_glob)) and not check.problems:
        check.bad("tool", "is required (or a path_glob or pattern to match)")
    if check.problems:
        return None, check.problems
    return AllowRule(tool, pattern, path_glob), []
