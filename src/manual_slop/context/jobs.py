"""Background jobs of the context package: blocking work off the main thread, result as a task.

:func:`run_job` runs ``work()`` on the controller's daemon executor (joined at
shutdown) and posts ``{"action": action, **fields, **result}`` back to the main
thread — or ``{..., "error": message}`` when the work raised. Handlers of those
task actions apply the result to the state; the job itself never touches it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from manual_slop.context.errors import ContextError

if TYPE_CHECKING:
    from manual_slop.controller import AppController

__all__ = ["run_job"]

log = logging.getLogger(__name__)


def run_job(
    ctrl: AppController, action: str | None, work: Callable[[], dict[str, Any]], **fields: Any
) -> bool:
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
