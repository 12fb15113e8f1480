"""docs/guide_governance.md, "HITL rules": the section's tables are the
rule engine's constants."""

from __future__ import annotations

import re
from pathlib import Path

from manual_slop.governance.rules import (
    BUILTIN_RULES,
    ON_TIMEOUT_DOCS,
    POLICY_ACTIONS,
    RULE_KEYS,
    TRIGGER_DOCS,
)
from manual_slop.governance.subject import KIND_TRIGGERS
from tests.helpers import markdown_tables

ROOT = Path(__file__).resolve().parents[3]
GUIDE = ROOT / "docs" / "guide_governance.md"


def tables(heading: str) -> list[list[list[str]]]:
    return markdown_tables(GUIDE, heading, lambda text: text.replace("`", ""))


def test_the_module_table_names_the_rules_modules() -> None:
    documented = {row[0] for row in tables("## HITL rules")[0]}
    for module in documented:
        assert (ROOT / "src" / "manual_slop" / module).is_file(), module
    assert {"governance/rules.py", "governance/subject.py", "governance/cost.py"} <= documented


def test_the_schema_table_is_the_rule_keys() -> None:
    [schema] = tables("### Rule schema")
    assert [tuple(row) for row in schema] == [(key, *spec) for key, spec in RULE_KEYS.items()]


def test_the_trigger_tables_are_the_triggers_and_the_dialog_kinds() -> None:
    triggers, events = tables("### Triggers")
    assert [tuple(row) for row in triggers] == [(str(t), text) for t, text in TRIGGER_DOCS.items()]
    kinds = [re.search(r"\((\w+)\)", row[0]).group(1) for row in events]  # type: ignore[union-attr]
    assert sorted(kinds) == sorted(KIND_TRIGGERS)


def test_the_policy_builtin_and_timeout_tables_are_the_engines() -> None:
    policies, builtins, timeouts = tables("### Which rule decides")
    assert [row[0] for row in policies] == [str(p) for p in POLICY_ACTIONS]
    for (_, applies, _), actions in zip(policies, POLICY_ACTIONS.values(), strict=True):
        named = set(re.findall(r"\b(ask|allow|deny)\b", applies.split("(")[0])) or {"ask", "allow", "deny"}
        assert named == {str(a) for a in actions}, applies
    assert [tuple(row) for row in builtins] == [
        (b.name, str(b.action), ", ".join(b.triggers), ", ".join(b.policies), b.meaning)
        for b in BUILTIN_RULES
    ]
    assert [tuple(row) for row in timeouts] == [(str(o), text) for o, text in ON_TIMEOUT_DOCS.items()]
