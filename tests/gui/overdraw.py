"""How many pixels a rendered ImGui frame asks the GL to fill, per draw list.

Software GL (llvmpipe) pays for every pixel of every triangle, blended: a frame's cost there
follows this count, not the number of widgets. Each triangle's area is taken after clipping
to its command's clip rectangle (Sutherland-Hodgman), as the scissor test does.

Read the draw data between ``Render`` and the next ``NewFrame``, i.e. in ``after_swap``.
"""

from __future__ import annotations

import ctypes

from imgui_bundle import imgui

__all__ = ["pixels_drawn"]

_FLOATS_PER_VERTEX = 5  # ImDrawVert: pos (2 floats), uv (2 floats), col (one 32-bit word)
_Index = ctypes.c_uint32  # imgui-bundle builds Dear ImGui with 32-bit ImDrawIdx (checked below)


def _clipped_area(points: list[tuple[float, float]], x0: float, y0: float, x1: float, y1: float) -> float:
    for axis, bound, keep_above in ((0, x0, True), (0, x1, False), (1, y0, True), (1, y1, False)):
        kept: list[tuple[float, float]] = []
        for i, p in enumerate(points):
            q = points[i - 1]
            p_in = p[axis] >= bound if keep_above else p[axis] <= bound
            q_in = q[axis] >= bound if keep_above else q[axis] <= bound
            if p_in != q_in:
                t = (bound - q[axis]) / (p[axis] - q[axis])
                crossing = (q[0] + (p[0] - q[0]) * t, q[1] + (p[1] - q[1]) * t)
                kept.append(crossing)
            if p_in:
                kept.append(p)
        points = kept
        if not points:
            return 0.0
    return abs(sum(points[i - 1][0] * p[1] - p[0] * points[i - 1][1] for i, p in enumerate(points))) / 2.0


def pixels_drawn(draw_data: imgui.ImDrawData) -> dict[str, float]:
    """Pixels filled by each draw list (keyed by its owner window's name) of ``draw_data``."""
    drawn: dict[str, float] = {}
    for draw_list in draw_data.cmd_lists:
        vertices = (ctypes.c_float * (draw_list.vtx_buffer.size() * _FLOATS_PER_VERTEX)).from_address(
            draw_list.vtx_buffer.data_address()
        )
        count = draw_list.vtx_buffer.size()
        indices = (_Index * draw_list.idx_buffer.size()).from_address(draw_list.idx_buffer.data_address())
        if any(index >= count for index in indices):
            raise ValueError(
                f"{draw_list._owner_name}: an index past its {count} vertices (ImDrawIdx is not 32-bit?)"
            )
        area = 0.0
        for cmd in draw_list.cmd_buffer:
            clip = cmd.clip_rect
            for first in range(cmd.idx_offset, cmd.idx_offset + cmd.elem_count, 3):
                corners = []
                for k in range(3):
                    at = (cmd.vtx_offset + indices[first + k]) * _FLOATS_PER_VERTEX
                    corners.append((vertices[at], vertices[at + 1]))
                area += _clipped_area(corners, clip.x, clip.y, clip.z, clip.w)
        drawn[draw_list._owner_name] = drawn.get(draw_list._owner_name, 0.0) + area
    return drawn
