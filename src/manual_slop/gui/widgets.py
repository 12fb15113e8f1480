"""Small drawing helpers shared by panels: colours, status text, spinner, clipped lists."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

from imgui_bundle import ImVec4, imgui

__all__ = [
    "COLORS",
    "clipped_rows",
    "fuzzy_score",
    "help_marker",
    "rank",
    "spinner_text",
    "status_color",
    "text_colored",
]

COLORS: dict[str, ImVec4] = {
    "ok": ImVec4(0.40, 0.85, 0.45, 1.0),
    "warn": ImVec4(0.98, 0.70, 0.20, 1.0),
    "error": ImVec4(0.95, 0.35, 0.35, 1.0),
    "info": ImVec4(0.55, 0.75, 1.00, 1.0),
    "muted": ImVec4(0.60, 0.60, 0.60, 1.0),
    "todo": ImVec4(0.70, 0.70, 0.70, 1.0),
    "in_progress": ImVec4(0.35, 0.65, 1.00, 1.0),
    "completed": ImVec4(0.40, 0.85, 0.45, 1.0),
    "blocked": ImVec4(0.98, 0.70, 0.20, 1.0),
    "killed": ImVec4(0.95, 0.35, 0.35, 1.0),
}

_STATUS_COLOR = {
    "idle": "muted",
    "done": "ok",
    "error": "error",
    "running": "in_progress",
    "paused": "warn",
    "blocked": "blocked",
}


def status_color(status: str) -> ImVec4:
    """Colour for a status word (ticket states, ai_status, mma_status)."""
    key = status if status in COLORS else _STATUS_COLOR.get(status, "")
    if not key:
        key = "in_progress" if status.endswith("...") else "info"
    return COLORS[key]


def text_colored(color: str, text: str) -> None:
    imgui.text_colored(COLORS[color], text)


def help_marker(text: str) -> None:
    imgui.same_line()
    imgui.text_disabled("(?)")
    if imgui.is_item_hovered():
        imgui.set_tooltip(text)


def spinner_text() -> str:
    """A text spinner (cheap, and visible in screenshots)."""
    frames = "|/-\\"
    return frames[int(time.monotonic() * 8) % len(frames)]


def clipped_rows(count: int, draw_row: Callable[[int], None]) -> None:
    """Draw only the visible rows of a long list (ImGui's ListClipper)."""
    clipper = imgui.ListClipper()
    clipper.begin(count)
    while clipper.step():
        for row in range(clipper.display_start, clipper.display_end):
            draw_row(row)
    clipper.end()


def fuzzy_score(query: str, candidate: str) -> float | None:
    """Subsequence match score (higher is better), None when ``query`` does not match.

    Consecutive matches and matches at word starts score more; shorter candidates win ties.
    Spaces in the query are ignored, so "mma pa" finds ``btn_mma_pause``.
    """
    q = query.lower().replace(" ", "")  # spaces separate words; they need not be matched
    if not q:
        return 0.0
    c = candidate.lower()
    score = 0.0
    pos = -1
    streak = 0
    for ch in q:
        found = c.find(ch, pos + 1)
        if found < 0:
            return None
        streak = streak + 1 if found == pos + 1 else 0
        at_word_start = found == 0 or not c[found - 1].isalnum()
        score += 1.0 + streak * 2.0 + (3.0 if at_word_start else 0.0)
        pos = found
    return score - math.log(len(c) + 1) * 0.1


def rank(query: str, candidates: Sequence[str]) -> list[int]:
    """Indices of matching candidates, best first."""
    scored = [(s, i) for i, c in enumerate(candidates) if (s := fuzzy_score(query, c)) is not None]
    scored.sort(key=lambda pair: (-pair[0], pair[1]))
    return [i for _, i in scored]
