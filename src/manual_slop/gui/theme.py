"""Applies a theme (:mod:`manual_slop.themes`) and the font scale to ImGui's style, and the
theme's status colours to ``widgets.COLORS`` (the one palette every panel draws with).

Called on the main thread only, before a frame starts (``App._pre_new_frame``), whenever
``(theme, accent, font_scale)`` differs from what was last applied: a switch from the Theme
panel, ``set_value`` over the Hook API or a reloaded config all land the same way.
"""

from __future__ import annotations

from imgui_bundle import ImVec4, hello_imgui, imgui

from manual_slop.gui.widgets import COLORS
from manual_slop.themes import status_colors, theme_palette

__all__ = ["BASE_THEMES", "apply_appearance", "style_color"]

# the hello_imgui theme each of ours starts from (NERV replaces every colour it uses)
BASE_THEMES = {
    "dark": hello_imgui.ImGuiTheme_.darcula_darker,
    "light": hello_imgui.ImGuiTheme_.white_is_white,
    "nerv": hello_imgui.ImGuiTheme_.black_is_black,
}


def apply_appearance(theme: str, accent: str, font_scale: float) -> None:
    """Set the style's colours from ``theme`` and ``accent`` and its font scale (HiDPI)."""
    hello_imgui.apply_theme(BASE_THEMES.get(theme, BASE_THEMES["dark"]))
    style = imgui.get_style()
    for slot, rgba in theme_palette(theme if theme in BASE_THEMES else "dark", accent).items():
        style.set_color_(getattr(imgui.Col_, slot), ImVec4(*rgba))
    if theme == "nerv":
        # square corners and visible frames: the terminal look, and edges that read at any scale
        style.window_rounding = style.frame_rounding = style.tab_rounding = 0.0
        style.frame_border_size = 1.0
    style.font_scale_main = font_scale
    # the status colours are changed in place: panels keep references to them (ROLE_COLORS)
    for name, (r, g, b, a) in status_colors(theme).items():
        color = COLORS[name]
        color.x, color.y, color.z, color.w = r, g, b, a


def style_color(slot: str) -> tuple[float, float, float, float]:
    """The style's current colour of ``slot`` (an ``imgui.Col_`` name) as an RGBA tuple."""
    color = imgui.get_style().color_(getattr(imgui.Col_, slot))
    return (color.x, color.y, color.z, color.w)
