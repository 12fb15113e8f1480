"""Sessions: the registry of session log folders, start-up pruning and the read-only replay.

- :mod:`.registry`  ``logs/log_registry.toml`` and how a folder is scanned (auto-whitelisting)
- :mod:`.pruning`   which old sessions are removed at start-up
- :mod:`.replay`    a prior session read back for the read-only view
- :mod:`.bindings`  ``ctrl.sessions``: fields, actions, the send guard of a replay
"""

from __future__ import annotations

from manual_slop.sessions.pruning import PrunePolicy, keep_reason, prune
from manual_slop.sessions.registry import LogRegistry, SessionError, SessionRecord, scan_session
from manual_slop.sessions.replay import Replay, load_replay

__all__ = [
    "LogRegistry",
    "PrunePolicy",
    "Replay",
    "SessionError",
    "SessionRecord",
    "keep_reason",
    "load_replay",
    "prune",
    "scan_session",
]
