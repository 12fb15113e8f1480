"""Gen + Send requests as automation sees them: queued → running → done | error.

The board is written by the main thread and the asyncio worker and read by the Hook API's
threads, so every access takes its lock.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RequestBoard", "RequestRecord"]


@dataclass(slots=True)
class RequestRecord:
    """One Gen + Send."""

    request_id: str
    prompt: str
    state: str = "queued"  # queued | running | done | error
    response: str | None = None
    error: str | None = None
    created: float = field(default_factory=time.time)
    finished: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"state": self.state, "response": self.response, "error": self.error}


class RequestBoard:
    """Every request of this session by id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: dict[str, RequestRecord] = {}

    def add(self, request_id: str, prompt: str) -> None:
        with self._lock:
            self._records[request_id] = RequestRecord(request_id, prompt)

    def update(self, request_id: str, **changes: Any) -> None:
        with self._lock:
            record = self._records.get(request_id)
            if record is not None:
                for key, value in changes.items():
                    setattr(record, key, value)

    def status(self, request_id: str) -> dict[str, Any] | None:
        with self._lock:
            record = self._records.get(request_id)
            return record.to_dict() if record else None
