"""A stand-in for the AI client (issue 5) with its observable behaviour: settings, comms log, send.

It logs each call to the controller's comms log the way the real client does (an OUT
request, an IN response), remembers what it was sent, and can be held open by a gate
or made to fail. Replace it with the real client's offline provider when that lands.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from manual_slop.controller import AppController


class StubClient:
    def __init__(
        self,
        ctrl_box: list[AppController] | None = None,
        reply: str = "stub reply",
        gate: threading.Event | None = None,
        fail: bool = False,
    ) -> None:
        self.ctrl_box = ctrl_box if ctrl_box is not None else []
        self.reply, self.gate, self.fail = reply, gate, fail
        self.calls: list[dict[str, Any]] = []
        self.settings: list[dict[str, Any]] = []
        self.resets = 0

    def apply_settings(self, settings: Mapping[str, Any]) -> None:
        self.settings.append(dict(settings))

    def send(self, md_content: str, user_message: str, **kwargs: Any) -> str:
        call = {
            "md": md_content,
            "message": user_message,
            "thread": threading.current_thread().name,
            **kwargs,
        }
        self.calls.append(call)
        ctrl = self.ctrl_box[0] if self.ctrl_box else None
        if ctrl is not None:
            ctrl.add_comms_entry(
                {"direction": "OUT", "kind": "request", "payload": {"message": user_message}}
            )
        if self.gate is not None and not self.gate.wait(10):
            raise TimeoutError("gate never opened")
        if self.fail:
            raise ConnectionError("stub provider is down")
        reply = self.reply(call) if callable(self.reply) else self.reply
        if ctrl is not None:
            ctrl.add_comms_entry({"direction": "IN", "kind": "response", "payload": {"text": reply}})
        return reply

    def reset_session(self) -> None:
        self.resets += 1
