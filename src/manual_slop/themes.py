"""Colour themes as data: names, accents, the NERV palette, and a contrast check.

Nothing here imports ImGui: a palette is a mapping from an ImGui colour slot's name
(``imgui.Col_`` member, e.g. ``"window_bg"``) to an RGBA tuple, so the palettes are
checked by unit tests and validated headless; :mod:`manual_slop.gui.theme` applies them.

- ``dark`` and ``light`` start from hello_imgui's themes; an accent other than
  ``default`` recolours their active and selected widgets (:func:`accent_overrides`).
- ``nerv`` is a high-contrast terminal look built here from scratch: black background,
  amber text, orange frames, red title bars and warnings, green and cyan highlights.

Each theme also has its status colours (:func:`status_colors`: ok, warn, error, … — the keys
of ``gui.widgets.COLORS``), chosen to read on its background: NERV's warnings are red, not the
amber of its text; the light theme's are darker than the dark theme's.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "ACCENTS",
    "RGBA",
    "THEME_NAMES",
    "accent_overrides",
    "blend",
    "contrast_ratio",
    "nerv_palette",
    "relative_luminance",
    "status_colors",
    "text_contrasts",
    "theme_palette",
]

RGBA = tuple[float, float, float, float]

THEME_NAMES: tuple[str, ...] = ("dark", "light", "nerv")
# "default": the theme's own accent (NERV's is orange)
ACCENTS: dict[str, RGBA | None] = {
    "default": None,
    "orange": (1.00, 0.45, 0.00, 1.0),
    "amber": (1.00, 0.72, 0.12, 1.0),
    "red": (0.95, 0.12, 0.10, 1.0),
    "green": (0.20, 0.95, 0.35, 1.0),
    "cyan": (0.10, 0.85, 0.95, 1.0),
    "purple": (0.62, 0.35, 0.95, 1.0),  # Unit-01
}
NERV_ORANGE: RGBA = (1.00, 0.45, 0.00, 1.0)
NERV_AMBER: RGBA = (1.00, 0.72, 0.20, 1.0)
NERV_BLACK: RGBA = (0.02, 0.02, 0.02, 1.0)
NERV_RED: RGBA = (0.85, 0.05, 0.05, 1.0)
NERV_GREEN: RGBA = (0.20, 1.00, 0.40, 1.0)
NERV_CYAN: RGBA = (0.10, 0.90, 1.00, 1.0)
# status colours by theme (gui.widgets.COLORS keys); dark's are the app's original ones
_DARK_STATUS: dict[str, RGBA] = {
    "ok": (0.40, 0.85, 0.45, 1.0),
    "warn": (0.98, 0.70, 0.20, 1.0),
    "error": (0.95, 0.35, 0.35, 1.0),
    "info": (0.55, 0.75, 1.00, 1.0),
    "muted": (0.60, 0.60, 0.60, 1.0),
    "todo": (0.70, 0.70, 0.70, 1.0),
    "in_progress": (0.35, 0.65, 1.00, 1.0),
}
_LIGHT_STATUS: dict[str, RGBA] = {
    "ok": (0.05, 0.48, 0.15, 1.0),
    "warn": (0.62, 0.36, 0.00, 1.0),
    "error": (0.78, 0.08, 0.08, 1.0),
    "info": (0.08, 0.32, 0.75, 1.0),
    "muted": (0.40, 0.40, 0.40, 1.0),
    "todo": (0.35, 0.35, 0.35, 1.0),
    "in_progress": (0.05, 0.35, 0.80, 1.0),
}
_NERV_STATUS: dict[str, RGBA] = {
    "ok": NERV_GREEN,
    "warn": (1.00, 0.30, 0.05, 1.0),  # red-orange: apart from the amber text
    "error": (1.00, 0.15, 0.15, 1.0),
    "info": NERV_CYAN,
    "muted": (0.66, 0.48, 0.20, 1.0),
    "todo": (0.80, 0.60, 0.25, 1.0),
    "in_progress": NERV_CYAN,
}


def status_colors(theme: str) -> dict[str, RGBA]:
    """The status colours of ``theme``: ok, warn, error, info, muted and the ticket states
    (completed = ok, blocked = warn, killed = error)."""
    base = {"light": _LIGHT_STATUS, "nerv": _NERV_STATUS}.get(theme, _DARK_STATUS)
    return {**base, "completed": base["ok"], "blocked": base["warn"], "killed": base["error"]}


# slots an accent recolours on every theme (the "you are here" of the widgets)
ACCENT_SLOTS: tuple[str, ...] = (
    "check_mark",
    "slider_grab",
    "slider_grab_active",
    "button_active",
    "header_active",
    "separator_active",
    "resize_grip_active",
    "tab_selected_overline",
    "nav_cursor",
    "plot_lines",
    "plot_histogram",
    "docking_preview",
    "text_link",
)


def blend(a: RGBA, b: RGBA, t: float) -> RGBA:
    """``a`` moved ``t`` (0..1) of the way to ``b``, alpha included."""
    return (
        a[0] + (b[0] - a[0]) * t,
        a[1] + (b[1] - a[1]) * t,
        a[2] + (b[2] - a[2]) * t,
        a[3] + (b[3] - a[3]) * t,
    )


def _alpha(color: RGBA, alpha: float) -> RGBA:
    return (color[0], color[1], color[2], alpha)


def relative_luminance(color: RGBA) -> float:
    """WCAG 2 relative luminance of an opaque sRGB colour (0 black .. 1 white)."""

    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(max(0.0, min(1.0, c))) for c in color[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(foreground: RGBA, background: RGBA) -> float:
    """WCAG contrast ratio (1..21) of text over a background; 4.5 is the AA bar for text.

    A translucent foreground is first blended over the background, as the screen shows it."""
    if foreground[3] < 1.0:
        foreground = blend(_alpha(background, 1.0), _alpha(foreground, 1.0), foreground[3])
    light, dark = sorted((relative_luminance(foreground), relative_luminance(background)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def accent_overrides(accent: str) -> dict[str, RGBA]:
    """Slot colours an accent sets ({} for ``default``); the frame and header fills get a
    translucent tint of it so hovered and selected rows follow the accent too."""
    if accent not in ACCENTS:
        raise ValueError(f"unknown accent {accent!r}; expected one of {', '.join(ACCENTS)}")
    color = ACCENTS[accent]
    if color is None:
        return {}
    out = dict.fromkeys(ACCENT_SLOTS, color)
    out.update(
        {
            "button_hovered": _alpha(color, 0.55),
            "header": _alpha(color, 0.30),
            "header_hovered": _alpha(color, 0.50),
            "frame_bg_active": _alpha(color, 0.35),
            "tab_hovered": _alpha(color, 0.55),
            "text_selected_bg": _alpha(color, 0.35),
            "input_text_cursor": color,
        }
    )
    return out


def nerv_palette(accent: str = "default") -> dict[str, RGBA]:
    """The NERV theme: every slot that shows text or a frame, black and amber, with ``accent``
    (default orange) on the active widgets."""
    black, amber, orange = NERV_BLACK, NERV_AMBER, NERV_ORANGE
    deep_orange = blend(black, orange, 0.30)
    mid_orange = blend(black, orange, 0.55)
    deep_red = blend(black, NERV_RED, 0.45)
    palette: dict[str, RGBA] = {
        "text": amber,
        "text_disabled": (0.62, 0.45, 0.18, 1.0),
        "text_link": NERV_CYAN,
        "window_bg": black,
        "child_bg": black,
        "popup_bg": (0.05, 0.03, 0.01, 0.98),
        "menu_bar_bg": (0.08, 0.04, 0.00, 1.0),
        "border": _alpha(orange, 0.75),
        "border_shadow": (0.0, 0.0, 0.0, 0.0),
        "frame_bg": (0.10, 0.05, 0.00, 1.0),
        "frame_bg_hovered": deep_orange,
        "frame_bg_active": mid_orange,
        "title_bg": (0.18, 0.02, 0.00, 1.0),
        "title_bg_active": deep_red,
        "title_bg_collapsed": (0.10, 0.01, 0.00, 1.0),
        "scrollbar_bg": black,
        "scrollbar_grab": deep_orange,
        "scrollbar_grab_hovered": mid_orange,
        "scrollbar_grab_active": orange,
        "check_mark": NERV_GREEN,
        "slider_grab": orange,
        "slider_grab_active": NERV_GREEN,
        "button": deep_orange,
        "button_hovered": mid_orange,
        "button_active": blend(black, orange, 0.75),
        "header": deep_orange,
        "header_hovered": mid_orange,
        "header_active": blend(black, orange, 0.70),
        "separator": _alpha(orange, 0.60),
        "separator_hovered": NERV_CYAN,
        "separator_active": NERV_GREEN,
        "resize_grip": _alpha(orange, 0.30),
        "resize_grip_hovered": _alpha(orange, 0.70),
        "resize_grip_active": NERV_GREEN,
        "tab": (0.12, 0.05, 0.00, 1.0),
        "tab_hovered": mid_orange,
        "tab_selected": deep_red,
        "tab_selected_overline": orange,
        "tab_dimmed": (0.06, 0.03, 0.00, 1.0),
        "tab_dimmed_selected": (0.16, 0.04, 0.00, 1.0),
        "tab_dimmed_selected_overline": _alpha(orange, 0.5),
        "docking_preview": _alpha(orange, 0.45),
        "docking_empty_bg": black,
        "plot_lines": NERV_GREEN,
        "plot_lines_hovered": NERV_CYAN,
        "plot_histogram": orange,
        "plot_histogram_hovered": NERV_CYAN,
        "table_header_bg": (0.14, 0.06, 0.00, 1.0),
        "table_border_strong": _alpha(orange, 0.70),
        "table_border_light": _alpha(orange, 0.30),
        "table_row_bg": (0.0, 0.0, 0.0, 0.0),
        "table_row_bg_alt": (1.0, 0.45, 0.0, 0.05),
        "text_selected_bg": _alpha(NERV_CYAN, 0.35),
        "drag_drop_target": NERV_GREEN,
        "nav_cursor": NERV_CYAN,
        "nav_windowing_highlight": _alpha(NERV_CYAN, 0.70),
        "nav_windowing_dim_bg": (0.0, 0.0, 0.0, 0.6),
        "modal_window_dim_bg": (0.15, 0.0, 0.0, 0.55),
        "input_text_cursor": NERV_GREEN,
    }
    if accent != "default":
        palette.update(accent_overrides(accent))
    return palette


def theme_palette(theme: str, accent: str = "default") -> dict[str, RGBA]:
    """The slot colours the app sets on top of the theme's base (hello_imgui's for dark and
    light, ImGui's dark colours for NERV)."""
    if theme not in THEME_NAMES:
        raise ValueError(f"unknown theme {theme!r}; expected one of {', '.join(THEME_NAMES)}")
    if theme == "nerv":
        return nerv_palette(accent)
    return accent_overrides(accent)


# the slots text is drawn on
TEXT_BACKGROUNDS = (
    "window_bg", "child_bg", "popup_bg", "frame_bg", "button", "header", "title_bg_active", "tab_selected",
    "menu_bar_bg", "table_header_bg",
)  # fmt: skip


def text_contrasts(palette: Mapping[str, RGBA]) -> dict[str, float]:
    """Contrast of the text colour over each background text is drawn on (for the checks)."""
    text = palette["text"]
    return {slot: contrast_ratio(text, palette[slot]) for slot in TEXT_BACKGROUNDS if slot in palette}

