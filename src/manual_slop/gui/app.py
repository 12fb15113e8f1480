"""The desktop window: hello_imgui docking around the controller's frame.

``main()`` in three parts, as in the imgui-bundle demos:

1. runner params — window, menus, status bar, idling, ini file;
2. docking — the splits of :mod:`manual_slop.gui.layout` and one dockable window per panel;
3. callbacks — the frame: ``pre_new_frame`` drains the controller's pending lists
   (``begin_frame``), the panels draw, ``show_gui`` draws modals, the palette and toasts,
   ``before_imgui_render`` closes the frame's timing (``end_frame``); ``after_swap``, between
   frames, lets the garbage collector's policy (:mod:`manual_slop.gc_policy`) run what is due.

Every panel call is guarded: an exception (an ImGui assert included) is recorded by
``controller.record_frame_failure`` — so ``/api/gui_health`` reports it — and drawn in
the panel instead of killing the render loop.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from imgui_bundle import ImVec2, hello_imgui, imgui, immapp

from manual_slop.gc_policy import GcPolicy
from manual_slop.gui.backdrop import DOCK_SPACE_FLAGS, DockedBackgrounds, backdrop_color
from manual_slop.gui.gui_state import GuiState
from manual_slop.gui.layout import docking_splits
from manual_slop.gui.modals import render_modals
from manual_slop.gui.palette import Command, render_palette
from manual_slop.gui.panels import PANELS, Panel
from manual_slop.gui.panels.diagnostics import record_history
from manual_slop.gui.theme import apply_appearance
from manual_slop.gui.ui import Actions, Ui
from manual_slop.gui.widgets import COLORS, spinner_text, status_color

if TYPE_CHECKING:
    from manual_slop.controller import AppController

__all__ = ["WINDOW_TITLE", "App"]

log = logging.getLogger(__name__)

WINDOW_TITLE = "Manual Slop"
# tab bars inside panels that select_tab can reach (registered in manual_slop.bindings)
PANEL_TAB_BARS = {"tier_streams": "Tier Streams", "log_streams": "Session Replay"}


class App:
    """One window over one controller. ``run()`` blocks until the window closes."""

    def __init__(
        self,
        controller: AppController,
        *,
        size: tuple[int, int] = (1280, 800),
        gc_policy: GcPolicy | None = None,
    ) -> None:
        """``gc_policy``: installed while the window is open (the app's entry point passes one;
        tests that open windows in the pytest process leave the collector alone)."""
        self.ctrl = controller
        self.gc_policy = gc_policy
        self.gui = GuiState()
        self.backgrounds = DockedBackgrounds(self._window)
        self.ui = Ui(controller, self.gui, Actions(controller, self.gui))
        self.runner_params = self._runner_params(size)
        self.add_ons = immapp.AddOnsParams(with_markdown=True, with_implot=True, with_node_editor=True)

    # -- 1. runner params -----------------------------------------------------------------
    def _runner_params(self, size: tuple[int, int]) -> hello_imgui.RunnerParams:
        params = hello_imgui.RunnerParams()
        params.app_window_params.window_title = WINDOW_TITLE
        params.app_window_params.window_geometry.size = size
        window = params.imgui_window_params
        window.default_imgui_window_type = hello_imgui.DefaultImGuiWindowType.provide_full_screen_dock_space
        window.show_menu_bar = True
        window.show_menu_app = False
        window.show_menu_view_themes = False
        window.show_status_bar = True
        window.remember_theme = False
        window.remember_status_bar_settings = False
        # The layout (dock positions) is remembered in an ini beside config.toml; which
        # panels are visible is config.toml's [gui.show_windows].
        params.ini_folder_type = hello_imgui.IniFolderType.absolute_path
        params.ini_filename = str(self.ctrl.paths.config_file.with_name("manual_slop_layout.ini"))
        params.fps_idling.fps_idle = 10.0
        # No multisampling (hello_imgui asks for 8x): Dear ImGui anti-aliases its own lines,
        # text and rounded corners, so MSAA changes next to nothing on screen, while software
        # GL (llvmpipe: VMs, remote desktops, CI) shades every pixel several times for it.
        # Measured on the idle window at 1280x800: 41 ms of rendering a frame with it, 17 without.
        params.renderer_backend_options.open_gl_options.anti_aliasing_samples = 0
        self._docking(params)
        self._callbacks(params)
        return params

    # -- 2. docking ---------------------------------------------------------------------
    def _docking(self, params: hello_imgui.RunnerParams) -> None:
        params.docking_params.docking_splits = docking_splits()
        params.docking_params.main_dock_space_node_flags = DOCK_SPACE_FLAGS
        windows = []
        for panel in PANELS:
            window = hello_imgui.DockableWindow()
            window.label = panel.title
            window.dock_space_name = panel.dock_space
            window.gui_function = self._guarded(panel)
            window.remember_is_visible = False
            window.is_visible = self.ctrl.state.show_windows.get(panel.title, True)
            windows.append(window)
        params.docking_params.dockable_windows = windows

    def _guarded(self, panel: Panel) -> Callable[[], None]:
        scope = f"render_{panel.key}"

        def draw() -> None:
            try:
                self.backgrounds.update(panel.title)
                with self.ctrl.perf.scope(scope):
                    panel.render(self.ui)
            except Exception as exc:
                self.ctrl.record_frame_failure(exc)
                imgui.text_colored(COLORS["error"], f"this panel failed: {type(exc).__name__}: {exc}")

        return draw

    # -- 3. callbacks ---------------------------------------------------------------------
    def _callbacks(self, params: hello_imgui.RunnerParams) -> None:
        callbacks = params.callbacks
        callbacks.post_init = self._post_init
        callbacks.pre_new_frame = self._pre_new_frame
        callbacks.show_gui = self._show_gui
        callbacks.before_imgui_render = self.ctrl.end_frame
        callbacks.show_menus = self._show_menus
        callbacks.show_status = self._show_status
        callbacks.before_exit = self._before_exit
        if self.gc_policy is not None:
            callbacks.after_swap = self._between_frames

    def _post_init(self) -> None:
        self.ctrl.bind_main_thread()
        if self.gc_policy is not None:
            self.gc_policy.install()  # the loaded project and logs are frozen as long-lived
        self._apply_appearance()
        wake = _glfw_wake()
        if wake is not None:
            self.ctrl.add_wake_listener(wake)

    def _pre_new_frame(self) -> None:
        if self.ctrl.should_stop():
            hello_imgui.get_runner_params().app_shall_exit = True
        self.ctrl.begin_frame()
        self._apply_appearance()

    def _before_exit(self) -> None:
        # Textures are freed while the GL context still exists: a texture outliving the
        # window would be freed later (when the closed App is collected) and crash the process.
        self.gui.thumbnails.textures.clear()
        if self.gc_policy is not None:
            self.gc_policy.uninstall()

    def _between_frames(self) -> None:
        assert self.gc_policy is not None
        self.gc_policy.tick(idle=hello_imgui.get_runner_params().fps_idling.is_idling)

    def _apply_appearance(self) -> None:
        """Theme, accent and font scale as the state says (changed by the Theme panel, the Hook
        API or a reload); applied between frames, here on the main thread."""
        state = self.ctrl.state
        wanted = (state.theme, state.accent, state.font_scale)
        if wanted != self.gui.appearance:
            apply_appearance(*wanted)
            window_bg = imgui.get_style().color_(imgui.Col_.window_bg)
            hello_imgui.get_runner_params().imgui_window_params.background_color = backdrop_color(window_bg)
            self.gui.appearance = wanted

    def _show_gui(self) -> None:
        try:
            self._focus_new_response()
            record_history(self.ui)
            render_modals(self.ui)
            render_palette(self.ui, self.commands)
            self._shortcuts()
            self._render_toasts()
            self._apply_tab_requests()
            self._sync_visibility()
        except Exception as exc:
            self.ctrl.record_frame_failure(exc)

    def _focus_new_response(self) -> None:
        """Bring the Response tab forward when a new answer arrives."""
        response = self.ctrl.state.ai_response
        if response and response is not self.gui.last_response:
            hello_imgui.get_runner_params().docking_params.focus_dockable_window("Response")
        self.gui.last_response = response

    def _apply_tab_requests(self) -> None:
        """Tabs chosen over automation (``select_tab``): show and focus a panel, or hand a
        panel's tab choice to the panel (it selects the tab when it next draws its tab bar)."""
        requests = self.ctrl.state.tab_requests
        title = requests.pop("panels", None)
        if title is not None:
            self.focus(title)
        for tab_bar, panel in PANEL_TAB_BARS.items():
            tab = requests.pop(tab_bar, None)
            if tab is not None:
                self.gui.tab_choices[tab_bar] = tab
                self.focus(panel)

    @staticmethod
    def _window(title: str) -> hello_imgui.DockableWindow | None:
        # Looked up each time: dockable_windows returns copies, and a reference kept
        # across frames may point into storage hello_imgui has since replaced.
        try:
            return hello_imgui.get_runner_params().docking_params.dockable_window_of_name(title)
        except Exception:
            return None

    def _shortcuts(self) -> None:
        """Ctrl+Z / Ctrl+Y undo and redo discussion and context edits (not while typing:
        a text field has its own undo)."""
        if imgui.get_io().want_text_input:
            return
        if imgui.is_key_chord_pressed(imgui.Key.mod_ctrl | imgui.Key.z):
            self.ui.act.click("btn_undo")
        elif imgui.is_key_chord_pressed(imgui.Key.mod_ctrl | imgui.Key.y):
            self.ui.act.click("btn_redo")

    def _sync_visibility(self) -> None:
        shown = self.ctrl.state.show_windows
        for panel in PANELS:
            window = self._window(panel.title)
            if window is not None and shown.get(panel.title) != window.is_visible:
                shown[panel.title] = window.is_visible

    # -- menus, status bar, toasts -----------------------------------------------------------
    def _show_menus(self) -> None:
        if imgui.begin_menu("File"):
            if imgui.menu_item("Save", "", False)[0]:
                self.ui.act.click("btn_save")
            if imgui.menu_item("Reload project", "", False)[0]:
                self.ui.act.click("btn_reload_project")
            imgui.separator()
            if imgui.menu_item("Quit", "", False)[0]:
                self.ctrl.request_stop()
            imgui.end_menu()
        if imgui.begin_menu("Tools"):
            if imgui.menu_item("Command palette", "Ctrl+Shift+P", False)[0]:
                self.gui.palette_open = True
            if imgui.menu_item("Dismiss notifications", "", False)[0]:
                self.ui.act.click("btn_dismiss_notifications")
            imgui.end_menu()

    def _show_status(self) -> None:
        state = self.ctrl.state
        busy = state.ai_status.endswith("...")
        imgui.text_colored(
            status_color(state.ai_status), f"{spinner_text() + ' ' if busy else ''}{state.ai_status}"
        )
        imgui.same_line()
        imgui.text_disabled(f"| {state.current_provider} / {state.current_model or '(no model)'} |")
        imgui.same_line()
        policy_color = COLORS["warn"] if state.approval_policy == "auto" else COLORS["muted"]
        imgui.text_colored(policy_color, f"policy: {state.approval_policy}")
        if state.pending_dialogs:
            imgui.same_line()
            imgui.text_colored(COLORS["warn"], f"| {len(state.pending_dialogs)} waiting for approval")
        errors = [n for n in state.notifications if n.level == "error"]
        if errors:
            imgui.same_line()
            imgui.text_colored(COLORS["error"], f"| {errors[-1].message[:80]}")

    def _render_toasts(self) -> None:
        toasts = self.gui.live_toasts()
        if not toasts:
            return
        viewport = imgui.get_main_viewport()
        imgui.set_next_window_pos(
            ImVec2(viewport.pos.x + viewport.size.x - 16, viewport.pos.y + viewport.size.y - 48),
            imgui.Cond_.always,
            ImVec2(1.0, 1.0),
        )
        flags = (
            imgui.WindowFlags_.no_decoration
            | imgui.WindowFlags_.always_auto_resize
            | imgui.WindowFlags_.no_focus_on_appearing
            | imgui.WindowFlags_.no_nav
            | imgui.WindowFlags_.no_docking
        )
        if imgui.begin("##toasts", None, flags):
            for toast in toasts:
                color = COLORS["error"] if toast.level == "error" else COLORS["warn"]
                imgui.text_colored(color, toast.message)
        imgui.end()

    # -- commands for the palette -------------------------------------------------------------
    def commands(self) -> list[Command]:
        """Every clickable action and a show/hide toggle per panel."""
        result = [
            Command(name, self.ctrl.actions.spec(name).doc, lambda n=name: self.ui.act.click(n))
            for name in self.ctrl.actions.names()
        ]
        for panel in PANELS:
            window = self._window(panel.title)
            verb = "Hide" if window is not None and window.is_visible else "Show"
            result.append(Command(f"{verb} {panel.title}", "panel", lambda t=panel.title: self.toggle(t)))
        return result

    def focus(self, title: str) -> None:
        """Show a panel and bring it to the front (its dock tab is selected)."""
        window = self._window(title)
        if window is not None and not window.is_visible:
            window.is_visible = True
        hello_imgui.get_runner_params().docking_params.focus_dockable_window(title)

    def toggle(self, title: str) -> None:
        window = self._window(title)
        if window is not None:
            window.is_visible = not window.is_visible

    # -- run ----------------------------------------------------------------------------------
    def run(self, test: Callable[[Any], None] | None = None) -> None:
        """Open the window; returns when it closes (the caller then shuts the controller down).

        ``test(ctx)``: run it under the ImGui test engine instead of waiting for the user (tests,
        benches, screenshots); the window closes when it returns.
        """
        try:
            with kept_signal_dispositions():
                if test is None:
                    immapp.run(self.runner_params, self.add_ons)
                else:
                    from imgui_bundle.immapp import testing

                    testing.run(
                        test_function=test, runner_params=self.runner_params, add_ons_params=self.add_ons
                    )
        finally:
            self._release()

    def _release(self) -> None:
        # The runner params hold the callbacks in C++ (std::function), where the garbage
        # collector cannot see them: the cycle App -> runner params -> callback -> App would
        # never be collected, and every closed window (each one a test or bench opens in one
        # process) would keep its controller's whole state alive. The App cannot run again.
        self.runner_params.callbacks = hello_imgui.RunnerCallbacks()
        self.runner_params.docking_params.dockable_windows = []


@contextlib.contextmanager
def kept_signal_dispositions() -> Iterator[None]:
    """Put SIGPIPE (and SIGINT/SIGTERM) back as they were once the window has closed.

    A library loaded for the window installs its own SIGPIPE handler and is unloaded
    when the window closes, leaving the handler pointing at unmapped code: the next
    write to a closed socket (any HTTP client hanging up) then crashes the process
    with SIGSEGV. Python ignores SIGPIPE and reports EPIPE as BrokenPipeError; we
    restore exactly that.
    """
    names = ("SIGPIPE", "SIGINT", "SIGTERM")
    saved = {getattr(signal, n): signal.getsignal(getattr(signal, n)) for n in names if hasattr(signal, n)}
    try:
        yield
    finally:
        for signum, handler in saved.items():
            if handler is not None:
                signal.signal(signum, handler)


def _glfw_wake() -> Callable[[], None] | None:
    """glfwPostEmptyEvent from the GLFW library imgui-bundle loaded (thread-safe in GLFW)."""
    import imgui_bundle

    library = Path(os.path.dirname(imgui_bundle.__file__)) / "libglfw.so.3"
    try:
        glfw = ctypes.CDLL(str(library))
        post = glfw.glfwPostEmptyEvent
    except (OSError, AttributeError):
        log.info("no GLFW wake-up available; posted work waits for the next idle frame")
        return None
    post.restype = None
    return lambda: post()
