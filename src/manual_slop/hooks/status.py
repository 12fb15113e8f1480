"""The body of ``GET /status``: liveness, whether the app is ready, mode, version, pid, uptime.

One function, shared by the Hook API's handler and by the server while it answers before its
app is built (:mod:`.server`); it imports nothing of the app.
"""

from __future__ import annotations

import os
import time
from typing import Any

from manual_slop import __version__

__all__ = ["status_body"]


def status_body(mode: str, started_at: float, ready: bool = True) -> dict[str, Any]:
    """``started_at`` is the app's start (``time.time()``); ``ready`` is False while the server
    answers before its app is built (every other request waits for it then)."""
    return {
        "status": "ok",
        "ready": ready,
        "mode": mode,
        "version": __version__,
        "pid": os.getpid(),
        "uptime_s": max(0.0, time.time() - started_at),
    }
