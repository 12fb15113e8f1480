"""A message sent through the real app (Hook API → controller → AI client → the wire-level fake)
leaves one run log holding every request whole, the answers, the tool calls and results, the
approval the user gave over the Hook API and how the run ended; comms.log and audit.log name the
run; the Hook API serves the runs, their records and each request in sections; and the recording
replays to the same requests and tool calls with ``sloppy replay``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from manual_slop.ai.prompts import BASE_INSTRUCTIONS
from manual_slop.ai.transcript import estimate_tokens
from manual_slop.governance.run_log import RUNS_DIR
from tests.fakes import Call, OpenAIFake, Reply
from tests.integration.governance.conftest import KEY, recording_app, records, run_files
from tests.integration.hooks.conftest import HookAppFactory, wait_until

ROOT = Path(__file__).resolve().parents[3]
PROMPT = "Answer in one short sentence."


def test_a_send_through_the_app_is_recorded_whole_and_replays_identically(
    hook_app_factory: HookAppFactory, fake: OpenAIFake, tmp_path: Path
) -> None:
    app, api = recording_app(hook_app_factory, fake)
    base = app.ctrl.base_dir()
    (base / "hello.txt").write_text(f"hello, the key is {KEY}\n")
    for name, value in (("project_files", ["hello.txt", "out.txt"]), ("system_prompt", PROMPT)):
        api.wait_for_task(api.set_value(name, value))
    fake.push(
        Reply(
            "",
            [
                Call("read_file", {"path": "hello.txt"}),
                Call("write_file", {"path": "out.txt", "content": "hi\n"}),
            ],
        ),
        Reply("Read it and wrote out.txt."),
    )
    request_id = api.send("read hello.txt, then write out.txt")
    wait_until(lambda: bool(api.pending()), timeout=20)
    dialog = api.pending()[0]
    api.approve(dialog["id"])
    assert api.wait_for_request(request_id, timeout=30)["state"] == "done"

    session = app.ctrl.session_log.root
    [path] = run_files(session / RUNS_DIR)
    found = records(path)
    assert [r["type"] for r in found] == [
        "run_start", "setup", "request", "response", "tool_call", "tool_call", "decision", "tool_result",
        "tool_result", "refresh", "request", "response", "run_end",
    ]  # fmt: skip
    run_id = found[0]["run_id"]
    start, setup, first, answer = found[:4]
    assert (start["kind"], start["provider"], start["conversation"]) == (
        "chat",
        "deepseek",
        "discussion:main",
    )
    assert setup["system_prompt"] == PROMPT and setup["tools"] is None and setup["history"] == []
    # the whole prompt: what the fake received is what the log holds
    assert first["system"].startswith(BASE_INSTRUCTIONS)
    assert PROMPT in first["context"] and "hello.txt" in first["context"]  # the project prompt rides there
    sent = fake.model_calls()[0].body
    assert (
        first["system"] in sent["messages"][0]["content"]
        and first["context"] in sent["messages"][0]["content"]
    )
    assert [d["function"]["name"] for d in first["declarations"]] == [
        t["function"]["name"] for t in sent["tools"]
    ]
    assert first["messages"] == [{"role": "user", "text": "read hello.txt, then write out.txt"}]
    assert answer["tool_calls"][1] == {"name": "write_file", "id": answer["tool_calls"][1]["id"],
                                       "args": {"path": "out.txt", "content": "hi\n"}}  # fmt: skip
    second = found[10]
    assert second["messages"][1]["tool_calls"] == [
        {"id": c["id"], "name": c["name"], "args": c["args"]} for c in answer["tool_calls"]
    ]
    outputs = second["messages"][2]["tool_outputs"]
    assert [o["status"] for o in outputs] == ["success", "success"]
    assert outputs[1]["content"].endswith(found[9]["text"])  # the refresh block, as the model got it
    end = found[-1]
    assert (end["outcome"], end["requests"], end["tool_calls"], end["decisions"]) == ("answered", 2, 2, 1)
    assert end["usage"]["input_tokens"] > 0
    # secrets never reach the file: the key the tool read is redacted wherever it went
    text = path.read_text(encoding="utf-8")
    assert KEY not in text and "[REDACTED:DEEPSEEK_API_KEY]" in outputs[0]["content"]

    # one run id joins the run log, comms.log and audit.log
    decision = found[6]
    audit = [json.loads(line) for line in (session / "audit.log").read_text().splitlines()]
    assert [a["id"] for a in audit] == [dialog["id"]] == [decision["dialog"]]
    assert (audit[0]["run_id"], audit[0]["call_id"], audit[0]["decider"]) == (run_id, found[5]["id"], "hook")
    assert (decision["call_id"], decision["decider"], decision["approved"]) == (found[5]["id"], "hook", True)
    comms = [json.loads(line) for line in (session / "comms.log").read_text().splitlines()]
    of_run = [c for c in comms if c.get("run_id") == run_id]
    assert [c["kind"] for c in of_run][:4] == ["request", "response", "tool_call", "tool_call"]
    assert all(c["conversation"] == "discussion:main" for c in of_run)
    assert {c["kind"] for c in comms} - {c["kind"] for c in of_run} <= {"notice"}

    # the Hook API serves the same
    listed = api.get("/api/runs")
    assert listed["session"] == session.name and [r["id"] for r in listed["runs"]] == [run_id]
    summary = listed["runs"][0]
    assert (summary["outcome"], summary["requests"], summary["tool_calls"], summary["decisions"]) == (
        "answered", 2, 2, 1,
    )  # fmt: skip
    page = api.get(f"/api/runs/{run_id}", limit=4)
    assert [r["seq"] for r in page["records"]] == [1, 2, 3, 4] and (page["next"], page["total"]) == (4, 13)
    rest = api.get(f"/api/runs/{run_id}", offset=page["next"], limit=500)
    assert page["records"] + rest["records"] == found and rest["next"] is None
    view = api.get(f"/api/runs/{run_id}/requests/2")
    names = [s["name"] for s in view["sections"]]
    assert names[:5] == ["system", "context", "message 1 · user", "message 2 · assistant", "message 3 · tool"]
    assert names[5].startswith("tools (") and "write_file" in names[5]
    for shown in view["sections"]:
        assert shown["tokens"] == estimate_tokens(len(shown["text"]))
    assert view["tokens"] == sum(s["tokens"] for s in view["sections"])
    assert view["sections"][0]["text"] == second["system"] and "-> write_file(" in view["sections"][3]["text"]
    assert view["response"]["text"] == "Read it and wrote out.txt."
    for bad, status, words in (
        ("/api/runs/not-a-run", 400, "is not a run id"),
        ("/api/runs/..", 400, "is not a run id"),
        ("/api/runs/%2e%2e", 400, "is not a run id"),
        ("/api/runs/%2e%2e%2f%2e%2e%2fcomms.log", 404, "no endpoint"),
        ("/api/runs/000000-chat-00000000", 404, "no run 000000-chat-00000000"),
        (f"/api/runs/{run_id}/requests/3", 404, "has no request 3"),
        (f"/api/runs/{run_id}/requests/first", 400, "expected a whole number"),
    ):
        reply = app.call("GET", bad)
        assert reply.status == status and words in reply.body["error"]["message"], (bad, reply.body)

    # the recording replays through today's loop to the same requests and tool calls
    replayed = subprocess.run(
        [sys.executable, str(ROOT / "sloppy.py"), "replay", str(path)],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert (replayed.returncode, replayed.stdout) == (0, "replayed 2 requests, 2 tool calls: identical\n"), (
        replayed.stderr
    )
