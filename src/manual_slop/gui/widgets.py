"""Small drawing helpers shared by panels: colours, status text, spinner, clipped lists,
text elided to a width, disabled buttons, following scroll views and timestamps."""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Sequence

from imgui_bundle import ImVec4, imgui

__all__ = [
    "COLORS",
    "button",
    "clip_tooltip",
    "clipped_rows",
    "elide",
    "follow_bottom",
    "fuzzy_score",
    "help_marker",
    "local_time",
    "rank",
    "small_button",
    "spinner_text",
    "status_color",
    "text_colored",
    "text_elided",
    "text_entry",
    "text_wrapped_colored",
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
    "cancelled": "warn",
}


def status_color(status: str) -> ImVec4:
    """Colour for a status word (ticket states, ai_status, mma_status)."""
    key = status if status in COLORS else _STATUS_COLOR.get(status, "")
    if not key:
        key = "in_progress" if status.endswith("...") else "info"
    return COLORS[key]


def text_colored(color: str, text: str) -> None:
    imgui.text_colored(COLORS[color], text)


def text_wrapped_colored(color: ImVec4, text: str) -> None:
    """``text`` wrapped at the window's edge, in ``color``."""
    imgui.push_style_color(imgui.Col_.text, color)
    imgui.text_wrapped(text)
    imgui.pop_style_color()


def help_marker(text: str) -> None:
    imgui.same_line()
    imgui.text_disabled("(?)")
    if imgui.is_item_hovered():
        imgui.set_tooltip(text)


def elide(text: str, width: float, *, keep_end: bool = False) -> str:
    """``text`` on one line, cut with "…" so it is at most ``width`` pixels wide.

    ``keep_end`` cuts the middle instead of the end (ids whose suffix tells them apart).
    """
    line = " ".join(text.split())
    if imgui.calc_text_size(line).x <= width:
        return line

    def cut(n: int) -> str:  # keep n characters
        if keep_end:
            head = (n + 1) // 2
            return line[:head] + "…" + line[len(line) - (n - head) :]
        return line[:n].rstrip() + "…"

    def fits(n: int) -> bool:
        return imgui.calc_text_size(cut(n)).x <= width

    # The most characters that fit with the ellipsis. A cell holds far fewer characters than a
    # long text has, so the upper bound grows from a short guess: each probe then measures
    # about what is kept, not the whole text (this runs for every cut cell, every frame).
    low, high = 0, min(16, len(line))
    while high < len(line) and fits(high):
        low, high = high, min(2 * high, len(line))
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return cut(low)


def text_elided(
    text: str, width: float | None = None, color: ImVec4 | None = None, *, keep_end: bool = False
) -> None:
    """One line cut to ``width`` (default: what is left of the row); the whole text in a
    tooltip when it was cut."""
    if width is None:
        width = imgui.get_content_region_avail().x
    shown = elide(text, max(width, 1.0), keep_end=keep_end)
    if color is None:
        imgui.text_unformatted(shown)
    else:
        imgui.text_colored(color, shown)
    if shown != text and imgui.is_item_hovered():
        imgui.set_item_tooltip(clip_tooltip(text))


def clip_tooltip(text: str, limit: int = 4000) -> str:
    """``text`` cut to ``limit`` characters (with "…"), so a huge value keeps its tooltip small."""
    return text if len(text) <= limit else text[:limit] + "…"


def text_entry(
    buffers: dict[str, str],
    key: str,
    hint: str,
    label: str,
    submit: Callable[[str], bool],
    *,
    width: float = -60.0,
) -> None:
    """A one-line input with a button beside it: the button hands the stripped text to
    ``submit`` when it is not blank, and the input empties when ``submit`` accepts it."""
    imgui.set_next_item_width(width)
    _, buffers[key] = imgui.input_text_with_hint(f"##{key}", hint, buffers.get(key, ""))
    imgui.same_line()
    if imgui.button(label) and buffers[key].strip() and submit(buffers[key].strip()):
        buffers[key] = ""


def button(label: str, enabled: bool = True, why_not: str = "") -> bool:
    """A button that is drawn disabled (and cannot be clicked) when ``enabled`` is False;
    hovering a disabled one shows ``why_not``."""
    return _guarded(imgui.button, label, enabled, why_not)


def small_button(label: str, enabled: bool = True, why_not: str = "") -> bool:
    return _guarded(imgui.small_button, label, enabled, why_not)


def _guarded(draw: Callable[[str], bool], label: str, enabled: bool, why_not: str) -> bool:
    imgui.begin_disabled(not enabled)
    clicked = draw(label)
    imgui.end_disabled()
    if not enabled and why_not and imgui.is_item_hovered(imgui.HoveredFlags_.allow_when_disabled):
        imgui.set_tooltip(why_not)
    return clicked and enabled


def local_time(stamp: object) -> str:
    """A timestamp as the panels show it: local time to the minute ("?" when there is none)."""
    if not isinstance(stamp, int | float) or stamp <= 0:
        return "?"
    return _minute(float(stamp))


@functools.lru_cache(maxsize=1024)
def _minute(stamp: float) -> str:  # cached: lists show the same stamps every frame
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp))


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


def follow_bottom(slack: float) -> None:
    """Keep the newest content in view while the current scroll view is at its bottom.

    Call it after drawing the content. The scroll limit is last frame's, so "at the bottom"
    (within ``slack`` pixels) means the user had not scrolled up before this frame's new
    content was drawn; scrolling to the cursor then reaches the new bottom. Scrolled up,
    the view stays where the user put it.
    """
    if imgui.get_scroll_y() >= imgui.get_scroll_max_y() - slack:
        imgui.set_scroll_here_y(1.0)


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
