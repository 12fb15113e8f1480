"""Scripted turns for the fake provider servers.

A fake server answers each model call with the next turn of its script; a test
builds the script from these records::

    Reply("hello")                                  a plain text answer
    Reply(calls=[Call("read_file", {"path": "a"})]) tool calls (with optional text)
    Fail(429, headers={"Retry-After": "1"})         an HTTP error (body in the protocol's shape)
    rate_limited(1), server_error(), overloaded()   the usual suspects
    Hang(5)                                         accept, say nothing for 5 s, close (client timeout)
    Truncated(Reply("..."))                         promise more bytes than are sent, then close
    Truncated(Reply("..."), mid_event=True)         a stream cut in the middle of an SSE event
    Reset()                                         read the request, then reset the connection (RST)
    Raw("<html>oops</html>")                        a non-JSON body
    Json({...}, status=200)                         any JSON body verbatim (e.g. MiniMax base_resp errors)

Every turn takes ``delay`` (seconds before the answer starts); a ``Reply`` also
takes ``chunk_delay`` (seconds between streamed chunks) and ``chunks`` (how its
text is split when streamed; by default a few characters per chunk).
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from typing import Any

__all__ = [
    "Call",
    "Fail",
    "Hang",
    "Json",
    "Raw",
    "Reply",
    "Reset",
    "Truncated",
    "Turn",
    "overloaded",
    "rate_limited",
    "server_error",
    "split_text",
]


@dataclass(slots=True)
class Turn:
    """Base of every scripted answer."""

    _: KW_ONLY
    delay: float = 0.0


@dataclass(slots=True)
class Call:
    """One tool call the fake model makes."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(slots=True)
class Reply(Turn):
    """A model answer: text and/or tool calls."""

    text: str = ""
    calls: list[Call] = field(default_factory=list)
    _: KW_ONLY
    chunks: list[str] | None = None
    chunk_delay: float = 0.0
    usage: dict[str, int] | None = None  # overrides the estimated token counts

    def text_chunks(self) -> list[str]:
        if self.chunks is not None:
            return list(self.chunks)
        return split_text(self.text)


@dataclass(slots=True)
class Fail(Turn):
    """An HTTP error; ``body`` None means the protocol's usual error body for ``status``."""

    status: int = 500
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Hang(Turn):
    """Accept the request, send nothing for ``seconds`` (the client should time out), then close."""

    seconds: float = 30.0


@dataclass(slots=True)
class Truncated(Turn):
    """Start answering ``reply`` and cut the connection halfway through the body."""

    reply: Reply = field(
        default_factory=lambda: Reply("this answer will be cut short somewhere in the middle")
    )
    mid_event: bool = False  # a streamed answer stops inside an SSE frame, not between two


@dataclass(slots=True)
class Reset(Turn):
    """Read the request, answer nothing and reset the connection (the client sees ECONNRESET)."""


@dataclass(slots=True)
class Raw(Turn):
    """A body that is not JSON (a proxy's HTML page, say)."""

    body: str = ""
    status: int = 200
    content_type: str = "text/html"


@dataclass(slots=True)
class Json(Turn):
    """A JSON body sent verbatim."""

    obj: Any = None
    status: int = 200


def rate_limited(retry_after: float | None = 1, *, delay: float = 0.0) -> Fail:
    """429 Too Many Requests, with ``Retry-After`` when given."""
    headers = {} if retry_after is None else {"Retry-After": _seconds(retry_after)}
    return Fail(429, headers=headers, delay=delay)


def server_error(status: int = 500) -> Fail:
    return Fail(status)


def overloaded() -> Fail:
    """Anthropic's 529 Overloaded."""
    return Fail(529)


def split_text(text: str, size: int = 4) -> list[str]:
    """``text`` in pieces of ``size`` characters (at least one piece)."""
    if not text:
        return []
    return [text[i : i + size] for i in range(0, len(text), size)]


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)
