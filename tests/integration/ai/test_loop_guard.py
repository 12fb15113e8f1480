"""Loop guards through the real client, the real tools and the OpenAI-wire fake (DeepSeek).

A scripted model repeats a call; what the model is sent back, what ran, and what the comms
log and the ``guard_trip`` events counted are checked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from manual_slop.ai import AIClient
from manual_slop.ai.errors import ConfigurationError
from manual_slop.tools.registry import default_registry
from tests.fakes import Call, Json, Reply
from tests.fakes.openai import raw_tool_call_reply
from tests.integration.ai.harness import FAST_RETRY, HttpHarness, approve_all, make_harness


@pytest.fixture
def deepseek(tmp_path: Path):
    harness = make_harness("deepseek", tmp_path)
    assert isinstance(harness, HttpHarness)
    try:
        yield harness
    finally:
        harness.close()


class Trips:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def __call__(self, kind: str, tool: str) -> None:
        self.seen.append((kind, tool))


def real_tools_client(harness: HttpHarness, **configure: Any) -> tuple[AIClient, Trips]:
    """A client with every built-in tool (``read_file``, ``write_file`` ...) against the fake."""
    client = AIClient(registry=default_registry(), retry=FAST_RETRY, **harness.client_options())
    client.comms_log_callback = harness.entries.append
    client.tool_log_callback = harness.tool_entries.append
    client.set_provider(harness.name)
    client.configure(**{**harness.configure_options(), **configure})
    trips = Trips()
    client.events.on("guard_trip", trips)
    return client, trips


def guard_kinds(harness: HttpHarness) -> list[str]:
    return [e["payload"]["kind"] for e in harness.entries if e["kind"] == "guard"]


def tool_outputs(harness: HttpHarness, request: int) -> list[str]:
    """The tool messages of the ``request``-th model call, as the model got them."""
    return [m["content"] for m in harness.bodies()[request]["messages"] if m["role"] == "tool"]


def ran(harness: HttpHarness, tool: str) -> int:
    return sum(1 for e in harness.tool_entries if e["tool"] == tool)


def test_the_second_identical_read_warns_and_the_third_is_refused_with_what_it_got(
    deepseek: HttpHarness, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha contents\n", encoding="utf-8")
    deepseek.push(
        Reply("", [Call("read_file", {"path": "a.txt"})]),
        Reply("", [Call("read_file", {"path": "a.txt"})]),
        Reply("", [Call("read_file", {"path": "./a.txt "})]),  # the same call, written differently
        Reply("done"),
    )
    client, trips = real_tools_client(deepseek)
    answer = client.send("", "read it", base_dir=str(tmp_path), pre_tool_callback=approve_all)
    assert answer == "done" and answer.limit == ""
    assert ran(deepseek, "read_file") == 2  # the third never ran
    first, second, third = (tool_outputs(deepseek, n)[-1] for n in (1, 2, 3))
    assert "alpha contents" in first and "[GUARD" not in first
    assert "alpha contents" in second and "[GUARD: this is call 2 of read_file" in second
    assert third.startswith("NOT EXECUTED: you are repeating yourself. read_file was already called 2 times")
    assert "alpha contents" in third and "[GUARD" not in third  # the earlier result, without the warning
    assert guard_kinds(deepseek) == ["repeat_warned", "repeat_refused"]
    assert trips.seen == [("repeat_warned", "read_file"), ("repeat_refused", "read_file")]
    refused = next(e for e in deepseek.entries if e["kind"] == "tool_result" and e["payload"]["id"])
    assert refused  # the comms log still has every result
    statuses = [e["payload"]["status"] for e in deepseek.entries if e["kind"] == "tool_result"]
    assert statuses == ["success", "success", "rejected"]


def test_a_successful_change_lets_the_same_read_run_again(deepseek: HttpHarness, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old\n", encoding="utf-8")
    deepseek.push(
        Reply("", [Call("read_file", {"path": "a.txt"})]),
        Reply("", [Call("read_file", {"path": "a.txt"})]),
        Reply("", [Call("write_file", {"path": "a.txt", "content": "new\n"})]),
        Reply("", [Call("read_file", {"path": "a.txt"})]),
        Reply("ok"),
    )
    client, _ = real_tools_client(deepseek)
    client.send("", "edit it", base_dir=str(tmp_path), pre_tool_callback=approve_all)
    assert ran(deepseek, "read_file") == 3
    after = tool_outputs(deepseek, 4)[-1]
    assert "new" in after and "[GUARD" not in after
    assert guard_kinds(deepseek) == ["repeat_warned"]


def test_repeats_are_counted_across_sends_of_one_conversation(deepseek: HttpHarness, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n", encoding="utf-8")
    deepseek.push(
        Reply("", [Call("read_file", {"path": "a.txt"}), Call("read_file", {"path": "a.txt"})]),
        Reply("first"),
        Reply("", [Call("read_file", {"path": "a.txt"})]),
        Reply("second"),
    )
    client, _ = real_tools_client(deepseek)
    assert client.send("", "one", base_dir=str(tmp_path), pre_tool_callback=approve_all) == "first"
    assert client.send("", "two", base_dir=str(tmp_path), pre_tool_callback=approve_all) == "second"
    assert ran(deepseek, "read_file") == 2
    assert guard_kinds(deepseek) == ["repeat_warned", "repeat_refused"]


@pytest.mark.parametrize(
    ("settings", "runs", "kinds"),
    [
        ({"guard_repeat_warn": 0, "guard_repeat_refuse": 0}, 4, []),
        ({"guard_repeat_warn": 0, "guard_repeat_refuse": 2}, 1, ["repeat_refused"] * 3),
        ({"guard_repeat_warn": 3, "guard_repeat_refuse": 5}, 4, ["repeat_warned"] * 2),
    ],
)
def test_the_thresholds_are_settings(
    deepseek: HttpHarness, tmp_path: Path, settings: dict[str, int], runs: int, kinds: list[str]
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n", encoding="utf-8")
    deepseek.push(*[Reply("", [Call("read_file", {"path": "a.txt"})]) for _ in range(4)], Reply("ok"))
    client, _ = real_tools_client(deepseek)
    client.apply_settings({"provider": deepseek.name, **settings})
    client.send("", "go", base_dir=str(tmp_path), pre_tool_callback=approve_all)
    assert ran(deepseek, "read_file") == runs
    assert guard_kinds(deepseek) == kinds


def test_bad_thresholds_are_refused_with_the_setting_named() -> None:
    client = AIClient(registry=default_registry())
    with pytest.raises(ConfigurationError, match="guard_repeat_refuse: expected a number between 0 and 1000"):
        client.configure(guard_repeat_refuse=-1)


def test_unknown_tools_bad_arguments_and_malformed_calls_are_counted(
    deepseek: HttpHarness, tmp_path: Path
) -> None:
    malformed = raw_tool_call_reply("read_file", "{oops", "c1")
    deepseek.push(
        Reply("", [Call("no_such_tool", {}), Call("read_file", {"wrong": 1})]),
        Json(malformed),
        Reply("ok"),
    )
    client, trips = real_tools_client(deepseek)
    client.send("", "go", base_dir=str(tmp_path), pre_tool_callback=approve_all)
    assert sorted(guard_kinds(deepseek)) == ["invalid_args", "malformed_call", "unknown_tool"]
    assert sorted(trips.seen) == [
        ("invalid_args", "read_file"),
        ("malformed_call", "read_file"),
        ("unknown_tool", "no_such_tool"),
    ]
    outputs = tool_outputs(deepseek, 1)
    assert "Unknown tool 'no_such_tool'" in outputs[0] and "Parameter validation error" in outputs[1]
