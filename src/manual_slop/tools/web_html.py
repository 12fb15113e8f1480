"""The web tools' HTML parsing: readable text of a page, results of a search page.

Apart from :mod:`manual_slop.tools.web` so that ``html.parser`` loads when a page is first
parsed, not at every start.
"""

from __future__ import annotations

import re
import urllib.parse
from html.parser import HTMLParser

__all__ = ["html_to_text", "parse_search_results"]

_SKIP_TAGS = {"script", "style", "noscript", "template", "svg", "head", "iframe", "object"}
_BLOCK_TAGS = {
    "p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article", "header", "footer",
    "nav", "aside", "main", "pre", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "dt", "dd",
    "form", "figure", "figcaption", "title",
}  # fmt: skip


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        if tag in _SKIP_TAGS:
            self._skip += 1
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in _SKIP_TAGS:
            self._skip = max(0, self._skip - 1)
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip:
            self.parts.append(data)


def html_to_text(html: str) -> tuple[str, str]:
    """``(title, readable text)``: scripts, styles and markup removed, whitespace collapsed."""
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    lines = (re.sub(r"[ \t\r\f\v\xa0]+", " ", line).strip() for line in "".join(parser.parts).split("\n"))
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return parser.title.strip(), text


class _ResultParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.results: list[dict[str, str]] = []
        self._field: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if "result__a" in classes:
            self.results.append(
                {"title": "", "url": _result_url(dict(attrs).get("href") or ""), "snippet": ""}
            )
            self._field = "title"
        elif "result__snippet" in classes and self.results:
            self._field = "snippet"

    def handle_endtag(self, tag: str) -> None:
        if tag in {"a", "div", "td"}:
            self._field = None

    def handle_data(self, data: str) -> None:
        if self._field and self.results:
            self.results[-1][self._field] += data


def _result_url(href: str) -> str:
    parsed = urllib.parse.urlsplit(href)
    target = urllib.parse.parse_qs(parsed.query).get("uddg")
    return target[0] if target else href


def parse_search_results(html: str, limit: int = 5) -> list[dict[str, str]]:
    """Results (title, url, snippet) of a DuckDuckGo HTML result page."""
    parser = _ResultParser()
    parser.feed(html)
    results = []
    for item in parser.results:
        cleaned = {k: re.sub(r"\s+", " ", v).strip() for k, v in item.items()}
        if cleaned["url"] and cleaned["title"]:
            results.append(cleaned)
    return results[:limit]
