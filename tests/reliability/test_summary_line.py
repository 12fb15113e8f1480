"""The suites' summary line: recorded in the report's user_properties (which xdist carries from
its workers) and printed by the top conftest, the only one the xdist controller loads."""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace

import pytest
from _pytest.config import Config

import tests.conftest as top
import tests.reliability.conftest as suites


def test_the_section_is_printed_by_the_top_conftest_from_the_reports(pytestconfig: Config) -> None:
    assert not hasattr(suites, "pytest_terminal_summary")  # the controller would never run it
    out = io.StringIO()
    reporter = pytest.TerminalReporter(pytestconfig, out)  # type: ignore[arg-type]
    line = "R0 probe: 3 rounds, 0 failures [fast]"
    reporter.stats = {
        "passed": [
            SimpleNamespace(when="call", user_properties=[(suites.SUMMARY_KEY, line)]),
            SimpleNamespace(when="setup", user_properties=[(suites.SUMMARY_KEY, "not from a call")]),
            SimpleNamespace(when="call", user_properties=[("other", "x")]),
        ]
    }
    top.pytest_terminal_summary(reporter)
    printed = out.getvalue()
    assert "reliability summary" in printed and line in printed and "not from a call" not in printed


@pytest.mark.parametrize(("long", "variant"), [(False, "fast"), (True, "long")])
def test_the_fixture_records_the_line_in_the_report_and_the_artifact(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, long: bool, variant: str
) -> None:
    # the variant is pinned: the test runs under make test (fast) and make reliability (long) alike
    monkeypatch.setattr(suites, "LONG", long)
    monkeypatch.setattr(suites, "ARTIFACT", tmp_path / "lines.txt")
    record = suites.summary.__wrapped__(request)  # type: ignore[attr-defined]
    try:
        record("R0 probe: 2 rounds")
        assert request.node.user_properties == [(suites.SUMMARY_KEY, f"R0 probe: 2 rounds [{variant}]")]
    finally:
        request.node.user_properties.clear()  # a probe: not a line for this run's summary
    assert (tmp_path / "lines.txt").read_text().endswith(f"R0 probe: 2 rounds [{variant}]\n")
