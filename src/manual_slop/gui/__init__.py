"""The desktop window (imgui-bundle): a pure view of the controller's state.

Panels read ``controller.state`` and act through the same registries as the Hook API;
approval modals resolve dialogs through the Execution Clutch.
"""

from manual_slop.gui.app import WINDOW_TITLE, App

__all__ = ["WINDOW_TITLE", "App"]
