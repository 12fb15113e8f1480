"""The loop guards in the run log: a model that repeats ``read_file`` on one path gets a warning
the second time and a refusal the third, and the run log has both trips — each as a ``note`` and
counted in ``run_end.guards`` — and replays identically."""

from __future__ import annotations

from pathlib import Path

from manual_slop.governance.replay import replay
from tests.fakes import Call, OpenAIFake, Reply
from tests.integration.governance.conftest import recording_client, records, run_files


def test_the_run_log_counts_a_warned_and_a_refused_repeat(tmp_path: Path, fake: OpenAIFake) -> None:
    (tmp_path / "notes.txt").write_text("the notes\n")
    client = recording_client(tmp_path, fake)
    fake.push(*[Reply("", [Call("read_file", {"path": "notes.txt"})]) for _ in range(3)], Reply("done"))
    assert client.send("", "read the notes", base_dir=str(tmp_path)) == "done"
    [path] = run_files(tmp_path / "runs")
    lines = records(path)
    notes = [r["payload"] for r in lines if r["type"] == "note" and r["kind"] == "guard"]
    assert [(n["kind"], n["tool"]) for n in notes] == [
        ("repeat_warned", "read_file"),
        ("repeat_refused", "read_file"),
    ]
    end = lines[-1]
    assert end["type"] == "run_end" and end["outcome"] == "answered"
    assert end["guards"] == {"repeat_warned": 1, "repeat_refused": 1}
    refused = [r for r in lines if r["type"] == "tool_result"][-1]
    assert refused["status"] == "rejected" and refused["output"].startswith("NOT EXECUTED: you are repeating")
    result = replay(path)
    assert (result.identical, result.requests, result.tool_calls) == (True, 4, 3), result.summary()
