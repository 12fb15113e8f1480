"""The ``recovery`` modal: a ticket whose strategies ran out, and what the human wants next.

It shows the failure (class, severity, error) and every step already tried, and offers the
dialog's choices as radio buttons; the ticket's description is editable and sent when the
choice is *edit*. Approve carries the choice out; Reject leaves the ticket blocked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from imgui_bundle import imgui

from manual_slop.gui.modals.bodies import lines_left, multiline, reason_box
from manual_slop.gui.widgets import COLORS

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["CHOICE_LABELS", "recovery", "recovery_edits"]

CHOICE_LABELS = {
    "retry": "Retry (fresh attempts)",
    "skip": "Skip (dependents go on)",
    "edit": "Edit the ticket and retry",
    "abort": "Abort the track",
}


def recovery(ui: Ui, dialog: dict[str, Any], buffers: dict[str, Any]) -> None:
    payload = dialog["payload"]
    imgui.text(
        f"Ticket {payload.get('ticket_id', '?')} of track {payload.get('track_id', '?')} keeps failing"
    )
    imgui.text("Failure:")
    imgui.same_line()
    imgui.text_colored(COLORS["warn"], f"{payload.get('failure', '?')} ({payload.get('severity', '?')})")
    imgui.text_wrapped(str(payload.get("error", "")))
    imgui.separator()
    imgui.text("Tried:")
    for line in payload.get("tried", []):
        imgui.bullet_text(str(line))
    imgui.separator()
    choices = [str(c) for c in payload.get("choices", [])]
    buffers.setdefault("choice", str(payload.get("choice", choices[0] if choices else "")))
    for choice in choices:
        if imgui.radio_button(CHOICE_LABELS.get(choice, choice), buffers["choice"] == choice):
            buffers["choice"] = choice
        imgui.same_line()
    imgui.new_line()
    imgui.text("Ticket description (sent with Edit)")
    multiline("##recovery_description", buffers, "description", str(payload.get("description", "")),
              max(3.0, lines_left() - 1), wrap=True)  # fmt: skip
    reason_box(buffers)


def recovery_edits(ui: Ui, dialog: dict[str, Any], buffers: dict[str, Any]) -> dict[str, Any] | None:
    choice = buffers.get("choice", dialog["payload"].get("choice", "retry"))
    edits: dict[str, Any] = {"choice": choice}
    if choice == "edit":
        description = str(buffers.get("description", "")).strip()
        if not description:
            ui.gui.toast("error", "Edit needs a ticket description")
            return None
        edits["description"] = description
    if buffers.get("reason"):
        edits["reason"] = buffers["reason"]
    return edits
