"""The HTTP transport of every HTTP provider: an ``httpx`` client whose blocking reads a
cancel interrupts.

A thread blocked in ``recv`` does not wake up when another thread closes the socket; it
does when the socket is shut down. So every network stream this transport opens checks,
on each read and write, whether the calling thread runs under a cancel token
(:func:`manual_slop.cancel.cancel_scope`); if so, it registers a ``shutdown(SHUT_RDWR)``
of its socket with the token for the duration of the call. Cancelling then ends a read
that waits for a slow model, a stalled stream or the first byte, at once: the SDK sees a
broken connection, and the provider reports the request as cancelled.

A stream also holds back what httpcore writes (request head, body, the empty end of a
sized body: three writes) until the first read, then sends it in one ``sendall``: one
system call and, on the wire, one segment for a small request instead of two or three,
which the receiving end also reads at once. A request larger than :data:`WRITE_BUFFER_BYTES`
goes out in pieces of about that size as it is written.

The Anthropic SDK (on ``httpx2``) and the Gemini SDK (on ``httpx``) get this client as
their HTTP client; the OpenAI-compatible provider uses it directly. Proxies named in the environment
(``HTTPS_PROXY`` and friends, ``NO_PROXY``) are honoured as ``httpx`` itself would.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import socket
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from manual_slop.cancel import current_token

__all__ = ["HTTP_LIBRARIES", "WRITE_BUFFER_BYTES", "cancellable_client"]

WRITE_BUFFER_BYTES = 64 * 1024  # held back until a read; beyond this, sent as written

# The HTTP client library and its core, by name: the Gemini SDK and the OpenAI-compatible
# provider run on httpx, the Anthropic SDK on its fork httpx2 (same API, other package).
HTTP_LIBRARIES: dict[str, str] = {"httpx": "httpcore", "httpx2": "httpcore2"}


def _interruptible(call: Any, stream: Any, *args: Any) -> Any:
    """Run a blocking stream call; under a cancel token, a cancel shuts the socket down."""
    token = current_token()
    if token is None:
        return call(*args)

    def shutdown() -> None:
        sock = stream.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    unregister = token.on_cancel(shutdown)
    try:
        return call(*args)
    finally:
        unregister()


@functools.cache
def _stream_class(core_name: str) -> type:
    """A network stream of ``core_name`` (httpcore or httpcore2) wrapping another: a cancel
    interrupts its calls; writes wait for the next read and go out together."""
    core = importlib.import_module(core_name)

    class Stream(core.NetworkStream):  # type: ignore[misc,name-defined]
        def __init__(self, inner: Any) -> None:
            self._inner = inner
            self._pending: list[bytes] = []  # written, not yet sent (sent before the next read)
            self._pending_bytes = 0
            self._write_timeout: float | None = None

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            self._flush()
            return _interruptible(self._inner.read, self._inner, max_bytes, timeout)  # type: ignore[no-any-return]

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            if not buffer:
                return
            self._pending.append(bytes(buffer))
            self._pending_bytes += len(buffer)
            self._write_timeout = timeout
            if self._pending_bytes >= WRITE_BUFFER_BYTES:
                self._flush()

        def _flush(self) -> None:
            if not self._pending:
                return
            data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
            self._pending.clear()
            self._pending_bytes = 0
            _interruptible(self._inner.write, self._inner, data, self._write_timeout)

        def close(self) -> None:
            self._pending.clear()  # a request closed before its answer is read: nothing to send
            self._inner.close()

        def start_tls(
            self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
        ) -> Any:
            self._flush()
            return Stream(self._inner.start_tls(ssl_context, server_hostname, timeout))

        def get_extra_info(self, info: str) -> Any:
            return self._inner.get_extra_info(info)

    return Stream


@functools.cache
def _backend_class(core_name: str) -> type:
    """A network backend of ``core_name`` (httpcore or httpcore2) whose streams a cancel interrupts."""
    core = importlib.import_module(core_name)
    Stream = _stream_class(core_name)

    class Backend(core.SyncBackend):  # type: ignore[misc,name-defined]
        def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,
            local_address: str | None = None,
            socket_options: Iterable[Any] | None = None,
        ) -> Any:
            return Stream(super().connect_tcp(host, port, timeout, local_address, socket_options))

        def connect_unix_socket(
            self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
        ) -> Any:
            return Stream(super().connect_unix_socket(path, timeout, socket_options))

    return Backend


def _proxy_for(base_url: str) -> str | None:
    """The environment's proxy for ``base_url`` (None when there is none or NO_PROXY says so)."""
    import urllib.request  # here: ssl, email and more that a start-up does not need

    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if not host or urllib.request.proxy_bypass(host):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(parts.scheme) or proxies.get("all")


def cancellable_client(
    base_url: str, timeout: float, connect_timeout: float = 10.0, *, library: str = "httpx"
) -> Any:
    """A ``Client`` of ``library`` (httpx or httpx2) for ``base_url`` whose reads a cancel
    token interrupts."""
    http = importlib.import_module(library)
    transport = http.HTTPTransport(proxy=_proxy_for(base_url))
    # httpcore takes the backend as a constructor argument HTTPTransport does not pass on; its
    # pools keep it in this attribute (tests/integration/ai/test_cancel.py checks the interrupt).
    transport._pool._network_backend = _backend_class(HTTP_LIBRARIES[library])()
    return http.Client(
        transport=transport,
        timeout=http.Timeout(timeout, connect=min(connect_timeout, timeout)),
        follow_redirects=False,
    )
