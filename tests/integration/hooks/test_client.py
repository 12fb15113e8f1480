"""ApiHookClient behaviour that is not an endpoint: reconnects, unreachable servers, waits."""

from __future__ import annotations

import socket

import pytest

from manual_slop.hooks import ApiHookClient, HookConnectionError, HookServer, HookWaitTimeout
from tests.integration.hooks.conftest import HookApp


def test_a_kept_alive_connection_closed_by_a_restart_is_retried(hook_app_factory) -> None:
    app: HookApp = hook_app_factory()
    client = app.client()
    assert client.status()["status"] == "ok"  # the connection is now kept alive
    port = app.server.port
    assert app.server.stop() == []
    replacement = HookServer(app.ctrl, "127.0.0.1", port).start()
    try:
        assert client.get_value("ai_status") == "idle"  # stale connection detected, request retried
    finally:
        client.close()
        assert replacement.stop() == []


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_server_is_a_connection_error() -> None:
    client = ApiHookClient(f"http://127.0.0.1:{free_port()}", token="")
    with pytest.raises(HookConnectionError, match="Connection refused"):
        client.status()
    with pytest.raises(HookWaitTimeout, match="no hook server"):
        client.wait_for_server(timeout=0.2)


def test_waits_time_out_with_the_last_value(hook_app: HookApp) -> None:
    with pytest.raises(HookWaitTimeout, match="last: 'idle'"):
        hook_app.client().wait_for_value("ai_status", lambda v: v == "never", timeout=0.2)
    with pytest.raises(HookWaitTimeout, match="no 'response' event"):
        hook_app.client().wait_for_event("response", timeout=0.2)


def test_bad_base_urls_are_refused() -> None:
    for url in ("127.0.0.1:8999", "https://127.0.0.1:8999", "http://"):
        with pytest.raises(ValueError, match="http://HOST:PORT"):
            ApiHookClient(url)
