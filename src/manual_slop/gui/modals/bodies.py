"""The body of each approval modal: what it shows and which edits it returns.

A body draws the dialog's payload into per-dialog ``buffers`` (so edits survive
between frames); the matching ``*_edits`` function turns the buffers into the
payload edits sent with Approve, or None (with a toast) when they are invalid.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from imgui_bundle import ImVec2, imgui, imgui_color_text_edit

from manual_slop.gui.widgets import COLORS

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

TextEditor = imgui_color_text_edit.TextEditor

__all__ = [
    "ask",
    "ask_edits",
    "confirm_script",
    "confirm_script_edits",
    "diff_view",
    "footer_height",
    "generic",
    "lines_left",
    "mma_spawn",
    "mma_spawn_edits",
    "multiline",
    "no_edits",
    "reason_box",
    "tool_approval",
    "tool_approval_edits",
]


def reason_box(buffers: dict[str, Any]) -> None:
    imgui.set_next_item_width(-1)
    _, buffers["reason"] = imgui.input_text_with_hint(
        "##reason", "reason (sent to the model if you reject)", buffers.get("reason", "")
    )


def multiline(
    label: str, buffers: dict[str, Any], key: str, initial: str, lines: float, *, wrap: bool = False
) -> None:
    """A multi-line input ``lines`` text lines high, editing ``buffers[key]`` (``initial`` at first)."""
    if key not in buffers:
        buffers[key] = initial
    height = imgui.get_text_line_height_with_spacing() * lines
    flags = imgui.InputTextFlags_.word_wrap if wrap else imgui.InputTextFlags_.none
    _, buffers[key] = imgui.input_text_multiline(label, buffers[key], ImVec2(-1, height), flags)


def footer_height() -> float:
    """The height the reason box and the buttons take below a body."""
    return imgui.get_frame_height_with_spacing() * 3


def lines_left() -> float:
    """Text lines that fill the dialog down to the reason box and buttons (at least 4)."""
    available = imgui.get_content_region_avail().y - footer_height()
    return max(4.0, available / imgui.get_text_line_height_with_spacing())


def _json_args(ui: Ui, buffers: dict[str, Any]) -> dict[str, Any] | None:
    try:
        parsed = json.loads(buffers["args_text"])
    except ValueError as exc:
        ui.gui.toast("error", f"arguments are not valid JSON: {exc}")
        return None
    if not isinstance(parsed, dict):
        ui.gui.toast("error", "arguments must be a JSON object")
        return None
    return parsed


# -- confirm_script ---------------------------------------------------------------------
def confirm_script(ui: Ui, dialog: dict[str, Any], buffers: dict[str, Any]) -> None:
    payload = dialog["payload"]
    imgui.text("The model wants to run this script in")
    imgui.same_line()
    imgui.text_colored(COLORS["info"], str(payload.get("base_dir", "")))
    editor = buffers.get("editor")
    if editor is None:
        editor = buffers["editor"] = TextEditor()
        editor.set_text(str(payload.get("script", "")))
        editor.set_show_line_numbers_enabled(True)
        editor.set_show_whitespaces_enabled(False)
    editor.render("##script_editor", ImVec2(-1, -footer_height()))
    reason_box(buffers)


def confirm_script_edits(ui: Ui, dialog: dict[str, Any], buffers: dict[str, Any]) -> dict[str, Any] | None:
    editor = buffers.get("editor")
    return {} if editor is None else {"script": editor.get_text()}


# -- tool_approval ----------------------------------------------------------------------
def tool_approval(ui: Ui, dialog: dict[str, Any], buffers: dict[str, Any]) -> None:
    payload = dialog["payload"]
    imgui.text("Tool:")
    imgui.same_line()
    imgui.text_colored(COLORS["info"], str(payload.get("tool", "")))
    imgui.text("Arguments (editable JSON)")
    multiline("##args", buffers, "args_text", json.dumps(payload.get("args", {}), indent=2), 6)
    imgui.text("Effect")
    diff_view("##diff", str(payload.get("diff", "")), -footer_height())
    reason_box(buffers)


def diff_view(child_id: str, diff: str, height: float) -> None:
    """A unified diff in a bordered child, added lines green, removed red, hunks blue."""
    if imgui.begin_child(child_id, ImVec2(-1, height), imgui.ChildFlags_.borders):
        for line in diff.splitlines() or ["(no preview)"]:
            if line.startswith("+") and not line.startswith("+++"):
                imgui.text_colored(COLORS["ok"], line)
            elif line.startswith("-") and not line.startswith("---"):
                imgui.text_colored(COLORS["error"], line)
            elif line.startswith("@@"):
                imgui.text_colored(COLORS["info"], line)
            else:
                imgui.text_unformatted(line)
    imgui.end_child()


def tool_approval_edits(ui: Ui, dialog: dict[str, Any], buffers: dict[str, Any]) -> dict[str, Any] | None:
    if "args_text" not in buffers:
        return {}
    args = _json_args(ui, buffers)
    return None if args is None else {"args": args}


# -- mma_spawn --------------------------------------------------------------------------
def mma_spawn(ui: Ui, dialog: dict[str, Any], buffers: dict[str, Any]) -> None:
    payload = dialog["payload"]
    imgui.text(f"Start a {payload.get('role', 'worker')} on ticket {payload.get('ticket_id', '?')}")
    imgui.text("Prompt (editable)")
    multiline("##spawn_prompt", buffers, "prompt", str(payload.get("prompt", "")), 6, wrap=True)
    imgui.text("Context (editable)")
    context = str(payload.get("context_md", ""))
    multiline("##spawn_context", buffers, "context_md", context, lines_left(), wrap=True)
    reason_box(buffers)


def mma_spawn_edits(ui: Ui, dialog: dict[str, Any], buffers: dict[str, Any]) -> dict[str, Any] | None:
    return {k: buffers[k] for k in ("prompt", "context_md") if k in buffers}


# -- ask --------------------------------------------------------------------------------
def ask(ui: Ui, dialog: dict[str, Any], buffers: dict[str, Any]) -> None:
    payload = dialog["payload"]
    imgui.text_wrapped(str(payload.get("question", "")))
    if payload.get("tool"):
        imgui.text("Tool:")
        imgui.same_line()
        imgui.text_colored(COLORS["info"], str(payload["tool"]))
    imgui.text("Arguments (editable JSON)")
    multiline("##ask_args", buffers, "args_text", json.dumps(payload.get("args", {}), indent=2), 6)
    imgui.set_next_item_width(-1)
    _, buffers["answer"] = imgui.input_text_with_hint(
        "##answer", "answer (optional)", buffers.get("answer", "")
    )
    reason_box(buffers)


def ask_edits(ui: Ui, dialog: dict[str, Any], buffers: dict[str, Any]) -> dict[str, Any] | None:
    edits: dict[str, Any] = {}
    if "args_text" in buffers:
        args = _json_args(ui, buffers)
        if args is None:
            return None
        edits["args"] = args
    if buffers.get("answer"):
        edits["answer"] = buffers["answer"]
    return edits


# -- anything else ----------------------------------------------------------------------
def generic(ui: Ui, dialog: dict[str, Any], buffers: dict[str, Any]) -> None:
    imgui.text_wrapped(json.dumps(dialog.get("payload", {}), indent=2, default=str))


def no_edits(ui: Ui, dialog: dict[str, Any], buffers: dict[str, Any]) -> dict[str, Any] | None:
    return {}
