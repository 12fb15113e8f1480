"""The request guard: what every Hook API request must pass before any handler runs.

The checks, in the order the server applies them (the first that fails answers):

====  =======================================================  ==========================
step  check                                                    refusal
====  =======================================================  ==========================
1     the request line has an HTTP version; headers total      400 ``bad_request``,
      at most :data:`MAX_HEADER_BYTES`                         431 ``headers_too_large``
2     ``Host`` names this server: a loopback name (or one of   403 ``forbidden``
      ``hook.allowed_hosts``) and the bound port
3     no ``Origin`` other than this server's own; no           403 ``forbidden``
      ``Sec-Fetch-Site`` other than ``same-origin``/``none``
4     ``Authorization: Bearer <token>`` (all but GET /status)  401 ``unauthorized``
5     the route exists with this method                        404, 405
6     a POST is ``Content-Type: application/json``             415
      (``charset=utf-8`` allowed; an empty body counts)        ``unsupported_media_type``
7     the body: at most 1 MiB, nested at most                  413, 400
      :data:`MAX_JSON_DEPTH` levels, valid JSON, its schema
====  =======================================================  ==========================

Steps 2 and 3 are what a browser cannot forge: a page on another site (or a name that a
DNS rebinding attack points at 127.0.0.1) can make the browser *send* a request, but the
``Host`` and ``Origin`` it carries name that site. Step 6 closes the requests a page may
send without a CORS preflight (forms, ``text/plain``). No CORS header is ever sent, so no
browser ever lets a page read a reply.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from email.message import Message

from manual_slop.hooks.errors import BadRequest, Forbidden, Unauthorized, UnsupportedMediaType

__all__ = [
    "BODY_METHODS",
    "CHECK_ORDER",
    "LOOPBACK_NAMES",
    "MAX_HEADER_BYTES",
    "MAX_JSON_DEPTH",
    "RequestGuard",
    "is_loopback",
    "json_depth_exceeds",
    "parse_host",
]

MAX_HEADER_BYTES = 64 * 1024
MAX_JSON_DEPTH = 64
LOOPBACK_NAMES: tuple[str, ...] = ("127.0.0.1", "localhost", "[::1]")
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_FETCH_SITES_ALLOWED = frozenset({"same-origin", "none"})
# The checks in the order they run and the statuses they answer with (the table above; the
# security guide's table is checked against this).
CHECK_ORDER: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("request line and headers", (400, 431)),
    ("Host", (403,)),
    ("Origin and Sec-Fetch-Site", (403,)),
    ("bearer token", (401,)),
    ("route and method", (404, 405)),
    ("content type", (415,)),
    ("body", (413, 400)),
)

# A JSON string (escapes included) and the brackets that nest.
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def json_depth_exceeds(raw: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when the JSON text ``raw`` nests arrays/objects deeper than ``limit``.

    Decided on the bytes before parsing (strings are skipped), so a hostile body never
    reaches the parser's or the schema validator's recursion.
    """
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False
    brackets = _JSON_STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    depth = 0
    for byte in brackets:
        if byte in b"[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def parse_host(value: str) -> tuple[str, int | None] | None:
    """``(name, port)`` of a Host header (name lower-cased, IPv6 in brackets); None if malformed."""
    text = value.strip().lower()
    if not text or any(ch.isspace() for ch in text):
        return None
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            return None
        name, rest = text[: close + 1], text[close + 1 :]
    else:
        name, sep, port_text = text.partition(":")
        rest = f":{port_text}" if sep else ""
    if rest and not rest.startswith(":"):
        return None
    port: int | None = None
    if rest:
        digits = rest[1:]
        if not digits.isdigit() or len(digits) > 5 or not 0 < int(digits) < 65536:
            return None
        port = int(digits)
    name = name.rstrip(".")
    return (name, port) if name else None


def _one(headers: Message, name: str) -> str | None:
    values = headers.get_all(name) or []
    if len(values) > 1:
        raise BadRequest(f"the {name} header is given {len(values)} times; give it once")
    return values[0] if values else None


class RequestGuard:
    """Host, Origin, token and content-type checks for one listening server."""

    def __init__(self, token: str, port: int, extra_hosts: Iterable[str] = (), bound_host: str = "") -> None:
        self._token = token.encode("utf-8")
        self.port = port
        names = {*LOOPBACK_NAMES, *(h.strip().lower().rstrip(".") for h in extra_hosts if h.strip())}
        bound = bound_host.strip().lower()
        if bound and bound not in ("0.0.0.0", "::", "[::]"):
            names.add(f"[{bound.strip('[]')}]" if ":" in bound else bound)
        self.host_names = frozenset(names)
        self.origins = frozenset(f"http://{name}:{port}" for name in names)

    @property
    def token_required(self) -> bool:
        return bool(self._token)

    def check_request(self, method: str, path: str, headers: Message) -> None:
        """Steps 2 to 4: raise Forbidden or Unauthorized, or return."""
        self._check_host(_one(headers, "Host"))
        self._check_origin(headers)
        if self._token and not (method == "GET" and path == "/status"):
            self._check_token(headers)

    def _check_host(self, value: str | None) -> None:
        if value is None:
            raise Forbidden("the request has no Host header; it must name this server")
        parsed = parse_host(value)
        shown = value.strip()[:80]
        if parsed is None:
            raise Forbidden(f"the Host header {shown!r} is malformed")
        name, port = parsed
        if name not in self.host_names or (port if port is not None else 80) != self.port:
            raise Forbidden(
                f"Host {shown!r} is not this server; use http://127.0.0.1:{self.port} "
                "(other names are refused against DNS rebinding; see hook.allowed_hosts)"
            )

    def _check_origin(self, headers: Message) -> None:
        origins = headers.get_all("Origin") or []
        for origin in origins:
            if origin.strip().lower().rstrip("/") not in self.origins:
                raise Forbidden(f"cross-origin requests are refused (Origin {origin.strip()[:80]!r})")
        site = headers.get_all("Sec-Fetch-Site") or []
        for value in site:
            if value.strip().lower() not in _FETCH_SITES_ALLOWED:
                raise Forbidden(
                    f"requests from other sites are refused (Sec-Fetch-Site {value.strip()[:40]!r})"
                )

    def _check_token(self, headers: Message) -> None:
        values = headers.get_all("Authorization") or []
        given = b""
        if len(values) == 1:
            scheme, _, value = values[0].strip().partition(" ")
            if scheme.lower() == "bearer":
                given = value.strip().encode("latin-1", errors="replace")
        import hmac  # not needed by GET /status (the first request of a start)

        if not given or not hmac.compare_digest(given, self._token):
            raise Unauthorized("missing or wrong token; send 'Authorization: Bearer <token>'")

    @staticmethod
    def check_content_type(method: str, headers: Message) -> None:
        """Step 6: a POST (PUT, PATCH) must say its body is JSON (UTF-8)."""
        if method not in BODY_METHODS:
            return
        values = headers.get_all("Content-Type") or []
        value = values[0] if len(values) == 1 else ""
        media, _, params = value.partition(";")
        ok = media.strip().lower() == "application/json"
        for param in params.split(";") if ok else ():
            key, _, raw = param.partition("=")
            if key.strip().lower() == "charset" and raw.strip().strip('"').lower() not in ("utf-8", "utf8"):
                ok = False
        if not ok:
            shown = repr(value.strip()[:80]) if value else "none"
            raise UnsupportedMediaType(
                f"{method} bodies must be 'Content-Type: application/json' (UTF-8); got {shown}"
            )
