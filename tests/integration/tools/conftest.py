"""Fixtures shared by the tool integration tests (the unit fixtures, reused)."""

from tests.unit.tools.conftest import Approver, approver, ctx, project, registry, run  # noqa: F401
