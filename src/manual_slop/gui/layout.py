"""The default docking layout.

::

    ┌────────────┬──────────────────────────────────┬──────────────┐
    │ LeftSpace  │ MainDockSpace                    │ RightSpace   │
    │ Projects   │ Discussion · Response ·          │ AI Settings  │
    │ Files      │ MMA Dashboard · Task DAG ·       │ Diagnostics  │
    │ Context    │ Memory · File View · Agents ·    │ Usage        │
    │            │ Skills · Prompt Inspector ·      │ Theme · Cache│
    │            │ Approval Rules · MCP ·           │              │
    │            │ Session Replay                   │              │
    │            ├──────────────────────────────────┤              │
    │            │ MessageSpace: Message            │              │
    ├────────────┴──────────────────────────────────┴──────────────┤
    │ BottomSpace: Comms Log · Tool Calls · Tier Streams · Logs     │
    └───────────────────────────────────────────────────────────────┘

Splits are applied in order: the bottom strip first (so it spans the whole width),
then the left and right columns, then the message box under the main area.
"""

from __future__ import annotations

from imgui_bundle import hello_imgui, imgui

__all__ = ["DOCK_SPACES", "docking_splits"]

DOCK_SPACES = ("MainDockSpace", "BottomSpace", "LeftSpace", "RightSpace", "MessageSpace")


def _split(initial: str, new: str, direction: imgui.Dir, ratio: float) -> hello_imgui.DockingSplit:
    split = hello_imgui.DockingSplit()
    split.initial_dock = initial
    split.new_dock = new
    split.direction = direction
    split.ratio = ratio
    return split


def docking_splits() -> list[hello_imgui.DockingSplit]:
    return [
        _split("MainDockSpace", "BottomSpace", imgui.Dir.down, 0.25),
        _split("MainDockSpace", "LeftSpace", imgui.Dir.left, 0.25),
        _split("MainDockSpace", "RightSpace", imgui.Dir.right, 0.27),
        _split("MainDockSpace", "MessageSpace", imgui.Dir.down, 0.25),
    ]
