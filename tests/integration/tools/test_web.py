"""fetch_url and web_search against a local HTTP server; no test touches the internet."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import pytest

from manual_slop.tools import (
    ExecutionContext,
    ToolCall,
    ToolRegistry,
    ToolStatus,
    WebSettings,
    default_registry,
)
from manual_slop.tools.untrusted import UNTRUSTED_NOTE
from manual_slop.tools.web import html_to_text, parse_search_results
from tests.fakes.http import QuietHTTPServer

PAGE = """<!doctype html><html><head><title>Example Page</title>
<style>.hidden { display: none }</style><script>var secret = "do-not-show";</script></head>
<body><nav>Menu</nav><h1>Hello</h1><p>World &amp; more   text.</p>
<noscript>enable js</noscript><ul><li>one</li><li>two</li></ul></body></html>"""


def search_page(query: str) -> str:
    items = "".join(
        f'<div class="result"><h2><a class="result__a" href="//duckduckgo.com/l/?uddg={quote(url)}&rut=x">'
        f'{title}</a></h2><a class="result__snippet" href="#">About <b>{query}</b> {n}</a></div>'
        for n, (title, url) in enumerate(
            [
                ("First", "https://one.example/a?b=1"),
                ("Second", "https://two.example/"),
                ("Third", "https://3.example"),
            ]
        )
    )
    return f"<html><body>{items}</body></html>"


class Handler(BaseHTTPRequestHandler):
    release: threading.Event

    def log_message(self, *args: object) -> None:
        pass

    def send(
        self, status: int, body: bytes, content_type: str = "text/html; charset=utf-8", **headers: str
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path == "/page.html":
            self.send(200, PAGE.encode())
        elif url.path == "/big.txt":
            self.send(200, ("word " * 20_000).encode(), "text/plain")
        elif url.path == "/image.png":
            self.send(200, b"\x89PNG....", "image/png")
        elif url.path == "/redirect":
            self.send(302, b"", Location="/page.html")
        elif url.path == "/loop":
            self.send(302, b"", Location="/loop")
        elif url.path == "/slow":
            self.release.wait(10)
            self.send(200, b"late")
        elif url.path == "/html/":
            self.send(200, search_page(parse_qs(url.query)["q"][0]).encode())
        else:
            self.send(404, b"not here")


@pytest.fixture
def server() -> Iterator[str]:
    release = threading.Event()
    handler = type("BoundHandler", (Handler,), {"release": release})
    httpd = QuietHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, name="test-http", daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    release.set()
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def web_registry(**settings: object) -> ToolRegistry:
    return default_registry(web=WebSettings(**{"allow_private": True, **settings}), with_powershell=False)


@pytest.fixture
def ctx(tmp_path: Path) -> ExecutionContext:
    return ExecutionContext.for_directory(tmp_path)


def call(registry: ToolRegistry, ctx: ExecutionContext, tool: str, **args: str):
    return registry.execute(ToolCall.new(tool, args), ctx)


def inner(content: str, tool: str = "fetch_url") -> str:
    """What a web tool got, out of the untrusted block every successful result is wrapped in."""
    head = f'<untrusted_content source="{tool}">\n'
    tail = f"\n</untrusted_content>\n{UNTRUSTED_NOTE}"
    assert content.startswith(head) and content.endswith(tail), content[:200]
    return content[len(head) : -len(tail)]


def test_html_to_text_strips_scripts_styles_and_markup() -> None:
    title, text = html_to_text(PAGE)
    assert title == "Example Page"
    assert text == "Menu\n\nHello\n\nWorld & more text.\n\none\n\ntwo"


def test_fetch_url_returns_readable_text(server: str, ctx: ExecutionContext) -> None:
    result = call(web_registry(), ctx, "fetch_url", url=f"{server}/page.html")
    assert result.ok
    assert inner(result.content).startswith(f"URL: {server}/page.html\nTitle: Example Page\n\nMenu")
    assert "do-not-show" not in result.content and "display" not in result.content


def test_fetch_url_follows_redirects_and_caps_text(server: str, ctx: ExecutionContext) -> None:
    registry = web_registry()
    assert inner(call(registry, ctx, "fetch_url", url=f"{server}/redirect").content).startswith(
        f"URL: {server}/page.html"
    )
    big = inner(call(registry, ctx, "fetch_url", url=f"{server}/big.txt").content)
    assert "\n\n[page text cut at 40,000 of 100,0" in big and big.endswith(" characters]")
    assert len(big) < 40_200


def test_fetch_url_errors_are_clear(server: str, ctx: ExecutionContext) -> None:
    registry = web_registry()
    image = call(registry, ctx, "fetch_url", url=f"{server}/image.png")
    assert image.status is ToolStatus.ERROR and "image/png, not text" in image.content
    missing = call(registry, ctx, "fetch_url", url=f"{server}/nope")
    assert "answered HTTP 404" in missing.content
    loop = call(registry, ctx, "fetch_url", url=f"{server}/loop")
    assert "redirected more than 5 times" in loop.content
    scheme = call(registry, ctx, "fetch_url", url="file:///etc/passwd")
    assert "only http and https" in scheme.content


def test_a_slow_server_times_out(server: str, ctx: ExecutionContext) -> None:
    result = call(web_registry(timeout_s=0.5), ctx, "fetch_url", url=f"{server}/slow")
    assert result.status is ToolStatus.TIMEOUT and "did not answer in time" in result.content


def test_local_and_private_addresses_are_refused_by_default(server: str, ctx: ExecutionContext) -> None:
    registry = default_registry(with_powershell=False)
    for url in (f"{server}/page.html", "http://localhost:8999/api/state", "http://10.0.0.1/", "http://[::1]/",
                "http://169.254.169.254/latest/meta-data/"):  # fmt: skip
        result = call(registry, ctx, "fetch_url", url=url)
        assert result.status is ToolStatus.DENIED, url
        assert "local or private address" in result.content


def test_no_network_gives_a_quick_clear_error(ctx: ExecutionContext) -> None:
    port = closed_port()
    registry = web_registry(search_url=f"http://127.0.0.1:{port}/html/")
    fetched = call(registry, ctx, "fetch_url", url=f"http://127.0.0.1:{port}/")
    assert fetched.status is ToolStatus.ERROR
    assert fetched.content.startswith(f"Error: network unavailable: cannot connect to 127.0.0.1:{port}")
    searched = call(registry, ctx, "web_search", query="python asyncio")
    assert searched.status is ToolStatus.ERROR and "network unavailable" in searched.content


def test_web_search_parses_results(server: str, ctx: ExecutionContext) -> None:
    registry = web_registry(search_url=f"{server}/html/")
    result = call(registry, ctx, "web_search", query="tree sitter")
    assert inner(result.content, "web_search").splitlines() == [
        "Results for 'tree sitter':",
        "1. First", "   https://one.example/a?b=1", "   About tree sitter 0",
        "2. Second", "   https://two.example/", "   About tree sitter 1",
        "3. Third", "   https://3.example", "   About tree sitter 2",
    ]  # fmt: skip
    assert parse_search_results("<html>nothing</html>") == []
