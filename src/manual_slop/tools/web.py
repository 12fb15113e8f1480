"""Network tools: ``fetch_url`` (a page as plain text) and ``web_search`` (DuckDuckGo's HTML page).

Both are bounded: connect within 5 s, finish within 15 s (the tool's own timeout is 20 s as
a backstop), read at most 2 MB, return at most 40,000 characters. Without a network they
fail fast with an ``error`` result that says so (DNS failure, connection refused) — they
never hang. By default they refuse to reach loopback, private, link-local and reserved
addresses (the Hook API listens on 127.0.0.1), checking every redirect hop.
"""

from __future__ import annotations

import ipaddress
import socket
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

from manual_slop import __version__
from manual_slop.tools.errors import AccessDenied, ToolFailure, ToolInputError, ToolTimeout
from manual_slop.tools.tool import Tool, ToolRun

__all__ = ["WebSettings", "html_to_text", "parse_search_results", "web_tools"]

_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml", "application/javascript")


@dataclass(frozen=True, slots=True)
class WebSettings:
    """Where and how the web tools reach out."""

    search_url: str = "https://html.duckduckgo.com/html/"
    timeout_s: float = 15.0
    connect_timeout_s: float = 5.0
    max_chars: int = 40_000
    max_bytes: int = 2_000_000
    max_results: int = 5
    max_redirects: int = 5
    allow_private: bool = False  # tests and trusted setups may reach 127.0.0.1
    user_agent: str = f"ManualSlop/{__version__} (+tool fetch_url)"


def html_to_text(html: str) -> tuple[str, str]:
    """``(title, readable text)``: scripts, styles and markup removed, whitespace collapsed."""
    from manual_slop.tools.web_html import html_to_text as parse

    return parse(html)


# -- fetching ------------------------------------------------------------------------------------
def _check_host(url: str, settings: WebSettings) -> None:
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in {"http", "https"}:
        raise ToolInputError(
            f"only http and https URLs can be fetched, not {parsed.scheme or 'a bare path'!r}"
        )
    host = parsed.hostname
    if not host:
        raise ToolInputError(f"the URL {url!r} has no host")
    if settings.allow_private:
        return
    try:
        infos = socket.getaddrinfo(
            host, parsed.port or (443 if parsed.scheme == "https" else 80), type=socket.SOCK_STREAM
        )
    except socket.gaierror as exc:
        raise ToolFailure(f"network unavailable: cannot resolve {host} ({exc.strerror or exc})") from None
    except UnicodeError:
        raise ToolInputError(f"invalid host name {host!r}") from None
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%")[0])
        if not address.is_global:
            raise AccessDenied(
                url, f"{host} resolves to {address}, a local or private address; only public hosts"
            )


def fetch(url: str, settings: WebSettings, run: ToolRun) -> tuple[str, str, bytes, str]:
    """``(final url, content type, body, charset)`` following redirects with a check per hop."""
    import requests

    deadline = time.monotonic() + min(settings.timeout_s, max(0.1, run.remaining() - 0.2))
    current = url
    for _ in range(settings.max_redirects + 1):
        _check_host(current, settings)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ToolTimeout(f"fetching {url} took longer than {settings.timeout_s:g} s")
        try:
            response = requests.get(
                current,
                timeout=(min(settings.connect_timeout_s, remaining), remaining),
                allow_redirects=False,
                stream=True,
                headers={"User-Agent": settings.user_agent, "Accept": "text/html,text/plain,*/*;q=0.5"},
            )
        except requests.exceptions.Timeout:
            raise ToolTimeout(f"{urllib.parse.urlsplit(current).netloc} did not answer in time") from None
        except requests.exceptions.ConnectionError as exc:
            where = urllib.parse.urlsplit(current).netloc
            raise ToolFailure(f"network unavailable: cannot connect to {where} ({_reason(exc)})") from None
        except requests.exceptions.RequestException as exc:
            raise ToolInputError(f"cannot fetch {current}: {exc}") from None
        with response:
            if response.is_redirect and "location" in response.headers:
                current = urllib.parse.urljoin(current, response.headers["location"])
                continue
            if response.status_code >= 400:
                raise ToolInputError(f"{current} answered HTTP {response.status_code} {response.reason}")
            body = bytearray()
            try:
                for chunk in response.iter_content(65536):
                    body.extend(chunk)
                    if len(body) >= settings.max_bytes:
                        break
                    if time.monotonic() > deadline:
                        raise ToolTimeout(f"reading {current} took longer than {settings.timeout_s:g} s")
            except requests.exceptions.RequestException as exc:
                raise ToolFailure(f"the connection to {current} broke: {_reason(exc)}") from None
            content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
            return current, content_type, bytes(body[: settings.max_bytes]), response.encoding or "utf-8"
    raise ToolInputError(f"{url} redirected more than {settings.max_redirects} times")


def _reason(exc: Exception) -> str:
    text = str(exc)
    for needle in ("Name or service not known", "Temporary failure in name resolution", "Connection refused",
                   "No route to host", "Network is unreachable", "timed out"):  # fmt: skip
        if needle in text:
            return needle
    return text[:200]


def _decode(body: bytes, charset: str) -> str:
    try:
        return body.decode(charset, "replace")
    except LookupError:
        return body.decode("utf-8", "replace")


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n\n[page text cut at {limit:,} of {len(text):,} characters]"


def _fetch_url_handler(settings: WebSettings) -> Any:
    def handler(args: dict[str, Any], run: ToolRun) -> str:
        url = args["url"].strip()
        final, content_type, body, charset = fetch(url, settings, run)
        if content_type and not content_type.startswith(_TEXT_TYPES):
            raise ToolInputError(
                f"{final} is {content_type}, not text; fetch_url only reads text and web pages"
            )
        raw = _decode(body, charset)
        if "html" in content_type or (not content_type and "<html" in raw[:2000].lower()):
            title, text = html_to_text(raw)
        else:
            title, text = "", raw
        header = f"URL: {final}" + (f"\nTitle: {title}" if title else "")
        return _cap(f"{header}\n\n{text or '(the page has no text)'}", settings.max_chars)

    return handler


# -- search --------------------------------------------------------------------------------------------
def parse_search_results(html: str, limit: int = 5) -> list[dict[str, str]]:
    """Results (title, url, snippet) of a DuckDuckGo HTML result page."""
    from manual_slop.tools.web_html import parse_search_results as parse

    return parse(html, limit)


def _web_search_handler(settings: WebSettings) -> Any:
    def handler(args: dict[str, Any], run: ToolRun) -> str:
        query = args["query"].strip()
        if not query:
            raise ToolInputError("query is empty")
        url = (
            settings.search_url
            + ("&" if "?" in settings.search_url else "?")
            + urllib.parse.urlencode({"q": query})
        )
        _, _, body, charset = fetch(url, settings, run)
        results = parse_search_results(_decode(body, charset), settings.max_results)
        if not results:
            return f"no results for {query!r}"
        lines = [f"Results for {query!r}:"]
        for number, item in enumerate(results, start=1):
            lines.append(f"{number}. {item['title']}\n   {item['url']}\n   {item['snippet']}")
        return _cap("\n".join(lines), settings.max_chars)

    return handler


def web_tools(settings: WebSettings | None = None) -> list[Tool]:
    settings = settings or WebSettings()
    backstop = settings.timeout_s + 5.0
    return [
        Tool(
            "fetch_url",
            f"Download a web page (http or https) and return its readable text: scripts, styles and markup "
            f"removed, at most {settings.max_chars:,} characters. Use it to read documentation or an error's "
            "explanation. Fails fast without a network; local and private addresses are refused.",
            {
                "type": "object",
                "properties": {
                    "url": {"type": "string", "minLength": 1, "maxLength": 4096, "description": "http(s) URL"}
                },
                "required": ["url"],
                "additionalProperties": False,
            },
            _fetch_url_handler(settings),
            timeout_s=backstop,
            untrusted=True,
        ),
        Tool(
            "web_search",
            f"Search the web (DuckDuckGo) and return the top {settings.max_results} results, each with "
            "title, URL and snippet. Follow up with fetch_url to read a result. Fails fast without a "
            "network.",
            {
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 500,
                        "description": "What to search for",
                    }
                },
                "required": ["query"],
                "additionalProperties": False,
            },
            _web_search_handler(settings),
            timeout_s=backstop,
            untrusted=True,
        ),
    ]
