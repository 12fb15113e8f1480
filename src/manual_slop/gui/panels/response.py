"""Response: the last answer, rendered as markdown, and who gave it.

A stopped answer (``ai_status`` ``cancelled``) ends with the cut mark
(:data:`~manual_slop.request_flow.CUT_MARK`); it is shown as what it is — the partial
answer, then a note saying it was stopped and why — not as part of the markdown. An answer
from a fallback starts with :data:`~manual_slop.request_flow.FALLBACK_MARK`; it is shown as a
warning line above the answer. The header names the provider and model that answered.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from imgui_bundle import imgui, imgui_md

from manual_slop.gui.widgets import COLORS, text_wrapped_colored
from manual_slop.request_flow import CUT_MARK, FALLBACK_MARK

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["render_response", "split_cut", "split_fallback"]

_PREFIX, _, _SUFFIX = CUT_MARK.partition("{reason}")
_CUT = re.compile(r"\s*" + re.escape(_PREFIX) + r"(?P<reason>.*?)" + re.escape(_SUFFIX) + r"\s*\Z", re.S)


def split_cut(text: str) -> tuple[str, str | None]:
    """``(answer, reason)``: the answer without a trailing cut mark, and the mark's reason
    (None when the answer was not cut)."""
    match = _CUT.search(text)
    if match is None:
        return text, None
    return text[: match.start()], match.group("reason")


_FALLBACK = re.compile(r"\A(?P<mark>" + re.escape(FALLBACK_MARK.split("{", 1)[0]) + r"[^\]\n]*\])\n\n")


def split_fallback(text: str) -> tuple[str, str | None]:
    """``(answer, mark)``: the answer without a leading fallback mark, and the mark (None when
    the active provider answered)."""
    match = _FALLBACK.match(text)
    if match is None:
        return text, None
    return text[match.end() :], match.group("mark")


def render_response(ui: Ui) -> None:
    text = ui.state.ai_response
    body, reason = split_cut(text) if ui.state.ai_status == "cancelled" else (text, None)
    body, fallback = split_fallback(body)
    if imgui.button("Copy"):
        imgui.set_clipboard_text(body)
    imgui.same_line()
    imgui.text_disabled(f"{len(body):,} chars")
    if ui.state.ai_answered_by:
        imgui.same_line()
        imgui.text_disabled(f"| {ui.state.ai_answered_by}")
    if reason is not None:
        imgui.same_line()
        imgui.text_colored(COLORS["warn"], "| stopped: partial answer")
    imgui.separator()
    if fallback is not None:
        text_wrapped_colored(COLORS["warn"], fallback)  # not the provider you chose: said before the answer
    if imgui.begin_child("##response_body"):
        if body.strip():
            imgui_md.render(body)
        elif reason is None:
            imgui.text_disabled("No response yet.")
        if reason is not None:
            imgui.spacing()
            text_wrapped_colored(
                COLORS["warn"],
                f"Answer cut short ({reason})."
                if body.strip()
                else f"No answer arrived before the request was stopped ({reason}).",
            )
    imgui.end_child()
