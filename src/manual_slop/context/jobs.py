"""Background jobs of the context package: blocking work off the main thread, result as a task.

:func:`run_job` runs ``work()`` on the controller's daemon executor (joined at
shutdown) and posts ``{"action": action, **fields, **result}`` back to the main
thread — or ``{..., "error": message}`` when the work raised. Handlers of those
task actions apply the result to the state; the job itself never touches it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol

from manual_slop.context.errors import ContextError

__all__ = ["JobHost", "run_job"]

log = logging.getLogger(__name__)


class JobHost(Protocol):
    """What a job needs from the app (the controller): a daemon thread, the main thread's queue."""

    def run_in_background(self, fn: Callable[[], Any]) -> Future[Any] | None: ...

    def post_gui_task(self, task: dict[str, Any]) -> str | None: ...


def run_job(ctrl: JobHost, action: str | None, work: Callable[[], dict[str, Any]], **fields: Any) -> bool:
    """Start ``work`` off the main thread; False when the app is shutting down.

    With ``action=None`` nothing is posted on success (the work posts what it needs)
    and a failure becomes an error notification.
    """

    def job() -> None:
        try:
            result = work()
        except ContextError as exc:
            result = {"error": str(exc)}
        except Exception as exc:  # a bug in the job: keep the traceback, tell the user
            log.exception("background job %s failed", action)
            result = {"error": f"{type(exc).__name__}: {exc}"}
        if action is not None:
            ctrl.post_gui_task({"action": action, **fields, **result})
        elif "error" in result:
            ctrl.post_gui_task({"action": "notify", "level": "error", "message": result["error"]})

    return ctrl.run_in_background(job) is not None
