"""The Hook API fixtures for the skills tests."""

from __future__ import annotations

from tests.integration.hooks.conftest import hook_app, hook_app_factory  # noqa: F401  (the fixtures)
