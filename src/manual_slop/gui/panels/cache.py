"""Cache: the providers' caches as the comms log reports them.

- Gemini cached content: each live ``CachedContent`` of the system context with its name,
  model, size (estimated tokens) and the TTL left (the provider renews it at 90 %);
- per provider: requests, cache hits and hit rate, tokens read from and written to the cache;
- the recent requests that read or wrote a cache (Anthropic's breakpoints, Gemini's cached
  prefix …), newest first, with the share of the prompt served from the cache.

The panel draws the ``cache_state`` field (:meth:`manual_slop.cache_ledger.CacheLedger.view`),
which the Hook API reads too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from imgui_bundle import imgui

from manual_slop.gui.widgets import COLORS

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["format_ttl", "render_cache"]

TABLE_FLAGS = (
    imgui.TableFlags_.borders_inner_v
    | imgui.TableFlags_.row_bg
    | imgui.TableFlags_.sizing_stretch_prop
    | imgui.TableFlags_.scroll_y
)
REQUEST_ROWS = 50


def format_ttl(seconds: float) -> str:
    """``12m 05s`` / ``45s``: the TTL left of a cached content."""
    seconds = max(0, int(seconds))
    minutes, rest = divmod(seconds, 60)
    return f"{minutes}m {rest:02d}s" if minutes else f"{rest}s"


def render_cache(ui: Ui) -> None:
    view: dict[str, Any] = ui.ctrl.fields.get("cache_state")
    imgui.separator_text("Gemini cached content")
    _contents(view["contents"])
    imgui.separator_text("Cache hits by provider")
    _providers(view["providers"])
    imgui.separator_text("Requests that used a cache")
    _requests(view["requests"])


def _contents(contents: list[dict[str, Any]]) -> None:
    if not contents:
        imgui.text_disabled("none (Gemini caches a system context of 2,048 tokens or more)")
        return
    if imgui.begin_table("##cache_contents", 4, TABLE_FLAGS & ~imgui.TableFlags_.scroll_y):
        for header in ("name", "model", "tokens", "TTL left"):
            imgui.table_setup_column(header)
        imgui.table_headers_row()
        for item in contents:
            imgui.table_next_row()
            imgui.table_next_column()
            imgui.text_unformatted(item["name"])
            imgui.table_next_column()
            imgui.text_unformatted(item["model"])
            imgui.table_next_column()
            imgui.text_unformatted(f"{item['tokens']:,}")
            imgui.table_next_column()
            low = item["ttl_left_s"] < 0.1 * item["ttl_s"]
            imgui.text_colored(COLORS["warn" if low else "ok"], format_ttl(item["ttl_left_s"]))
        imgui.end_table()


def _providers(providers: dict[str, dict[str, Any]]) -> None:
    if not providers:
        imgui.text_disabled("no responses yet")
        return
    for name, totals in providers.items():
        imgui.text_unformatted(f"{name}:")
        imgui.same_line()
        color = COLORS["ok"] if totals["hits"] else COLORS["muted"]
        imgui.text_colored(color, f"{totals['hits']}/{totals['requests']} hits ({totals['hit_rate']:.0%})")
        imgui.same_line()
        imgui.text_disabled(
            f"read {totals['cache_read_tokens']:,} / written {totals['cache_write_tokens']:,} tokens"
        )


def _requests(requests: list[dict[str, Any]]) -> None:
    if not requests:
        imgui.text_disabled("no request has read or written a cache yet")
        return
    height = imgui.get_content_region_avail().y
    if imgui.begin_table("##cache_requests", 6, TABLE_FLAGS, imgui.ImVec2(0, max(80.0, height))):
        imgui.table_setup_scroll_freeze(0, 1)
        for header in ("time", "provider / model", "tier", "read", "written", "from cache"):
            imgui.table_setup_column(header)
        imgui.table_headers_row()
        for item in requests[:REQUEST_ROWS]:
            imgui.table_next_row()
            imgui.table_next_column()
            imgui.text_unformatted(item["ts"])
            imgui.table_next_column()
            imgui.text_unformatted(f"{item['provider']} / {item['model']}")
            imgui.table_next_column()
            imgui.text_unformatted(item["source_tier"] or "-")
            imgui.table_next_column()
            imgui.text_colored(COLORS["ok" if item["hit"] else "muted"], f"{item['cache_read_tokens']:,}")
            imgui.table_next_column()
            imgui.text_unformatted(f"{item['cache_write_tokens']:,}")
            imgui.table_next_column()
            imgui.text_unformatted(f"{item['read_share']:.0%}")
        imgui.end_table()
