"""The local model's lifetime rule (ai/providers/local_engine.py): an engine is freed only after
every call on it has returned, close stops the running calls first, and nothing but the holder
keeps it alive — so the process never exits with llama.cpp computing (the SIGSEGV at
``ggml_cpu_extra_compute_forward``).

The engine here is a stand-in that records, like the real one's C++ side would matter, when a
call runs and when it is destroyed; :func:`violations` is the checker, and it is run against the
old holder (drop the reference, do not wait) to prove it catches the defect.
"""

from __future__ import annotations

import threading
import time
import weakref
from pathlib import Path
from typing import Any

import pytest

from manual_slop.ai.errors import ProviderError
from manual_slop.ai.messages import Message, ModelRequest
from manual_slop.ai.providers import ProviderConfig
from manual_slop.ai.providers.local import LocalProvider
from manual_slop.ai.providers.local_engine import EngineHolder, EngineStopping, close_all

TICK_S = 0.005
JOIN_S = 5.0


class Ledger:
    """What happened to the engines, in order: (event, engine number)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []
        self.lock = threading.Lock()
        self.made = 0

    def add(self, event: str, number: int) -> None:
        with self.lock:
            self.events.append((event, number))

    def engine(self, *, obeys_stop: bool = True) -> SlowEngine:
        self.made += 1
        engine = SlowEngine(self, self.made, obeys_stop)
        weakref.finalize(engine, self.add, "destroyed", self.made)
        return engine


class SlowEngine:
    """Streams a chunk every :data:`TICK_S` until the callback returns True (or ``release`` is
    set, for a call that ignores its callback: a stuck model)."""

    listening_address = ""

    def __init__(self, ledger: Ledger, number: int, obeys_stop: bool) -> None:
        self.ledger, self.number, self.obeys_stop = ledger, number, obeys_stop
        self.started = threading.Event()
        self.release = threading.Event()

    @staticmethod
    def reject(body: dict[str, Any]) -> None:
        """A bad request, refused as xllamacpp does (a C method: no frame of it holds the engine)."""
        raise ValueError("bad request")

    def handle_chat_completions(self, body: dict[str, Any], callback: Any) -> None:
        self.ledger.add("call", self.number)
        self.started.set()
        try:
            while not self.release.wait(TICK_S):
                chunk = {"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": None}]}
                if callback(chunk) and self.obeys_stop:
                    return None
            return None
        finally:
            self.ledger.add("returned", self.number)


def violations(ledger: Ledger) -> list[str]:
    """Every engine destroyed while a call on it ran, or not destroyed once closed."""
    running: dict[int, int] = {}
    found = []
    for event, number in ledger.events:
        if event == "call":
            running[number] = running.get(number, 0) + 1
        elif event == "returned":
            running[number] -= 1
        elif event == "destroyed" and running.get(number):
            found.append(f"engine {number} destroyed under {running[number]} running call(s)")
        elif event == "closed" and ("destroyed", number) not in ledger.events:
            calls = running.get(number, 0)
            found.append(f"engine {number}: close returned with it still alive (calls running: {calls})")
    return found


def _generate_on_thread(holder: EngineHolder, outcome: list[object]) -> threading.Thread:
    def run() -> None:
        try:
            outcome.append(holder.call("handle_chat_completions", {}, lambda chunk: holder.stopping))
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_close_stops_the_running_call_and_frees_the_engine_only_after_it_returned() -> None:
    ledger = Ledger()
    holder = EngineHolder(ledger.engine)
    with holder.using() as engine:
        started = engine.started
        del engine
    outcome: list[object] = []
    thread = _generate_on_thread(holder, outcome)
    assert started.wait(JOIN_S)
    began = time.monotonic()
    assert holder.close(timeout=JOIN_S)
    ledger.add("closed", 1)
    assert time.monotonic() - began < 1.0  # stopped at the next chunk, not at the end
    thread.join(JOIN_S)
    assert not thread.is_alive() and outcome == [None]
    assert violations(ledger) == []
    assert ledger.events[-3:] == [("returned", 1), ("destroyed", 1), ("closed", 1)]
    assert not holder.loaded and holder.calls == 0


def test_a_call_that_will_not_stop_keeps_its_engine_until_it_returns_and_new_calls_wait() -> None:
    ledger = Ledger()
    holder = EngineHolder(lambda: ledger.engine(obeys_stop=False))
    with holder.using() as engine:
        stuck = engine
        del engine
    outcome: list[object] = []
    thread = _generate_on_thread(holder, outcome)
    assert stuck.started.wait(JOIN_S)
    assert holder.close(timeout=0.05) is False  # refused: never freed under the running call
    assert holder.stopping and holder.loaded
    with pytest.raises(EngineStopping, match=r"still closing \(1 call"):
        holder.call("handle_chat_completions", {}, lambda chunk: True, wait=0.02)
    stuck.release.set()
    del stuck
    thread.join(JOIN_S)
    assert not thread.is_alive()
    assert ("destroyed", 1) in ledger.events and violations(ledger) == []  # the last call out freed it
    assert not holder.stopping
    with holder.using():  # open again: the next call loads a new engine
        pass
    assert ledger.made == 2
    holder.close()


def test_a_kept_traceback_does_not_keep_the_engine_alive() -> None:
    ledger = Ledger()
    holder = EngineHolder(ledger.engine)
    with pytest.raises(ValueError, match="bad request") as kept:
        holder.call("reject", {"messages": None})
    assert holder.close(timeout=JOIN_S)
    assert ("destroyed", 1) in ledger.events, "a frame of the kept traceback holds the engine"
    assert kept.value  # still held here


def test_after_the_exit_close_nothing_loads_again() -> None:
    ledger = Ledger()
    holder = EngineHolder(ledger.engine)
    holder.call("handle_chat_completions", {}, lambda chunk: True)
    assert close_all(timeout=JOIN_S) == 0
    assert ("destroyed", 1) in ledger.events
    with pytest.raises(EngineStopping, match="exiting"):
        holder.call("handle_chat_completions", {}, lambda chunk: True)


def test_the_provider_stops_its_send_when_closed_and_says_so() -> None:
    ledger = Ledger()
    provider = LocalProvider(ProviderConfig("local", "x.gguf"), engine_factory=lambda **kw: ledger.engine())
    provider.resolve_model_path = lambda: Path("x.gguf")  # no model file needed: the engine is a stand-in
    request = ModelRequest(system="be brief", context="", messages=[Message.user("hi")])
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(provider.generate(request))
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + JOIN_S
    while ("call", 1) not in ledger.events and time.monotonic() < deadline:
        time.sleep(TICK_S)
    provider.close()
    thread.join(JOIN_S)
    (error,) = outcome
    assert isinstance(error, ProviderError) and "closed during the call" in str(error)
    assert ("destroyed", 1) in ledger.events and violations(ledger) == []


class OldHolder(EngineHolder):
    """The lifetime before the fix: close dropped the reference and returned at once."""

    def close(self, timeout: float = 0.0, *, final: bool = False) -> bool:
        with self._cond:
            self._engine = None
        return True


def test_the_checker_catches_the_old_close_that_did_not_wait() -> None:
    ledger = Ledger()
    holder = OldHolder(ledger.engine)
    outcome: list[object] = []
    with holder.using() as engine:
        started = engine.started
        del engine
    thread = _generate_on_thread(holder, outcome)
    assert started.wait(JOIN_S)
    holder.close()
    ledger.add("closed", 1)
    found = violations(ledger)
    assert found and "close returned with it still alive (calls running: 1)" in found[0]
    holder._closing = True  # let the call end
    thread.join(JOIN_S)
