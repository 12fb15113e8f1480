"""Bodies of the modals the HITL rules open: a tool's result held back by an ``after_tool`` /
``on_error`` rule (editable: the edited text is what the model sees), and a track paused by a
``cost_over`` rule (approve resumes it)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from imgui_bundle import imgui

from manual_slop.gui.modals.bodies import lines_left, multiline, reason_box
from manual_slop.gui.widgets import COLORS

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["cost_check", "tool_result", "tool_result_edits"]

ERROR_STATUSES = ("error", "timeout")


def tool_result(ui: Ui, dialog: dict[str, Any], buffers: dict[str, Any]) -> None:
    payload = dialog["payload"]
    status = str(payload.get("status", ""))
    failed = status in ERROR_STATUSES
    imgui.text("The result of")
    imgui.same_line()
    imgui.text_colored(COLORS["info"], str(payload.get("tool", "")))
    imgui.same_line()
    imgui.text_colored(COLORS["error"] if failed else COLORS["ok"], status)
    imgui.text_disabled(json.dumps(payload.get("args", {}))[:300])
    if failed:
        imgui.text_wrapped("Approve: the model sees this error and goes on. Reject: the request ends.")
    else:
        imgui.text_wrapped("Approve: the model sees the text below (as edited). Reject: it is withheld.")
    multiline("##tool_result", buffers, "result", str(payload.get("result", "")), lines_left(), wrap=True)
    reason_box(buffers)


def tool_result_edits(ui: Ui, dialog: dict[str, Any], buffers: dict[str, Any]) -> dict[str, Any] | None:
    return {"result": buffers["result"]} if "result" in buffers else {}


def cost_check(ui: Ui, dialog: dict[str, Any], buffers: dict[str, Any]) -> None:
    payload = dialog["payload"]
    imgui.text("Spend this session (list prices):")
    imgui.same_line()
    imgui.text_colored(COLORS["error"], f"${float(payload.get('spent_usd', 0.0)):.4f}")
    imgui.same_line()
    imgui.text(f"(threshold ${float(payload.get('threshold_usd', 0.0)):g})")
    if payload.get("unknown_calls"):  # an unknown price is never $0: say what the sum leaves out
        unknown = int(payload["unknown_calls"])
        imgui.text_colored(COLORS["warn"], f"{unknown} calls at unknown price not counted")
    imgui.text_wrapped(str(payload.get("message", "")))
    reason_box(buffers)
