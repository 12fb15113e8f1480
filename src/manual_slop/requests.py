"""Gen + Send requests as automation sees them: queued → running → done | error | cancelled.

A request being stopped is ``cancelling`` until its provider let go. The board is written by
the main thread, the asyncio worker and (for a cancel) any thread, and read by the Hook
API's threads, so every access takes its lock.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from manual_slop.cancel import CancelToken

__all__ = ["FINISHED_KEPT", "FINISHED_STATES", "RequestBoard", "RequestRecord"]

FINISHED_STATES = frozenset({"done", "error", "cancelled"})
# Finished requests kept for GET /api/requests/{id} (each holds its prompt and response): the
# board grew by every Gen + Send of the session (found by the R7 soak). Unfinished ones stay.
FINISHED_KEPT = 1_000


@dataclass(slots=True)
class RequestRecord:
    """One Gen + Send."""

    request_id: str
    prompt: str
    cancel: CancelToken = field(default_factory=CancelToken)
    state: str = "queued"  # queued | running | cancelling | done | error | cancelled
    response: str | None = None
    error: str | None = None
    created: float = field(default_factory=time.time)
    finished: float | None = None
    provider: str | None = None  # who answered (None until someone did)
    model: str | None = None
    fallback: str | None = None  # why not the active provider ('' when it was)
    context: dict[str, Any] | None = None  # how the context was fitted to the window (context.fit)

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "response": self.response,
            "error": self.error,
            "provider": self.provider,
            "model": self.model,
            "fallback": self.fallback,
            "context": self.context,
        }


class RequestBoard:
    """The session's requests by id: every unfinished one and the last ``finished_kept`` that ended."""

    def __init__(self, finished_kept: int = FINISHED_KEPT) -> None:
        self._lock = threading.Lock()
        self._records: dict[str, RequestRecord] = {}
        self._finished_kept = finished_kept

    def add(self, request_id: str, prompt: str, cancel: CancelToken | None = None) -> None:
        with self._lock:
            self._records[request_id] = RequestRecord(request_id, prompt, cancel or CancelToken())
            if len(self._records) > self._finished_kept + max(1, self._finished_kept // 10):
                self._forget_oldest_finished()

    def _forget_oldest_finished(self) -> None:
        """Drop the oldest finished records beyond ``finished_kept`` (in chunks: not per add)."""
        finished = [r.request_id for r in self._records.values() if r.state in FINISHED_STATES]
        for request_id in finished[: max(0, len(finished) - self._finished_kept)]:
            del self._records[request_id]

    def update(self, request_id: str, **changes: Any) -> None:
        with self._lock:
            record = self._records.get(request_id)
            if record is not None:
                for key, value in changes.items():
                    setattr(record, key, value)

    def mark_cancelling(self, request_id: str) -> None:
        """A stop was asked: ``cancelling`` unless the request already ended."""
        with self._lock:
            record = self._records.get(request_id)
            if record is not None and record.state not in FINISHED_STATES:
                record.state = "cancelling"

    def status(self, request_id: str) -> dict[str, Any] | None:
        with self._lock:
            record = self._records.get(request_id)
            return record.to_dict() if record else None

    def state(self, request_id: str) -> str | None:
        with self._lock:
            record = self._records.get(request_id)
            return record.state if record else None

    def token(self, request_id: str) -> CancelToken | None:
        with self._lock:
            record = self._records.get(request_id)
            return record.cancel if record else None

    def ids(self) -> list[str]:
        """Every request id, oldest first."""
        with self._lock:
            return list(self._records)

    def unfinished(self) -> list[str]:
        """Ids of the requests that have not ended, oldest first."""
        with self._lock:
            return [r.request_id for r in self._records.values() if r.state not in FINISHED_STATES]
