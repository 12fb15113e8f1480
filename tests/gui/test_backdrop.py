"""Docked panels draw no background of their own (manual_slop.gui.backdrop) and the window
asks for no multisampling: the idle window has software GL fill each pixel about once, not
2.3 times over 8 samples, and looks the same; a panel that floats keeps its background."""

from __future__ import annotations

import pytest
from imgui_bundle import ImVec4, hello_imgui, imgui

from manual_slop.gui.backdrop import backdrop_color
from tests.gui.conftest import APP_SIZE, frames_until
from tests.gui.overdraw import pixels_drawn

SCREEN = APP_SIZE[0] * APP_SIZE[1]


class Fill:
    """Pixels drawn per draw list in a frame, read after the swap (on the main thread)."""

    def __init__(self) -> None:
        self.wanted = False
        self.drawn: dict[str, float] | None = None

    def install(self, app) -> None:
        app.runner_params.callbacks.after_swap = self._after_swap

    def _after_swap(self) -> None:
        if self.wanted:
            self.drawn = pixels_drawn(imgui.get_draw_data())
            self.wanted = False

    def measure(self, ctx) -> dict[str, float]:
        self.drawn, self.wanted = None, True
        frames_until(ctx, lambda: self.drawn is not None, 10)
        assert self.drawn is not None
        return self.drawn


@pytest.fixture
def fill() -> Fill:
    return Fill()


def _run_settled(make_controller, run_gui, fill: Fill, test) -> None:
    """``test(ctx, app)`` in a new window at its default size, ``fill`` ready to count, once the
    docking layout is applied (during the first frames)."""

    def settled(ctx, app) -> None:
        ctx.yield_(10)
        test(ctx, app)

    run_gui(make_controller(environ={}), settled, size=APP_SIZE, setup=fill.install)


def _area(title: str) -> float:
    window = imgui.internal.find_window_by_name(title)
    return window.size.x * window.size.y


def _flags(app, title: str) -> int:
    return app._window(title).imgui_window_flags


def _color(value: ImVec4) -> tuple[float, ...]:
    return (round(value.x, 4), round(value.y, 4), round(value.z, 4), round(value.w, 4))


def _clear_and_panel() -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The window's clear colour, and the colour a docked panel showed before (its background
    over itself over black)."""
    clear = _color(hello_imgui.get_runner_params().imgui_window_params.background_color)
    return clear, _color(backdrop_color(imgui.get_style().color_(imgui.Col_.window_bg)))


def test_the_idle_window_fills_each_pixel_about_once_and_clears_to_the_panels_colour(
    make_controller, run_gui, fill: Fill
) -> None:
    seen: dict = {}

    def test(ctx, app) -> None:
        seen["drawn"] = fill.measure(ctx)
        seen["bare"] = {title: app.backgrounds.is_bare(title) for title in ("AI Settings", "Discussion")}
        seen["flags"] = _flags(app, "AI Settings")
        seen["clear"], seen["panel"] = _clear_and_panel()
        seen["dock space"] = hello_imgui.get_runner_params().docking_params.main_dock_space_node_flags
        seen["msaa"] = (
            hello_imgui.get_runner_params().renderer_backend_options.open_gl_options.anti_aliasing_samples
        )

    _run_settled(make_controller, run_gui, fill, test)
    drawn = seen["drawn"]
    total = sum(drawn.values())
    # before: the dock space painted the whole window (0.94 screens) and each docked panel its
    # area again on top, 2.31 screens in all
    assert total < 1.0 * SCREEN, f"{total / SCREEN:.2f} screens of pixels drawn: {drawn}"
    host = sum(area for owner, area in drawn.items() if owner.startswith("MainDockSpace"))
    assert host < 0.25 * SCREEN, (
        f"the dock space draws {host / SCREEN:.2f} screens (tab bars and splitters only)"
    )
    assert seen["bare"] == {"AI Settings": True, "Discussion": True}
    assert seen["flags"] & imgui.WindowFlags_.no_background
    assert seen["clear"] == seen["panel"] and seen["clear"][3] == 1.0
    assert not seen["dock space"] & imgui.DockNodeFlags_.passthru_central_node
    assert seen["msaa"] == 0  # hello_imgui's 8x MSAA shades each pixel several times under llvmpipe


def test_a_floating_panel_keeps_its_background_and_loses_it_when_docked_again(
    make_controller, run_gui, fill: Fill
) -> None:
    seen: dict = {}

    def test(ctx, app) -> None:
        app.focus("Theme")
        ctx.yield_(3)
        seen["docked"] = (app.backgrounds.is_bare("Theme"), fill.measure(ctx)["Theme"] / _area("Theme"))
        ctx.undock_window("Theme")
        frames_until(ctx, lambda: not app.backgrounds.is_bare("Theme"))
        ctx.yield_(2)
        seen["floating"] = (
            _flags(app, "Theme") & imgui.WindowFlags_.no_background,
            fill.measure(ctx)["Theme"] / _area("Theme"),
        )
        ctx.dock_into("Response", "Theme")  # a floating dock node: its host window is transparent
        frames_until(ctx, lambda: imgui.internal.find_window_by_name("Response").dock_node is not None)
        ctx.yield_(2)
        seen["floating node"] = (app.backgrounds.is_bare("Theme"), app.backgrounds.is_bare("Response"))
        ctx.dock_into("Theme", "AI Settings")
        ctx.dock_into("Response", "AI Settings")
        frames_until(ctx, lambda: app.backgrounds.is_bare("Theme") and app.backgrounds.is_bare("Response"))
        app.focus("Theme")
        ctx.yield_(3)
        seen["docked again"] = fill.measure(ctx)["Theme"] / _area("Theme")

    _run_settled(make_controller, run_gui, fill, test)
    bare, share = seen["docked"]
    assert bare and share < 0.5, f"docked: bare {bare}, its own list fills {share:.2f} of its area"
    flags, share = seen["floating"]
    assert not flags and share >= 1.0, f"floating: no_background {flags}, fills {share:.2f} of its area"
    assert seen["floating node"] == (False, False)
    assert seen["docked again"] < 0.5


def test_the_clear_colour_follows_the_theme(make_controller, run_gui) -> None:
    ctrl = make_controller(environ={})
    seen: list[tuple[tuple[float, ...], tuple[float, ...]]] = []

    def test(ctx, app) -> None:
        ctx.yield_(3)
        seen.append(_clear_and_panel())
        ctrl.post_gui_task(
            {"action": "custom_callback", "callback": lambda: ctrl.fields.set("theme", "light")}
        )
        frames_until(ctx, lambda: app.gui.appearance[0] == "light")
        ctx.yield_()
        seen.append(_clear_and_panel())

    run_gui(ctrl, test)
    (dark_clear, dark_panel), (light_clear, light_panel) = seen
    assert dark_clear == dark_panel and light_clear == light_panel
    assert light_clear[0] > 0.8 > dark_clear[0], (dark_clear, light_clear)


def test_backdrop_color_is_the_panel_over_itself_over_black_and_opaque() -> None:
    assert _color(backdrop_color(ImVec4(0.2, 0.4, 0.6, 1.0))) == (0.2, 0.4, 0.6, 1.0)
    # alpha 0.5: 0.5 of the colour, then 0.5 of that again under it, over black
    assert _color(backdrop_color(ImVec4(0.2, 0.4, 0.8, 0.5))) == (0.15, 0.3, 0.6, 1.0)
