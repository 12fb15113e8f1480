"""Tier Streams: what each tier (the main conversation and MMA Tiers 1-4) said and did, live.

Built from the comms log, indexed incrementally by ``source_tier``; each tab shows its
tier's requests, responses and tool calls as text, newest at the bottom.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from imgui_bundle import ImVec2, imgui

from manual_slop.gui.text_view import LongText
from manual_slop.gui.widgets import clipped_rows, follow_bottom
from manual_slop.mma.models import TIERS as MMA_TIERS

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["TIERS", "index_tiers", "render_tier_streams", "stream_text"]

TIERS = ("main", *MMA_TIERS)


def index_tiers(ui: Ui) -> dict[str, list[int]]:
    """Comms-log indices by tier, extended with the entries added since the last frame."""
    log = ui.state.comms_log
    first = log[0].get("seq") if log else None
    seen_first, seen = ui.gui.tier_seen
    if first != seen_first or seen > len(log):
        ui.gui.tier_index = {}
        seen = 0
    index = ui.gui.tier_index
    for position in range(seen, len(log)):
        tier = log[position].get("source_tier") or "main"
        index.setdefault(str(tier), []).append(position)
    ui.gui.tier_seen = (first, len(log))
    return index


def _describe(entry: dict[str, Any]) -> str:
    payload = entry.get("payload") or {}
    kind = entry.get("kind", "")
    if kind == "response":
        calls = ", ".join(c.get("name", "?") for c in payload.get("tool_calls") or [])
        text = str(payload.get("text", ""))
        return f"<< {text}" + (f"\n   [calls {calls}]" if calls else "")
    if kind == "request":
        message = payload.get("message") or payload.get("user_message") or ""
        return f">> {str(message)[:400]}"
    if kind == "tool_call":
        return f"-> {payload.get('name', '?')} {payload.get('args', '')}"
    if kind == "tool_result":
        return (
            f"<- {payload.get('name', '?')}: {str(payload.get('output', payload.get('content', '')))[:300]}"
        )
    return f".. {kind} {payload}"[:400]


def stream_text(entries: list[dict[str, Any]], positions: list[int], limit: int = 400) -> str:
    """The last ``limit`` entries of one tier as readable text."""
    return "\n".join(_describe(entries[p]) for p in positions[-limit:])


def render_tier_streams(ui: Ui) -> None:
    index = index_tiers(ui)
    log = ui.state.comms_log
    if ui.state.active_tier:
        imgui.text_colored(imgui.ImVec4(0.35, 0.65, 1.0, 1.0), f"{ui.state.active_tier} is working")
    if not imgui.begin_tab_bar("##tiers"):
        return
    chosen = ui.gui.tab_choices.pop("tier_streams", None)  # select_tab tier_streams
    for tier in TIERS:
        positions = index.get(tier, [])
        flags = imgui.TabItemFlags_.set_selected if tier == chosen else 0
        opened, _ = imgui.begin_tab_item(f"{tier} ({len(positions)})###{tier}", None, flags)
        if opened:
            cache = ui.gui.tier_texts.setdefault(tier, LongText())
            key = (len(positions), positions[-1] if positions else -1)
            if cache.source_len != key[0] or not cache.lines:
                text = stream_text(log, positions) if positions else f"nothing from {tier} yet"
                cache.source_id, cache.source_len, cache.lines = 0, key[0], text.splitlines() or [""]
            _draw(cache, tier)
            imgui.end_tab_item()
    imgui.end_tab_bar()


def _draw(cache: LongText, tier: str) -> None:
    if imgui.begin_child(f"##stream_{tier}", ImVec2(0, 0), imgui.ChildFlags_.borders):
        lines = cache.lines
        clipped_rows(len(lines), lambda i: imgui.text_unformatted(lines[i]))
        follow_bottom(4.0)  # follow the stream while at the bottom
    imgui.end_child()
