"""Theme: the colour theme (dark, light, NERV), its accent colour and the font scale for HiDPI
screens, switched live and saved in ``config.toml``'s ``[gui]``.

The widgets only set fields (``theme``, ``theme_accent``, ``font_scale``); the window applies
the change to ImGui's style before its next frame (``App._apply_appearance``), so a switch over
the Hook API looks exactly like one made here. Below the form: the style's text contrast over
its backgrounds, and the semantic colours as they read on this theme.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from imgui_bundle import imgui

from manual_slop.gui.form import form, form_row
from manual_slop.gui.inputs import combo_field
from manual_slop.gui.theme import style_color
from manual_slop.gui.widgets import COLORS
from manual_slop.themes import ACCENTS, THEME_NAMES, contrast_ratio

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["LABELS", "render_theme"]

LABELS: dict[str, str] = {"Theme": "##theme", "Accent": "##theme_accent", "Font scale": "##font_scale"}
FONT_SCALES = (1.0, 1.25, 1.5, 2.0)  # one-click steps for common HiDPI factors
AA_CONTRAST = 4.5  # WCAG AA for body text


def render_theme(ui: Ui) -> None:
    state = ui.state
    with form("##theme_form", list(LABELS)) as shown:
        if shown:
            form_row("Theme", "nerv: black and amber, high contrast")
            combo_field(ui, LABELS["Theme"], "theme", list(THEME_NAMES))
            form_row("Accent", "colour of active widgets; default = the theme's own")
            combo_field(ui, LABELS["Accent"], "theme_accent", list(ACCENTS))
            form_row("Font scale", "text size: 1.5 or 2 on HiDPI screens")
            changed, value = imgui.slider_float(LABELS["Font scale"], state.font_scale, 0.5, 3.0, "%.2f")
            if changed:
                ui.act.set("font_scale", round(value, 2))
    for scale in FONT_SCALES:
        if imgui.small_button(f"{scale:g}x##font_scale"):
            ui.act.set("font_scale", scale)
        imgui.same_line()
    imgui.new_line()
    imgui.separator_text("Contrast")
    _contrast()
    imgui.separator_text("Status colours")
    for name in ("ok", "info", "warn", "error", "muted"):
        imgui.text_colored(COLORS[name], name)
        imgui.same_line()
    imgui.new_line()


def _contrast() -> None:
    """Text over the backgrounds it is drawn on, as WCAG contrast ratios."""
    text = style_color("text")
    for slot in ("window_bg", "frame_bg", "button", "title_bg_active"):
        ratio = contrast_ratio(text, style_color(slot))
        color = COLORS["ok"] if ratio >= AA_CONTRAST else COLORS["warn"]
        imgui.text_colored(color, f"{ratio:5.1f}:1")
        imgui.same_line()
        imgui.text_disabled(f"text on {slot}")
