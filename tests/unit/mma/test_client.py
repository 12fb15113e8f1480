"""TierCaller and AIClientAdapter: fresh sessions, tier tags, usage, abort, the tools contract."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from manual_slop.mma.client import AIClientAdapter, StepVerdict, TierCaller
from manual_slop.mma.errors import Aborted
from manual_slop.mma.models import TierUsage
from manual_slop.tools import ApprovalRequest, ApprovalResult, ToolCall
from tests.unit.mma.fake_client import FakeTierClient


def test_a_call_is_fresh_tagged_and_accounted() -> None:
    client = FakeTierClient(respond=lambda call: f"{call.tier}:{call.model}")
    caller = TierCaller(client, TierUsage())
    assert caller.call("Tier 2", "md", "msg", model="m") == "Tier 2:m"
    assert caller.call("Tier 2", "md", "msg", model="m", ticket="t1") == "Tier 2:m"
    # each call a conversation of its own; nobody's session is reset
    (first, _), (second, ticket) = client.conversations
    assert first.startswith("mma:Tier 2:") and second.startswith("mma:Tier 2:t1:") and ticket == "t1"
    assert client.resets == 0 and caller.usage.snapshot()["Tier 2"]["model"] == "m"
    caller.shutdown()


def test_abort_returns_at_once_while_the_provider_hangs() -> None:
    hold = threading.Event()
    caller = TierCaller(FakeTierClient(hold=hold), TierUsage())
    abort = threading.Event()
    threading.Timer(0.1, abort.set).start()
    started = time.monotonic()
    with pytest.raises(Aborted, match="waiting for the provider"):
        caller.call("Tier 3", "", "m", abort=abort)
    assert time.monotonic() - started < 1.0
    hold.set()
    assert caller.shutdown(2.0) == []


class ContractClient:
    """Shaped like manual_slop.ai.client.AIClient as the adapter uses it."""

    def __init__(self) -> None:
        self.provider = "anthropic"
        self.model = "user-model"
        self.seen: list[Any] = []

    def set_provider(self, name: str, model: str | None = None) -> None:
        assert name == "anthropic"
        self.model = model or self.model

    def reset_session(self) -> None:
        self.seen.append("reset")

    def get_token_usage(self) -> dict[str, int]:
        return {"input_tokens": 7, "output_tokens": 3, "cache_read_tokens": 0, "cache_write_tokens": 0}

    def send(self, md_content, user_message, *, base_dir, enable_tools, pre_tool_callback, tier, **more):
        self.more = more
        request = ApprovalRequest(ToolCall("1", "write_file", {"path": "a"}), "diff")
        self.seen.append(pre_tool_callback(request))
        return f"{tier}/{self.model}/{enable_tools}"


def test_the_adapter_speaks_the_ai_client_and_tools_contracts() -> None:
    inner = ContractClient()
    requests = []

    def gate(request):
        requests.append(request)
        return StepVerdict(True, {"path": "b"}, "")

    caller = TierCaller(AIClientAdapter(inner), TierUsage())
    assert (
        caller.call("Tier 3", "", "go", model="big", enable_tools=True, step_gate=gate) == "Tier 3/big/True"
    )
    assert requests[0].tool == "write_file" and requests[0].preview == "diff"
    assert inner.seen == [ApprovalResult(True, {"path": "b"}, "")]  # no session reset
    assert inner.more["conversation"].startswith("mma:Tier 3:") and inner.more["conversation_kind"] == "mma"
    assert caller.usage.snapshot()["Tier 3"] == {"input": 7, "output": 3, "model": "big"}
    assert inner.model == "user-model"  # the user's model is restored after a tier call
    caller.shutdown()


class ForkingClient(ContractClient):
    """A client whose sends meet at a barrier: two of them finish only when they run side by side."""

    def __init__(self, barrier: threading.Barrier, forks: list[ForkingClient]) -> None:
        super().__init__()
        self.barrier, self.forks, self.released = barrier, forks, False

    def fork(self) -> ForkingClient:
        child = ForkingClient(self.barrier, self.forks)
        self.forks.append(child)
        return child

    def release(self) -> None:
        self.released = True

    def send(self, md_content, user_message, **more):
        self.barrier.wait(timeout=5)  # BrokenBarrierError when the other send cannot run meanwhile
        return f"{more['tier']}/done"


def test_tier_3_calls_run_side_by_side_on_forks_and_other_tiers_take_turns() -> None:
    forks: list[ForkingClient] = []
    shared = ForkingClient(threading.Barrier(2), forks)
    caller = TierCaller(AIClientAdapter(shared), TierUsage())
    answers: list[str] = []
    def worker() -> None:
        answers.append(caller.call("Tier 3", "", "go"))

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert answers == ["Tier 3/done", "Tier 3/done"]  # both passed the barrier: side by side
    assert len(forks) == 2 and all(f.released for f in forks)
    shared.barrier = threading.Barrier(1)
    assert caller.call("Tier 2", "", "plan") == "Tier 2/done" and len(forks) == 2  # the shared client
    caller.shutdown(1.0)
