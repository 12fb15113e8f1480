"""TierCaller and AIClientAdapter: fresh sessions, tier tags, usage, abort, the tools contract."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import pytest

from manual_slop.mma.client import AIClientAdapter, StepVerdict, TierCaller
from manual_slop.mma.errors import Aborted
from manual_slop.mma.models import TierUsage
from tests.unit.mma.fake_client import FakeTierClient


def test_a_call_is_fresh_tagged_and_accounted() -> None:
    client = FakeTierClient(respond=lambda call: f"{call.tier}:{call.model}")
    caller = TierCaller(client, TierUsage())
    assert caller.call("Tier 2", "md", "msg", model="m") == "Tier 2:m"
    assert client.resets == 1 and caller.usage.snapshot()["Tier 2"]["model"] == "m"
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


@dataclass
class ApprovalResult:  # the tools contract's shape
    approved: bool
    args: dict[str, Any]
    reason: str = ""


@dataclass
class ToolCall:
    id: str
    name: str
    args: dict[str, Any]


@dataclass
class ApprovalRequest:
    call: ToolCall
    preview: str


class ContractClient:
    """Shaped like issue 5's ai_client: send(..., pre_tool_callback=...)."""

    def __init__(self) -> None:
        self.tier: str | None = None
        self.model = ""
        self.seen: list[Any] = []

    def reset_session(self) -> None:
        self.seen.append("reset")

    def set_current_tier(self, tier: str | None) -> None:
        self.tier = tier

    def send(
        self, md_content: str, user_message: str, *, base_dir: str, enable_tools: bool, pre_tool_callback
    ):
        result = pre_tool_callback(ApprovalRequest(ToolCall("1", "write_file", {"path": "a"}), "diff"))
        self.seen.append(result)
        return f"{self.tier}/{self.model}/{enable_tools}"


def test_the_adapter_speaks_the_tools_contract() -> None:
    inner = ContractClient()
    adapter = AIClientAdapter(
        inner,
        usage=lambda: {"input_tokens": 7, "output": 3},
        select_model=lambda m: setattr(inner, "model", m),
        result_type=ApprovalResult,
    )
    requests = []

    def gate(request):
        requests.append(request)
        return StepVerdict(True, {"path": "b"}, "")

    caller = TierCaller(adapter, TierUsage())
    assert (
        caller.call("Tier 3", "", "go", model="big", enable_tools=True, step_gate=gate) == "Tier 3/big/True"
    )
    assert requests[0].tool == "write_file" and requests[0].preview == "diff"
    assert inner.seen == ["reset", ApprovalResult(True, {"path": "b"}, "")]
    assert caller.usage.snapshot()["Tier 3"] == {"input": 7, "output": 3, "model": "big"}
    assert inner.tier is None  # the tag is cleared after the call
    caller.shutdown()
