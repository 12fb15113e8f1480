"""The governance tests drive the real app over the Hook API (the hooks tests' fixture)."""

from __future__ import annotations

from tests.integration.hooks.conftest import hook_app_factory  # noqa: F401  (the fixture)
