"""What every panel receives: read access to the controller and the GUI's own state,
and actions that go through the same registries as the Hook API.

Panels run on the main thread, so :class:`Actions` applies changes at once (the Hook API
queues the same operations as task dicts). A rejected change never raises into the
frame: it becomes a toast the user can read.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from manual_slop.automation import AutomationError
from manual_slop.dialogs import DialogPayloadError

if TYPE_CHECKING:
    from manual_slop.controller import AppController
    from manual_slop.gui.gui_state import GuiState
    from manual_slop.state import AppState

__all__ = ["Actions", "Ui"]


class Actions:
    """Field writes, button clicks and dialog decisions on behalf of the user (main thread)."""

    def __init__(self, controller: AppController, gui: GuiState) -> None:
        self._ctrl = controller
        self._gui = gui

    def _attempt(self, change: Callable[[], object], what: str = "") -> str:
        """Apply ``change``; a refusal becomes a toast (prefixed with ``what``) instead of an
        exception in the frame. The refusal's message, '' when applied."""
        try:
            change()
        except AutomationError as exc:
            self._gui.toast("error", f"{what}: {exc}" if what else str(exc))
            return str(exc) or type(exc).__name__
        return ""

    def set(self, field: str, value: Any) -> bool:
        """Validate and apply; False (and a toast) when refused."""
        return not self._attempt(lambda: self._ctrl.fields.set(field, value))

    def click(self, action: str, user_data: Any = None) -> bool:
        return not self.refusal(action, user_data)

    def refusal(self, action: str, user_data: Any = None, *, what: str = "") -> str:
        """Click ``action``; why it was refused ('' when it ran). The reason is also a toast,
        prefixed with ``what`` (the thing being changed) when given."""
        self._ctrl.perf.record_input()
        return self._attempt(lambda: self._ctrl.actions.invoke(action, user_data, source="gui"), what)

    def select(self, listbox: str, item: str) -> bool:
        return not self._attempt(lambda: self._ctrl.listboxes.select(listbox, item))

    def decide(
        self, dialog_id: str, approved: bool, payload: dict[str, Any] | None = None, abort: bool = False
    ) -> bool:
        """Approve or reject a pending dialog (the GUI path of resolve_pending_action)."""
        self._ctrl.perf.record_input()
        try:
            outcome = self._ctrl.clutch.resolve(dialog_id, approved, payload, abort=abort, decider="gui")
        except DialogPayloadError as exc:
            self._gui.toast("error", f"edit refused: {exc}")
            return False
        if outcome != "resolved":
            self._gui.toast("warning", f"that dialog was already {outcome.replace('_', ' ')}")
            return False
        return True


@dataclass(slots=True)
class Ui:
    """Bundle handed to every panel: ``ui.state`` to read, ``ui.act`` to change things."""

    ctrl: AppController
    gui: GuiState
    act: Actions

    @property
    def state(self) -> AppState:
        return self.ctrl.state

    def now(self) -> float:
        return time.monotonic()
