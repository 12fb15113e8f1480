"""Stop means stop: a cancel ends a send within a second on every provider, keeps the answer as
far as it got, never retries or falls back, and leaves nothing running."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from manual_slop.ai import AIClient
from manual_slop.ai.providers.transport import cancellable_client
from manual_slop.cancel import CancelToken, RequestCancelled, cancel_scope
from manual_slop.tools import ApprovalResult, ExecutionContext
from tests.fakes import Call, Hang, Reply
from tests.integration.ai.harness import NO_RETRY, Harness, HttpHarness, NapLog, OpenAICompatibleHarness

LONG = " ".join(f"word{i}" for i in range(400))
STOP_LIMIT_S = 1.0


class Send:
    """One ``client.send`` on its own thread, its outcome and when it ended."""

    def __init__(self, client: AIClient, token: CancelToken, **options: Any) -> None:
        self.chunks: list[str] = []
        self.outcome: Any = None
        self.ended = 0.0
        options.setdefault("enable_tools", False)
        self.thread = threading.Thread(
            target=self._run, args=(client, token, options), name="test-send", daemon=True
        )
        self.thread.start()

    def _run(self, client: AIClient, token: CancelToken, options: dict[str, Any]) -> None:
        try:
            self.outcome = client.send(
                "", "tell me everything", stream_callback=self.chunks.append, cancel=token, **options
            )
        except BaseException as exc:
            self.outcome = exc
        self.ended = time.monotonic()


def wait_for(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(0.01)


def stop(send: Send, token: CancelToken) -> float:
    """Cancel; the seconds until the send returned."""
    asked = time.monotonic()
    token.cancel("stopped by the test")
    send.thread.join(5)
    assert not send.thread.is_alive(), "the send did not return after the cancel"
    return send.ended - asked


def test_a_streaming_answer_stops_within_a_second_with_its_partial_text(harness: Harness) -> None:
    if harness.name == "local":
        harness.llama.token_delay = 0.02  # type: ignore[attr-defined]
    harness.push(Reply(LONG, chunk_delay=0.05))
    client = harness.client(retry=NO_RETRY)
    token = CancelToken()
    try:
        send = Send(client, token)
        wait_for(lambda: len("".join(send.chunks)) > 20)
        assert stop(send, token) < STOP_LIMIT_S
        assert isinstance(send.outcome, RequestCancelled), send.outcome
        partial = send.outcome.partial
        assert partial and LONG.startswith(partial.strip()[:20]) and len(partial) < len(LONG)
        assert send.outcome.reason == "stopped by the test"
        assert len(harness.sent()) == 1  # no retry, no fallback
        assert any("cancelled" in str(e.get("payload")) for e in harness.entries)  # the comms log says so
    finally:
        client.cleanup()


def test_a_silent_server_is_left_at_once(http_harness: HttpHarness) -> None:
    http_harness.push(Hang(30))
    client = http_harness.client(retry=NO_RETRY, timeout_s=60.0)
    token = CancelToken()
    try:
        send = Send(client, token)
        wait_for(lambda: len(http_harness.fake.model_calls()) == 1)  # the request is out, no answer comes
        time.sleep(0.2)
        assert stop(send, token) < STOP_LIMIT_S
        assert isinstance(send.outcome, RequestCancelled) and send.outcome.partial == ""
    finally:
        client.cleanup()


def test_a_cancel_before_the_call_sends_nothing(harness: Harness) -> None:
    client = harness.client(retry=NO_RETRY)
    token = CancelToken()
    token.cancel("changed my mind")
    try:
        with pytest.raises(RequestCancelled, match="changed my mind"):
            client.send("", "hello", cancel=token, enable_tools=False)
        assert harness.sent() == []
    finally:
        client.cleanup()


def test_a_running_tool_is_interrupted_and_the_send_ends(tmp_path: Path) -> None:
    """One provider is enough: the tool side is the same for all."""
    from manual_slop.tools.registry import default_registry

    harness = OpenAICompatibleHarness(tmp_path, NapLog())
    harness.push(Reply("", [Call("run_shell", {"script": "sleep 30"})]), Reply("never asked"))
    client = harness.client(retry=NO_RETRY)
    client._registry = default_registry(with_powershell=False)
    context = ExecutionContext.for_directory(
        tmp_path, pre_tool_callback=lambda request: ApprovalResult(True, dict(request.call.args))
    )
    token = CancelToken()
    try:
        send = Send(client, token, enable_tools=True, context=context)
        wait_for(lambda: any(p.name() == "sleep" for p in psutil.Process().children(recursive=True)))
        assert stop(send, token) < STOP_LIMIT_S + 0.5  # the shell's process group is killed first
        assert isinstance(send.outcome, RequestCancelled)
        wait_for(lambda: not any(p.name() == "sleep" for p in psutil.Process().children(recursive=True)), 3)
        assert len(harness.sent()) == 1  # the model was not asked again
    finally:
        client.cleanup()
        harness.close()


@pytest.mark.parametrize("library", ["httpx", "httpx2"])
def test_the_transport_shuts_a_blocked_read_down(library: str) -> None:
    """What the providers rely on (the SDKs' httpx and httpx2, a private attribute of theirs)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    accepted: list[socket.socket] = []
    acceptor = threading.Thread(target=lambda: accepted.append(listener.accept()[0]), daemon=True)
    acceptor.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    client = cancellable_client(url, timeout=30.0, library=library)
    token = CancelToken()
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            with cancel_scope(token):
                client.get(f"{url}/slow")
        except Exception as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read)
    try:
        reader.start()
        acceptor.join(5)
        time.sleep(0.2)
        asked = time.monotonic()
        token.cancel()
        reader.join(5)
        assert not reader.is_alive() and time.monotonic() - asked < 0.5
        assert outcome and type(outcome[0]).__module__.startswith(library)  # a broken connection
    finally:
        client.close()
        for conn in accepted:
            conn.close()
        listener.close()
