"""The Approve MMA Step modal: the step's fields as separate inputs, not one JSON string.

An ``mma_step`` dialog's payload is a string; MMA puts a JSON object in it (a worker's
tool call ``{"tool", "args", "preview"}``, or a replan ``{"replan", "replaces",
"tickets"}``). Each top-level field gets its own input, and a nested object (the
call's ``args``) one input per key: strings are edited as text, other values as JSON.
Fields the runtime would refuse or ignore when edited are shown, not editable. On
Approve the fields are put back together into the payload string; a payload that is not
a JSON object is edited as plain text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from imgui_bundle import ImVec2, imgui

from manual_slop.gui.form import form, form_row
from manual_slop.gui.modals.bodies import diff_view, footer_height, lines_left, multiline, reason_box
from manual_slop.gui.widgets import COLORS, text_wrapped_colored

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["READ_ONLY", "StepField", "mma_step", "mma_step_edits", "parse_step", "rebuild", "step_fields"]

# tool: a step naming another tool is refused; preview: the runtime's own rendering of the
# effect; replan / replaces: which replan this is and what it replaces, fixed by the runtime.
READ_ONLY = frozenset({"tool", "preview", "replan", "replaces"})
LONG_TEXT = 60  # characters from which a string gets a multi-line box
_PARSED = "parsed_step"  # buffers key of the parsed payload ("payload" and "fields" are edits)


@dataclass(frozen=True, slots=True)
class StepField:
    """One editable value of the step: where it sits, and how it is edited."""

    path: tuple[str, ...]  # ("args", "path") for args.path
    as_json: bool  # False: the value is a string, edited as text
    initial: str  # the text the input starts with

    @property
    def label(self) -> str:
        return ".".join(self.path)

    @property
    def shown_label(self) -> str:
        """The label in the modal: JSON-edited values say so."""
        return self.label + (" (JSON)" if self.as_json else "")


def parse_step(text: str) -> dict[str, Any] | None:
    """The payload as a JSON object, or None when it is something else."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _field(path: tuple[str, ...], value: Any) -> StepField:
    if isinstance(value, str):
        return StepField(path, False, value)
    return StepField(path, True, json.dumps(value, indent=2, ensure_ascii=False))


def step_fields(step: dict[str, Any]) -> list[StepField]:
    """The editable fields of a parsed step, in payload order; objects one level deep."""
    fields: list[StepField] = []
    for key, value in step.items():
        if key in READ_ONLY:
            continue
        if isinstance(value, dict) and value:
            fields.extend(_field((key, sub), sub_value) for sub, sub_value in value.items())
        else:
            fields.append(_field((key,), value))
    return fields


def rebuild(step: dict[str, Any], fields: list[StepField], texts: dict[str, str]) -> dict[str, Any]:
    """The step with each field's typed text put back; ValueError naming a field whose
    JSON does not parse."""
    result = json.loads(json.dumps(step))  # a deep copy of plain JSON
    for spec in fields:
        text = texts.get(spec.label, spec.initial)
        if spec.as_json:
            try:
                value: Any = json.loads(text)
            except ValueError as exc:
                raise ValueError(f"{spec.label} is not valid JSON: {exc}") from None
        else:
            value = text
        target = result
        for key in spec.path[:-1]:
            target = target[key]
        target[spec.path[-1]] = value
    return result


# -- drawing --------------------------------------------------------------------------------
def _parsed(dialog: dict[str, Any], buffers: dict[str, Any]) -> tuple[dict[str, Any], list[StepField]] | None:
    """The payload's step and its fields, or None when the payload is not a JSON object;
    parsed once per dialog (kept in its buffers), not every frame."""
    if _PARSED not in buffers:
        step = parse_step(str(dialog["payload"].get("payload", "")))
        buffers[_PARSED] = None if step is None else (step, step_fields(step))
    return buffers[_PARSED]


def mma_step(ui: Ui, dialog: dict[str, Any], buffers: dict[str, Any]) -> None:
    payload = dialog["payload"]
    imgui.text(f"Ticket {payload.get('ticket_id', '?')} proposes this step")
    parsed = _parsed(dialog, buffers)
    if parsed is None:
        text = str(payload.get("payload", ""))
        multiline("##step_payload", buffers, "payload", text, lines_left(), wrap=True)
        reason_box(buffers)
        return
    step, fields = parsed
    texts: dict[str, str] = buffers.setdefault("fields", {spec.label: spec.initial for spec in fields})
    if imgui.begin_child("##step_fields", ImVec2(-1, -footer_height())):
        _fixed(step)
        labels = [spec.shown_label for spec in fields]
        with form("##step_form", labels) as shown:
            if shown:
                for spec in fields:
                    _input(spec, texts)
        if isinstance(step.get("preview"), str) and step["preview"]:
            imgui.text("Effect")
            diff_view("##step_preview", step["preview"], imgui.get_text_line_height_with_spacing() * 10)
    imgui.end_child()
    reason_box(buffers)


def _fixed(step: dict[str, Any]) -> None:
    """The fields that are shown but not edited (the preview gets its own view)."""
    for key in sorted(READ_ONLY & step.keys() - {"preview"}):
        imgui.text_disabled(f"{key}:")
        imgui.same_line()
        value = step[key]
        text_wrapped_colored(COLORS["info"], value if isinstance(value, str) else json.dumps(value))


def _input(spec: StepField, texts: dict[str, str]) -> None:
    form_row(spec.shown_label, 'a JSON value: true, 3, ["a"], {...}' if spec.as_json else "")
    widget = "##" + spec.label.replace("#", "_")
    current = texts.get(spec.label, spec.initial)
    if "\n" in spec.initial or len(spec.initial) > LONG_TEXT:
        lines = min(12, max(3, current.count("\n") + 2))
        height = imgui.get_text_line_height_with_spacing() * lines
        flags = imgui.InputTextFlags_.none if spec.as_json else imgui.InputTextFlags_.word_wrap
        size = ImVec2(-imgui.FLT_MIN, height)
        _, texts[spec.label] = imgui.input_text_multiline(widget, current, size, flags)
    else:
        _, texts[spec.label] = imgui.input_text(widget, current)


# -- edits ----------------------------------------------------------------------------------
def mma_step_edits(ui: Ui, dialog: dict[str, Any], buffers: dict[str, Any]) -> dict[str, Any] | None:
    """``{"payload": the step put back together}`` when something changed, ``{}`` when not,
    None (and a toast) when a JSON field does not parse."""
    original = str(dialog["payload"].get("payload", ""))
    if "payload" in buffers:
        return {} if buffers["payload"] == original else {"payload": buffers["payload"]}
    parsed = _parsed(dialog, buffers)
    if parsed is None or "fields" not in buffers:
        return {}
    step, fields = parsed
    try:
        edited = rebuild(step, fields, buffers["fields"])
    except ValueError as exc:
        ui.gui.toast("error", str(exc))
        return None
    return {} if edited == step else {"payload": json.dumps(edited, indent=2, ensure_ascii=False)}
