"""The test servers stay quiet when a client hangs up on purpose, and only then."""

from __future__ import annotations

import pytest

from tests.fakes.http import QuietHTTPServer


@pytest.fixture
def server():
    httpd = QuietHTTPServer(("127.0.0.1", 0), object)  # never serves: only handle_error is called
    yield httpd
    httpd.server_close()


def test_a_client_hanging_up_prints_nothing(server, capsys) -> None:
    for error in (ConnectionResetError(104, "Connection reset by peer"), BrokenPipeError(32, "Broken pipe")):
        try:
            raise error
        except OSError:
            server.handle_error(None, ("127.0.0.1", 1))
    assert capsys.readouterr().err == ""


def test_any_other_error_is_still_printed(server, capsys) -> None:
    try:
        raise ValueError("a handler bug")
    except ValueError:
        server.handle_error(None, ("127.0.0.1", 1))
    assert "ValueError: a handler bug" in capsys.readouterr().err
