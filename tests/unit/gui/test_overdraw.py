"""The pixel count of tests/gui/overdraw.py: a triangle's area after clipping to a rectangle."""

from __future__ import annotations

import pytest

from tests.gui.overdraw import _clipped_area


def test_a_triangle_inside_the_clip_rectangle_keeps_its_whole_area() -> None:
    assert _clipped_area([(10, 10), (30, 10), (10, 40)], 0, 0, 100, 100) == pytest.approx(300.0)


def test_the_two_halves_of_a_rectangle_clipped_to_a_smaller_one_cover_the_overlap() -> None:
    clip = (50.0, 20.0, 150.0, 60.0)  # x0, y0, x1, y1
    halves = ([(0, 0), (100, 0), (100, 100)], [(0, 0), (100, 100), (0, 100)])
    assert sum(_clipped_area(list(h), *clip) for h in halves) == pytest.approx(50 * 40)


def test_a_triangle_outside_or_on_an_edge_fills_nothing() -> None:
    assert _clipped_area([(200, 200), (210, 200), (200, 210)], 0, 0, 100, 100) == 0.0
    assert _clipped_area([(0, 0), (0, 50), (0, 100)], 0, 0, 100, 100) == 0.0


def test_winding_does_not_change_the_area() -> None:
    triangle = [(0, 0), (0, 10), (10, 0)]  # x + y <= 10: holds the whole 5x5 square
    assert _clipped_area(triangle, 0, 0, 5, 5) == pytest.approx(25.0)
    assert _clipped_area(triangle[::-1], 0, 0, 5, 5) == pytest.approx(25.0)
    # clipped to x >= 5: the triangle (5,0), (5,5), (10,0)
    assert _clipped_area(triangle, 5, 0, 20, 20) == pytest.approx(12.5)
