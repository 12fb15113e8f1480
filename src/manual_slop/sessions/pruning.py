"""Which old sessions are removed at start-up, and the removal itself (off the main thread).

A session is pruned when all of these hold: it is not the running session, not starred, not
auto-whitelisted (see :mod:`.registry`), not still running in another app (``end`` unset and
its ``pid`` alive), older than ``logs.prune_after_hours`` and smaller than
``logs.prune_max_kb``. ``logs.prune_max_kb = 0`` switches pruning off.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass

from manual_slop.sessions.registry import LogRegistry, SessionRecord

__all__ = ["PrunePolicy", "keep_reason", "prune"]


@dataclass(frozen=True, slots=True)
class PrunePolicy:
    """``logs.prune_max_kb`` and ``logs.prune_after_hours``."""

    max_kb: int = 64
    after_hours: float = 24.0


def _alive(pid: int) -> bool:
    if pid <= 0 or pid == os.getpid():
        return pid == os.getpid()
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def keep_reason(record: SessionRecord, policy: PrunePolicy, now: float, current_id: str) -> str:
    """Why ``record`` stays ('' when it is to be pruned)."""
    if record.session_id == current_id:
        return "the running session"
    if policy.max_kb <= 0:
        return "pruning is off"
    if record.starred:
        return "starred"
    if record.whitelisted:
        return f"whitelisted: {record.whitelist_reason}"
    if not record.end and _alive(record.pid):
        return "still running"
    if not record.start or now - record.start < policy.after_hours * 3600.0:
        return "young"
    if record.size_bytes >= policy.max_kb * 1024:
        return "large"
    return ""


def prune(registry: LogRegistry, policy: PrunePolicy, current_id: str, now: float | None = None) -> list[str]:
    """Remove every session folder :func:`keep_reason` gives up (blocking: call it off the main
    thread); the ids removed. The registry is saved afterwards."""
    now = time.time() if now is None else now
    removed: list[str] = []
    for record in registry.records():
        if keep_reason(record, policy, now, current_id):
            continue
        folder = registry.folder(record.session_id)
        try:
            shutil.rmtree(folder)
        except FileNotFoundError:
            pass
        except OSError:
            continue  # kept for the next start: a locked file on Windows, a permission
        registry.forget(record.session_id)
        removed.append(record.session_id)
    if removed:
        registry.save()
    return removed
