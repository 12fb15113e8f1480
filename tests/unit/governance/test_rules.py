"""The rule engine: which rule decides (priority, ties, policies, defaults), what makes a rule
malformed (every message names the rule and the key), and the allow-list rules of the first
format read as rules."""

from __future__ import annotations

import pytest

from manual_slop.governance.rules import (
    Action,
    AllowRule,
    OnTimeout,
    Rule,
    RuleError,
    RuleEvent,
    RuleSet,
    Trigger,
    parse_rules,
    rules_or_raise,
)

T = Trigger
RULES: dict[str, Rule] = {
    rule.name: rule
    for rule in (
        Rule("shell-ask", T.BEFORE_TOOL, Action.ASK, tool="run_shell"),
        Rule("pytest-ok", T.BEFORE_TOOL, Action.ALLOW, tool="run_shell", pattern=r"^pytest( |$)", priority=5),
        Rule("no-rm", T.BEFORE_TOOL, Action.DENY, tool="run_*", pattern=r"\brm -rf\b", priority=5),
        Rule("rm-ask", T.BEFORE_TOOL, Action.ASK, pattern=r"\brm -rf\b", priority=5),
        Rule("docs-ok", T.PATH_GLOB, Action.ALLOW, path_glob="docs/*.md"),
        Rule("docs-ask", T.PATH_GLOB, Action.ASK, path_glob="docs/*.md"),
        Rule("docs-deny", T.PATH_GLOB, Action.DENY, path_glob="docs/*.md"),
        Rule("secrets", T.PATTERN, Action.DENY, pattern="BEGIN PRIVATE KEY", priority=100),
        Rule("spawn-ok", T.ON_SPAWN, Action.ALLOW),
        Rule("steps-ask", T.ON_STEP, Action.ASK, priority=-1),
        Rule("results-ask", T.AFTER_TOOL, Action.ASK, tool="read_file"),
        Rule("errors-deny", T.ON_ERROR, Action.DENY),
        Rule("cheap", T.COST_OVER, Action.ASK, threshold_usd=1.0),
        Rule("dear", T.COST_OVER, Action.DENY, threshold_usd=10.0),
        Rule("cheap-too", T.COST_OVER, Action.ASK, threshold_usd=5.0),
        Rule("first-ask", T.BEFORE_TOOL, Action.ASK, tool="write_file"),
        Rule("second-ask", T.BEFORE_TOOL, Action.ASK, tool="write_*"),
    )
}

SHELL_PYTEST = RuleEvent(T.BEFORE_TOOL, "run_shell", "pytest -q")
SHELL_RM = RuleEvent(T.BEFORE_TOOL, "run_shell", "rm -rf build")
WRITE_DOC = RuleEvent(T.BEFORE_TOOL, "write_file", "docs/a.md", "docs/a.md")
READ_RESULT = RuleEvent(T.AFTER_TOOL, "read_file", "print('hi')", "src/a.py")
KEY_RESULT = RuleEvent(T.AFTER_TOOL, "read_file", "-----BEGIN PRIVATE KEY-----", "id_rsa")
ERROR = RuleEvent(T.ON_ERROR, "read_file", "Error: no such file", "nope.py")
SPAWN = RuleEvent(T.ON_SPAWN, "mma_spawn", "tier3-worker")
STEP = RuleEvent(T.ON_STEP, "mma_step", '{"tool": "write_file"}')


def spend(usd: float, since: float = 0.0) -> RuleEvent:
    return RuleEvent(T.COST_OVER, "cost_check", "", None, usd, since)


# (policy, rules by name, event) -> (action, deciding rule)
PRIORITY_TABLE: list[tuple[str, tuple[str, ...], RuleEvent, Action, str]] = [
    # nothing matches: the policy's built-in rule decides
    ("manual", (), SHELL_PYTEST, Action.ASK, "policy=manual"),
    ("allow_list", (), SHELL_PYTEST, Action.ASK, "policy=allow_list"),
    ("auto", (), SHELL_PYTEST, Action.ALLOW, "policy=auto"),
    ("allow_list", (), READ_RESULT, Action.ALLOW, "policy=pass"),
    ("manual", (), spend(99.0), Action.ALLOW, "policy=pass"),
    ("auto", (), ERROR, Action.ALLOW, "policy=auto"),
    # higher priority wins
    ("allow_list", ("shell-ask", "pytest-ok"), SHELL_PYTEST, Action.ALLOW, "pytest-ok"),
    ("allow_list", ("shell-ask", "pytest-ok"), SHELL_RM, Action.ASK, "shell-ask"),
    ("allow_list", ("steps-ask",), STEP, Action.ASK, "steps-ask"),  # negative priority still beats no rule
    ("allow_list", ("secrets", "results-ask"), KEY_RESULT, Action.DENY, "secrets"),
    ("allow_list", ("secrets", "results-ask"), READ_RESULT, Action.ASK, "results-ask"),
    # ties: deny > ask > allow, whatever the order
    ("allow_list", ("rm-ask", "no-rm"), SHELL_RM, Action.DENY, "no-rm"),
    ("allow_list", ("no-rm", "rm-ask"), SHELL_RM, Action.DENY, "no-rm"),
    ("allow_list", ("docs-ok", "docs-ask"), WRITE_DOC, Action.ASK, "docs-ask"),
    ("allow_list", ("docs-ask", "docs-ok"), WRITE_DOC, Action.ASK, "docs-ask"),
    ("allow_list", ("docs-ok", "docs-ask", "docs-deny"), WRITE_DOC, Action.DENY, "docs-deny"),
    # equal priority and action: the one listed first
    ("allow_list", ("first-ask", "second-ask"), WRITE_DOC, Action.ASK, "first-ask"),
    ("allow_list", ("second-ask", "first-ask"), WRITE_DOC, Action.ASK, "second-ask"),
    # a path_glob rule fires on any event kind with that path; a tool glob matches
    ("allow_list", ("docs-ok",), WRITE_DOC, Action.ALLOW, "docs-ok"),
    (
        "allow_list",
        ("docs-deny",),
        RuleEvent(T.AFTER_TOOL, "read_file", "x", "docs/b.md"),
        Action.DENY,
        "docs-deny",
    ),
    ("allow_list", ("no-rm",), RuleEvent(T.BEFORE_TOOL, "run_powershell", "rm -rf x"), Action.DENY, "no-rm"),
    # triggers keep to their events
    ("allow_list", ("spawn-ok",), SPAWN, Action.ALLOW, "spawn-ok"),
    ("allow_list", ("spawn-ok",), STEP, Action.ASK, "policy=allow_list"),
    ("allow_list", ("errors-deny",), ERROR, Action.DENY, "errors-deny"),
    ("allow_list", ("errors-deny",), READ_RESULT, Action.ALLOW, "policy=pass"),
    ("allow_list", ("secrets",), spend(99.0), Action.ALLOW, "policy=pass"),  # a pattern never sees spend
    # cost_over: thresholds
    ("allow_list", ("cheap", "dear"), spend(0.5), Action.ALLOW, "policy=pass"),
    ("allow_list", ("cheap", "dear"), spend(1.0), Action.ASK, "cheap"),
    ("allow_list", ("cheap", "dear"), spend(12.0), Action.DENY, "dear"),
    # ... crossed since the run last asked: a threshold below that spend was asked about already
    ("allow_list", ("cheap", "cheap-too"), spend(6.0), Action.ASK, "cheap"),
    ("allow_list", ("cheap", "cheap-too"), spend(6.0, since=1.5), Action.ASK, "cheap-too"),
    ("allow_list", ("cheap", "dear"), spend(12.0, since=11.0), Action.ALLOW, "policy=pass"),
    # manual: allow rules take no part; auto: only deny rules do
    ("manual", ("shell-ask", "pytest-ok"), SHELL_PYTEST, Action.ASK, "shell-ask"),
    ("manual", ("pytest-ok",), SHELL_PYTEST, Action.ASK, "policy=manual"),
    ("manual", ("no-rm",), SHELL_RM, Action.DENY, "no-rm"),
    ("manual", ("results-ask",), READ_RESULT, Action.ASK, "results-ask"),
    ("auto", ("shell-ask", "no-rm"), SHELL_PYTEST, Action.ALLOW, "policy=auto"),
    ("auto", ("shell-ask", "no-rm"), SHELL_RM, Action.DENY, "no-rm"),
    ("auto", ("cheap",), spend(5.0), Action.ALLOW, "policy=auto"),
]


@pytest.mark.parametrize(
    ("policy", "names", "event", "action", "rule"),
    PRIORITY_TABLE,
    ids=[f"{row[0]}:{'+'.join(row[1]) or 'none'}:{row[2].trigger}:{row[4]}" for row in PRIORITY_TABLE],
)
def test_priority_table(
    policy: str, names: tuple[str, ...], event: RuleEvent, action: Action, rule: str
) -> None:
    verdict = RuleSet(policy, [RULES[name] for name in names]).decide(event)
    assert (verdict.action, verdict.rule_name) == (action, rule)


def test_a_verdict_carries_the_asking_rules_timeout_policy() -> None:
    rule = Rule("slow", T.BEFORE_TOOL, Action.ASK, timeout_s=0.2, on_timeout=OnTimeout.ESCALATE)
    verdict = RuleSet("manual", [rule]).decide(SHELL_RM)
    assert (verdict.on_timeout, verdict.timeout_s) == (OnTimeout.ESCALATE, 0.2)
    default = RuleSet("manual").decide(SHELL_RM)
    assert (default.on_timeout, default.timeout_s) == (OnTimeout.REJECT, None)


def test_policies_report_the_rules_they_leave_out() -> None:
    rules = [RULES["shell-ask"], RULES["pytest-ok"], RULES["no-rm"]]
    assert RuleSet("manual", rules).inactive() == ["pytest-ok"]
    assert RuleSet("allow_list", rules).inactive() == []
    assert RuleSet("auto", rules).inactive() == ["shell-ask", "pytest-ok"]


# =========================================================================================
# malformed rules
# =========================================================================================
GOOD = {"name": "r", "trigger": "before_tool", "action": "ask"}
BAD_RULES: list[tuple[dict, list[str]]] = [
    ({"trigger": "before_tool", "action": "ask"}, ["approval.rules[3]: name: is required"]),
    ({**GOOD, "name": ""}, ["approval.rules[3]: name: expected 1-100 characters, got ''"]),
    ({**GOOD, "name": "policy=mine"}, ["name: names starting with 'policy='"]),
    ({**GOOD, "trigger": "befor_tool"}, ["'r': trigger: expected one of before_tool,", "got 'befor_tool'"]),
    ({**GOOD, "action": "maybe"}, ["'r': action: expected one of ask, allow, deny, got 'maybe'"]),
    ({**GOOD, "action": None}, ["'r': action: is required: one of ask, allow, deny"]),
    ({**GOOD, "colour": "red"}, ["'r': colour: unknown key; a rule has name, trigger, action"]),
    ({**GOOD, "pattern": "("}, ["'r': pattern: '(' is not a valid regular expression"]),
    ({**GOOD, "tool": ""}, ["'r': tool: expected a non-empty string"]),
    ({**GOOD, "tool": 3}, ["'r': tool: expected a non-empty string, got a number (3)"]),
    ({**GOOD, "priority": "high"}, ["'r': priority: expected an integer, got 'high'"]),
    ({**GOOD, "priority": True}, ["'r': priority: expected an integer, got a boolean (True)"]),
    ({**GOOD, "priority": 10**9}, ["'r': priority: expected -1,000,000 to 1,000,000"]),
    ({**GOOD, "timeout_s": 0}, ["'r': timeout_s: expected more than 0"]),
    ({**GOOD, "timeout_s": "soon"}, ["'r': timeout_s: expected a number, got 'soon'"]),
    ({**GOOD, "on_timeout": "later"}, ["'r': on_timeout: expected one of reject, approve, keep_waiting"]),
    ({**GOOD, "threshold_usd": 5}, ["'r': threshold_usd: only a cost_over rule has a threshold"]),
    ({**GOOD, "trigger": "cost_over"}, ["'r': threshold_usd: a cost_over rule needs threshold_usd"]),
    ({**GOOD, "trigger": "cost_over", "threshold_usd": 1, "tool": "x"},
     ["'r': tool: a cost_over rule watches the session's spend"]),
    ({**GOOD, "trigger": "cost_over", "threshold_usd": -1}, ["'r': threshold_usd: expected more than 0"]),
    ({**GOOD, "trigger": "path_glob"}, ["'r': path_glob: a path_glob rule needs path_glob"]),
    ({**GOOD, "trigger": "pattern"}, ["'r': pattern: a pattern rule needs pattern"]),
    ({**GOOD, "trigger": "on_spawn", "tool": "x"}, ["'r': tool: on_spawn events have no tool name or path"]),
    ({**GOOD, "trigger": "on_step", "path_glob": "*"}, ["'r': path_glob: on_step events have no tool name"]),
    ({**GOOD, "action": "deny", "timeout_s": 5}, ["'r': timeout_s: only an ask rule waits for a decision"]),
    ({**GOOD, "action": "allow", "on_timeout": "approve"}, ["'r': on_timeout: only an ask rule waits"]),
    # several problems at once: each is listed
    ({"name": "multi", "trigger": "nope", "action": "nope", "bogus": 1},
     ["'multi': bogus: unknown key", "'multi': trigger: expected", "'multi': action: expected"]),
]  # fmt: skip


@pytest.mark.parametrize(("raw", "fragments"), BAD_RULES, ids=[str(i) for i in range(len(BAD_RULES))])
def test_malformed_rules_name_the_rule_and_the_key(raw: dict, fragments: list[str]) -> None:
    with pytest.raises(RuleError) as caught:
        Rule.from_dict(raw, index=3)
    message = str(caught.value)
    for fragment in fragments:
        assert fragment in message, message
    assert all(p.index == 3 for p in caught.value.problems)


def test_a_list_reports_every_bad_rule_and_keeps_the_good_ones() -> None:
    raw = [
        {"name": "ok", "trigger": "on_spawn", "action": "allow"},
        {"name": "ok", "trigger": "on_step", "action": "allow"},  # the name again
        "not a table",
        {"name": "bad", "trigger": "before_tool", "action": "sometimes"},
        {"tool": "run_shell", "pattern": "^ls$"},
    ]
    rules, problems = parse_rules(raw)
    assert [r.name for r in rules] == ["ok", "tool=run_shell pattern=^ls$"]
    assert [str(p) for p in problems] == [
        "approval.rules[1] 'ok': name: is already the name of approval.rules[0]",
        "approval.rules[2]: expected a table of rule keys, got 'not a table'",
        "approval.rules[3] 'bad': action: expected one of ask, allow, deny, got 'sometimes'",
    ]
    with pytest.raises(RuleError) as caught:
        rules_or_raise(raw)
    assert len(caught.value.problems) == 3
    assert parse_rules({"not": "a list"})[1][0].message.startswith("approval.rules must be a list")


# =========================================================================================
# the first format
# =========================================================================================
def test_first_format_rules_become_allow_rules_named_after_their_filters() -> None:
    rules, problems = parse_rules(
        [
            {"tool": "run_shell", "pattern": "^pytest( |$)"},
            {"tool": "write_file", "path_glob": "docs/*.md"},
            {"tool": "mma_spawn"},
            {"tool": "mma_step", "pattern": "read_file"},
            {"path_glob": "notes/*.md"},
            {"pattern": "^ls$"},
            {"tool": "run_shell", "pattern": "^pytest( |$)"},  # the same again: a numbered name
            {"tool": "weird[1]"},
        ]
    )
    assert problems == []
    assert [(r.name, r.trigger, r.action, r.tool) for r in rules] == [
        ("tool=run_shell pattern=^pytest( |$)", T.BEFORE_TOOL, Action.ALLOW, "run_shell"),
        ("tool=write_file path_glob=docs/*.md", T.BEFORE_TOOL, Action.ALLOW, "write_file"),
        ("tool=mma_spawn", T.ON_SPAWN, Action.ALLOW, ""),
        ("tool=mma_step pattern=read_file", T.ON_STEP, Action.ALLOW, ""),
        ("path_glob=notes/*.md", T.PATH_GLOB, Action.ALLOW, ""),
        ("pattern=^ls$", T.PATTERN, Action.ALLOW, ""),
        ("tool=run_shell pattern=^pytest( |$) #6", T.BEFORE_TOOL, Action.ALLOW, "run_shell"),
        ("tool=weird[1]", T.BEFORE_TOOL, Action.ALLOW, "weird[[]1]"),
    ]
    weird = RuleSet("allow_list", rules)
    assert weird.decide(RuleEvent(T.BEFORE_TOOL, "weird[1]")).rule_name == "tool=weird[1]"  # exact, as before
    assert weird.decide(RuleEvent(T.BEFORE_TOOL, "weird1")).rule_name == "policy=allow_list"
    assert weird.decide(SPAWN).rule_name == "tool=mma_spawn"


def test_first_format_problems_are_reported_like_before() -> None:
    for raw in (
        {},
        {"tool": ""},
        {"tool": "x", "pattern": "("},
        {"tool": "x", "bogus": 1},
        {"tool": "x", "pattern": 3},
    ):
        with pytest.raises(RuleError):
            AllowRule.from_dict(raw)
    _, problems = parse_rules([{"tool": "x", "bogus": 1}])
    assert "approval.rules[0]: bogus: unknown key; an allow-list rule has tool, pattern, path_glob" in str(
        problems[0]
    )


def test_to_dict_round_trips_through_the_parser() -> None:
    waits = Rule("waits", T.BEFORE_TOOL, Action.ASK, timeout_s=30.0, on_timeout=OnTimeout.KEEP_WAITING)
    rules = [*RULES.values(), waits]
    again = rules_or_raise([rule.to_dict() for rule in rules])
    assert again == rules
    assert Rule("d", T.ON_ERROR, Action.DENY).to_dict() == {
        "name": "d",
        "trigger": "on_error",
        "action": "deny",
        "priority": 0,
    }
    assert RULES["no-rm"].describe() == r"before_tool tool=run_* pattern=\brm -rf\b -> deny (priority 5)"
