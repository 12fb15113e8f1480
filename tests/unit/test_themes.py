"""The theme palettes as data: NERV reads at high contrast, accents recolour the active widgets,
every slot named is a real ImGui colour, and bad names are refused with the choices."""

from __future__ import annotations

import pytest
from imgui_bundle import imgui

from manual_slop.themes import (
    ACCENTS,
    TEXT_BACKGROUNDS,
    THEME_NAMES,
    accent_overrides,
    contrast_ratio,
    nerv_palette,
    relative_luminance,
    status_colors,
    text_contrasts,
    theme_palette,
)


def test_contrast_ratio_follows_wcag() -> None:
    black, white = (0.0, 0.0, 0.0, 1.0), (1.0, 1.0, 1.0, 1.0)
    assert contrast_ratio(white, black) == pytest.approx(21.0)
    assert contrast_ratio(black, white) == pytest.approx(21.0)  # order does not matter
    assert contrast_ratio(black, black) == pytest.approx(1.0)
    assert contrast_ratio((0.5, 0.5, 0.5, 1.0), black) == pytest.approx(5.28, abs=0.01)
    # a translucent text colour is blended over its background first: almost invisible here
    assert contrast_ratio((1.0, 1.0, 1.0, 0.05), black) < 1.3
    assert relative_luminance((1.0, 0.0, 0.0, 1.0)) == pytest.approx(0.2126)


def test_nerv_text_is_high_contrast_on_every_background() -> None:
    palette = nerv_palette()
    contrasts = text_contrasts(palette)
    assert set(contrasts) == set(TEXT_BACKGROUNDS)
    low = {slot: round(ratio, 2) for slot, ratio in contrasts.items() if ratio < 7.0}
    assert low == {}, f"NERV text under 7:1 (WCAG AAA) on {low}"
    # black background, amber text, red title bar and green/cyan highlights
    assert relative_luminance(palette["window_bg"]) < 0.005
    red, green, blue, _ = palette["text"]
    assert red > 0.9 and 0.5 < green < 0.85 and blue < 0.3
    title = palette["title_bg_active"]
    assert title[0] > 3 * max(title[1], title[2])
    assert palette["check_mark"][1] > 0.9 and palette["nav_cursor"][2] > 0.9


def test_every_palette_slot_is_an_imgui_colour() -> None:
    for theme in THEME_NAMES:
        for accent in ACCENTS:
            for slot in theme_palette(theme, accent):
                assert isinstance(getattr(imgui.Col_, slot, None), imgui.Col_), (theme, accent, slot)
    # NERV replaces every colour a window shows text or frames with
    missing = {"text", "window_bg", "frame_bg", "button", "header", "tab", "border"} - set(nerv_palette())
    assert missing == set()


def test_an_accent_recolours_the_active_widgets_of_any_theme() -> None:
    assert theme_palette("dark") == {} and theme_palette("light", "default") == {}
    cyan = ACCENTS["cyan"]
    for theme in THEME_NAMES:
        palette = theme_palette(theme, "cyan")
        assert palette["check_mark"] == palette["slider_grab"] == cyan
        assert palette["header"][:3] == cyan[:3] and palette["header"][3] < 1.0
    assert nerv_palette("default")["check_mark"] != nerv_palette("purple")["check_mark"]
    assert accent_overrides("purple")["tab_selected_overline"] == ACCENTS["purple"]


def test_unknown_theme_or_accent_is_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match=r"unknown theme 'solarized'; expected one of dark, light, nerv"):
        theme_palette("solarized")
    with pytest.raises(ValueError, match=r"unknown accent 'teal'; expected one of default, orange"):
        theme_palette("nerv", "teal")


# window backgrounds of the hello_imgui themes dark and light start from (read once from
# hello_imgui.theme_to_style; NERV's is its own palette's)
BACKGROUNDS = {
    "dark": (0.14, 0.14, 0.15, 1.0),
    "light": (1.0, 1.0, 1.0, 1.0),
    "nerv": nerv_palette()["window_bg"],
}


def test_status_colours_read_on_each_theme_and_nerv_warnings_are_red() -> None:
    from manual_slop.gui.widgets import COLORS

    for theme, background in BACKGROUNDS.items():
        colours = status_colors(theme)
        assert set(colours) == set(COLORS), theme
        low = {k: round(contrast_ratio(c, background), 2) for k, c in colours.items()}
        assert min(low.values()) >= 4.5, f"{theme}: status colours under 4.5:1 on its background: {low}"
    nerv = status_colors("nerv")
    assert status_colors("dark")["warn"] == (0.98, 0.70, 0.20, 1.0)  # dark keeps the app's colours
    text = nerv_palette()["text"]
    assert text[1] - nerv["warn"][1] > 0.3  # NERV's warning is red-orange, apart from its amber text
    assert nerv["error"][0] > 0.9 > 0.2 > nerv["error"][1]
    assert nerv["ok"][1] > 0.9 and nerv["info"][2] > 0.9  # green and cyan highlights
