"""Runs recorded by the real AI client against the wire-level fake — of every kind, and ending
every way (answered, retried, failed, out of tool rounds, stopped) — replay through today's
tool loop to the same requests and tool calls; a changed prompt template, a changed tool
declaration or a changed tool call shows up as a divergence with its diff; a log that cannot be
read is exit 2 with the line named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import manual_slop.ai.prompts as prompts
import manual_slop.governance.replay as replay_module
from manual_slop.ai.errors import ProviderError
from manual_slop.cancel import CancelToken, RequestCancelled
from manual_slop.cli import main
from manual_slop.governance.replay import replay
from manual_slop.tools.registry import default_registry
from tests.fakes import Call, Fail, OpenAIFake, Reply
from tests.helpers import cancel_when
from tests.integration.governance.conftest import recording_client, records, run_files


def _rewrite(path: Path, target: Path, change) -> Path:
    """A copy of the run log at ``path`` with ``change(record)`` applied to every record."""
    lines = []
    for record in records(path):
        change(record)
        lines.append(json.dumps(record, ensure_ascii=False))
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


@pytest.fixture
def tool_run(tmp_path: Path, fake: OpenAIFake) -> Path:
    """A recorded chat run: a read_file call, then the answer."""
    (tmp_path / "notes.txt").write_text("the notes\n")
    client = recording_client(tmp_path, fake)
    fake.push(Reply("", [Call("read_file", {"path": "notes.txt"})]), Reply("They are notes."))
    assert client.send("", "what is in notes.txt?", base_dir=str(tmp_path)) == "They are notes."
    [path] = run_files(tmp_path / "runs")
    return path


def test_sends_of_each_kind_are_runs_of_their_kind_and_name_them_in_the_comms_log(
    tmp_path: Path, fake: OpenAIFake
) -> None:
    client = recording_client(tmp_path, fake)
    fake.push(Reply("chat answer"), Reply("ticket done"), Reply("subtask done"))
    client.send("", "hello", conversation="discussion:main", conversation_kind="discussion")
    client.send(
        "", "do T1", conversation="mma:Tier 3:T1:x", conversation_kind="mma", ticket="T1", tier="Tier 3"
    )
    client.send("", "do S2", conversation="plan:p1:S2", conversation_kind="plan", ticket="S2", tier="Subtask")
    starts = [records(p)[0] for p in run_files(tmp_path / "runs")]
    assert sorted((s["kind"], s["ticket"], s["tier"]) for s in starts) == [
        ("chat", "", ""), ("subtask", "S2", "Subtask"), ("ticket", "T1", "Tier 3"),
    ]  # fmt: skip
    for start in starts:
        entries = [e for e in client.comms.entries() if e.get("run_id") == start["run_id"]]
        assert [e["kind"] for e in entries] == ["request", "response"]
        assert all(e.get("ticket", "") == start["ticket"] for e in entries)
        assert all(e["conversation"] == start["conversation"] for e in entries)
    assert not [e for e in client.comms.entries() if "run_id" not in e]  # nothing outside a run


def test_a_recorded_run_replays_to_the_same_tool_calls(tool_run: Path, capsys: pytest.CaptureFixture) -> None:
    result = replay(tool_run)
    assert result.identical and (result.requests, result.tool_calls) == (2, 1), result.summary()
    assert main(["replay", str(tool_run), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document == {
        "run_id": records(tool_run)[0]["run_id"], "identical": True, "requests": 2, "tool_calls": 1,
        "divergence": None, "notes": [],
    }  # fmt: skip


def test_a_changed_prompt_template_shows_up_as_a_divergence(
    tool_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    old = "Be precise and brief."
    assert old in prompts.BASE_INSTRUCTIONS

    def older_template(record: dict) -> None:  # the run as recorded by a build with another template
        if record["type"] == "request":
            record["system"] = record["system"].replace(old, "Be thorough and explain your steps.")

    recorded = _rewrite(tool_run, tmp_path / "older.jsonl", older_template)
    assert main(["replay", str(recorded)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("replayed 1 request, 0 tool calls: diverged at request 1\n")
    assert "request 1: the system differs from the recording" in out
    assert "--- recorded request 1 system\n+++ live request 1 system\n" in out
    assert "\n-You are the assistant" in out and "Be thorough and explain your steps." in out
    assert f"\n+{prompts.BASE_INSTRUCTIONS}" in out

    # the same from the other side: today's template changed, the recording did not
    monkeypatch.setattr(prompts, "BASE_INSTRUCTIONS", prompts.BASE_INSTRUCTIONS.replace(old, "Be terse."))
    result = replay(tool_run)
    assert result.divergence is not None and (result.divergence.where, result.divergence.part) == (
        "request 1", "system",
    )  # fmt: skip
    assert (
        "+You are the assistant inside Manual Slop" in result.divergence.diff
        and "Be terse." in result.divergence.diff
    )


def test_changed_tool_declarations_and_tool_calls_show_up_as_divergences(
    tool_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def other_call(record: dict) -> None:
        if record["type"] == "tool_call":
            record["args"] = {"path": "other.txt"}

    moved = replay(_rewrite(tool_run, tmp_path / "moved.jsonl", other_call))
    assert moved.divergence is not None and moved.divergence.where == "tool call 1"
    assert (
        '-  "path": "other.txt"' in moved.divergence.diff
        and '+  "path": "notes.txt"' in moved.divergence.diff
    )

    def without_run_shell(**options: object):  # today's app dropped a tool
        registry = default_registry(**options)
        return registry.subset([n for n in registry.names() if n != "run_shell"])

    monkeypatch.setattr(replay_module, "default_registry", without_run_shell)
    dropped = replay(tool_run)
    assert dropped.divergence is not None and dropped.divergence.part == "declarations"
    assert (
        dropped.divergence.message
        == "request 1: the declarations differ from the recording (gone: run_shell)"
    )
    assert '-     "script"' in dropped.divergence.diff  # the diff shows what went


def test_runs_that_retried_failed_ran_out_of_rounds_or_were_stopped_replay_identically(
    tmp_path: Path, fake: OpenAIFake
) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    client = recording_client(tmp_path, fake)
    fake.push(Fail(500), Reply("after a retry"))
    client.send("", "first", base_dir=str(tmp_path), conversation="c1")
    fake.push(Fail(401))
    with pytest.raises(ProviderError):
        client.send("", "second", base_dir=str(tmp_path), conversation="c2")
    fake.push(
        *[Reply("", [Call("read_file", {"path": "a.txt"})]) for _ in range(10)], Reply("gave up reading")
    )
    client.send("", "third", base_dir=str(tmp_path), conversation="c3")
    fake.push(Reply("too late", delay=3.0))
    token = CancelToken()
    outcome, _ = cancel_when(
        lambda: client.send("", "fourth", base_dir=str(tmp_path), conversation="c4", cancel=token),
        lambda: len(fake.model_calls()) >= 15, token,
    )  # fmt: skip
    assert isinstance(outcome, RequestCancelled)
    paths = sorted(run_files(tmp_path / "runs"), key=lambda p: records(p)[0]["started"])
    ends = [records(p)[-1] for p in paths]
    assert [(e["outcome"], e["error_kind"]) for e in ends] == [
        ("answered", ""), ("error", "auth"), ("round_limit", ""), ("cancelled", "cancelled"),
    ]  # fmt: skip
    assert [r["type"] for r in records(paths[0])][2:5] == ["request", "retry", "response"]
    results = [replay(p) for p in paths]
    assert [(r.identical, r.requests, r.tool_calls) for r in results] == [
        (True, 1, 0), (True, 1, 0), (True, 11, 10), (True, 1, 0),
    ], [r.summary() for r in results]  # fmt: skip
    assert results[3].notes == ("the recording ends during request 1: the run was stopped",)


def test_a_log_that_cannot_be_read_is_exit_2_naming_the_line(
    tool_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    torn = tmp_path / "torn.jsonl"
    torn.write_text("\n".join(tool_run.read_text().splitlines()[:3]) + '\n{"type": "response", "n"\n')
    assert main(["replay", str(torn)]) == 2
    assert "torn.jsonl line 4: not a JSON record" in capsys.readouterr().err

    def no_messages(record: dict) -> None:
        if record["type"] == "request":
            del record["messages"]

    assert main(["replay", str(_rewrite(tool_run, tmp_path / "bare.jsonl", no_messages))]) == 2
    assert "bare.jsonl line 3: a request record without messages" in capsys.readouterr().err
    assert main(["replay", str(tmp_path / "missing.jsonl")]) == 2
    assert "is not a file" in capsys.readouterr().err
