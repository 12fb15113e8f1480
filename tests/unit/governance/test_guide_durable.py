"""docs/guide_governance.md, "Durable approvals": the journal and resume tables are the code's."""

from __future__ import annotations

from manual_slop.dialogs import PendingKind
from manual_slop.governance.durable import RESUME
from manual_slop.governance.journal import EVENT_FIELDS, JOURNAL_NAME
from tests.unit.governance.test_guide_recovery import GUIDE, tables

HEADING = "## Durable approvals"


def test_the_module_table_names_the_modules() -> None:
    modules = tables(HEADING)[0]
    assert [row[0] for row in modules] == ["`governance/journal.py`", "`governance/durable.py`"]


def test_the_journal_table_is_every_event_with_its_fields() -> None:
    events = tables(HEADING)[1]
    assert {row[0]: row[1] for row in events} == {
        f"`{event}`": ", ".join(f"`{f}`" for f in fields) for event, fields in EVENT_FIELDS.items()
    }
    assert f"logs/sessions/<ts>/{JOURNAL_NAME}" in GUIDE.read_text(encoding="utf-8")


def test_the_resume_table_is_every_dialog_kind_with_what_approving_does() -> None:
    resume = tables(HEADING)[2]
    assert sorted(row[0] for row in resume) == sorted(f"`{k}`" for k in PendingKind)  # every kind
    assert {row[0]: row[1] for row in resume} == {f"`{k}`": text for k, text in RESUME.items()}
