"""Test-only switches for an app subprocess, loaded by Python at start-up when this folder is
on ``PYTHONPATH`` (``tests/security/test_secret_leak.py``). Nothing here ships with the app.

- ``SLOP_TEST_REDACTOR_OFF=1``: the redactor returns everything unchanged, so the leak test
  can prove that it fails without it.
- ``SLOP_TEST_WEB_LOOPBACK=1``: ``fetch_url`` may reach 127.0.0.1 (the test's echo server);
  the app refuses loopback addresses otherwise.
"""

from __future__ import annotations

import dataclasses
import os

if os.environ.get("SLOP_TEST_REDACTOR_OFF") == "1":
    from manual_slop import redaction

    redaction.Redactor.redact = lambda self, text: text  # type: ignore[method-assign]
    redaction.Redactor.redact_obj = lambda self, value, copy=True: value  # type: ignore[method-assign]

if os.environ.get("SLOP_TEST_WEB_LOOPBACK") == "1":
    from manual_slop.tools import web

    _check_host = web._check_host

    def _loopback_allowed(url: str, settings: web.WebSettings) -> None:
        _check_host(url, dataclasses.replace(settings, allow_private=True))

    web._check_host = _loopback_allowed
