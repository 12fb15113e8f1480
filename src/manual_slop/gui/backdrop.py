"""One layer of background under the docked panels, not three.

ImGui fills every window's background rectangle and blends it over what is below, each
frame. Left as it is, the dock space paints the whole window (ImGui's ``PassthruCentralNode``
draws the dock space's background under a central node that has windows), every docked
panel paints its area again on top, and the clear colour sits under both. On a GPU that is
free; under software GL (a VM, a remote desktop, Xvfb in CI) llvmpipe shades and blends every
pixel of every layer. On the 2-core test machine at 1280x800 the idle window drew 2.3 screens
of pixels a frame, rendered in 17-20 ms (without multisampling); with one layer, 0.5 screens
in 7-9 ms.

So the dock space has no passthrough, a panel docked in it draws no background of its own,
and the clear colour is the colour those layers used to show (:func:`backdrop_color`): the
look is the same. A panel that floats, alone or in a floating dock node, keeps its
background (nothing else is under it); it changes state the frame after a drag, when ImGui
has decided where the window now is.
"""

from __future__ import annotations

from collections.abc import Callable

from imgui_bundle import ImVec4, hello_imgui, imgui

__all__ = ["DOCK_SPACE_FLAGS", "DockedBackgrounds", "backdrop_color"]

# No passthrough: nothing is drawn behind the dock space, and with it ImGui would paint
# the whole dock space's background under the docked windows each frame.
DOCK_SPACE_FLAGS = imgui.DockNodeFlags_.none


def backdrop_color(window_bg: ImVec4) -> ImVec4:
    """The opaque colour a docked panel showed before: its background over the dock space's
    (the same colour) over the black clear colour, so ``c * (1 - (1 - a)^2)``."""
    cover = 1.0 - (1.0 - window_bg.w) ** 2
    return ImVec4(window_bg.x * cover, window_bg.y * cover, window_bg.z * cover, 1.0)


def in_dock_space() -> bool:
    """Whether the current window (between Begin and End) is docked in a dock space, not a
    floating dock node, whose host window is transparent."""
    node = imgui.internal.get_window_dock_node()
    return node is not None and imgui.internal.dock_node_get_root_node(node).is_dock_space()


class DockedBackgrounds:
    """Which dockable windows draw no background; changed only when a window moves in or out
    of the dock space (called from inside each panel's window, on the main thread)."""

    def __init__(self, window_of: Callable[[str], hello_imgui.DockableWindow | None]) -> None:
        """``window_of``: the dockable window of a title (``App._window``), None when unknown."""
        self._window_of = window_of
        self._bare: dict[str, bool] = {}

    def update(self, title: str) -> None:
        bare = in_dock_space()
        if self._bare.get(title, False) == bare:
            return
        window = self._window_of(title)
        if window is None:
            return
        flags = window.imgui_window_flags & ~imgui.WindowFlags_.no_background
        window.imgui_window_flags = flags | (imgui.WindowFlags_.no_background if bare else 0)
        self._bare[title] = bare

    def is_bare(self, title: str) -> bool:
        """Whether ``title`` is drawn without a background now (for tests)."""
        return self._bare.get(title, False)
