#!/usr/bin/env python3
"""A stand-in for the ``gemini`` CLI that speaks ``--output-format stream-json``.

Run as ``gemini_cli_mock.py --script SCRIPT.json [gemini flags...]``; the
wrapper made by :class:`tests.fakes.gemini_cli.FakeGeminiCli` adds ``--script``.
Each invocation takes the next turn of the script (a JSON list), records its
argv and stdin in ``SCRIPT.json.calls`` (JSON-L) and prints JSON-L events:

    init (session_id, model) → message (user) → message (assistant, delta) ...
    → tool_use / tool_result (tools the CLI ran itself) → result (status, stats)

A turn is ``{"text": str, "chunks": [str], "tool_uses": [{"name", "args", "output"}],
"error": {"message", "status"}, "exit": int, "stderr": str, "delay": s, "chunk_delay": s}``, plus, for the
adapter's failure paths: ``"ask_wait": s`` (hold a bridge ask marker in
``$SLOP_BRIDGE_ASKS`` that long, as a bridge waiting for a human does), ``"garbage": str``
(print a line that is not JSON), ``"child": true`` (start a ``sleep 60`` child first, whose
pid goes into the calls log) and ``"no_result": true`` (end without a result event).
Each call also records its working directory and the provider's environment variables
(whether the API key was set, never its value).
Only the standard library is used: the mock runs with any ``python3``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

_ENV = ("GEMINI_CLI_HOME", "GOOGLE_GEMINI_BASE_URL", "SLOP_HOOK_URL", "SLOP_BRIDGE_DENY", "TMPDIR")


def _emit(event: dict) -> None:
    event.setdefault("timestamp", time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()))
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def _take_turn(script_path: str) -> tuple[dict, int]:
    state_path = script_path + ".state"
    try:
        with open(state_path, encoding="utf-8") as fh:
            index = int(fh.read().strip() or 0)
    except FileNotFoundError:
        index = 0
    with open(script_path, encoding="utf-8") as fh:
        turns = json.load(fh)
    with open(state_path, "w", encoding="utf-8") as fh:
        fh.write(str(index + 1))
    if index >= len(turns):
        return {"error": {"message": "mock gemini: no scripted turn left", "status": 500}, "exit": 1}, index
    return turns[index], index


def _flag(argv: list[str], *names: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg in names and i + 1 < len(argv):
            return argv[i + 1]
        for name in names:
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


def main(argv: list[str]) -> int:
    script = _flag(argv, "--script")
    if script is None:
        print("mock gemini: --script is required", file=sys.stderr)
        return 2
    stdin = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
    turn, index = _take_turn(script)
    record = {
        "argv": argv,
        "stdin": stdin,
        "turn": index,
        "cwd": os.getcwd(),
        "env": {k: os.environ.get(k) for k in _ENV},
        "has_key": bool(os.environ.get("GEMINI_API_KEY")),
    }
    if turn.get("child"):
        record["child"] = subprocess.Popen(["sleep", "60"]).pid
    with open(script + ".calls", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")
    if turn.get("ask_wait"):
        marker = Path(os.environ["SLOP_BRIDGE_ASKS"]) / f"ask-{os.getpid()}"
        marker.touch()
        time.sleep(float(turn["ask_wait"]))
        marker.unlink()
    if turn.get("delay"):
        time.sleep(float(turn["delay"]))
    if turn.get("stderr"):
        sys.stderr.write(turn["stderr"])
    if _flag(argv, "-o", "--output-format") != "stream-json":
        print("mock gemini: only --output-format stream-json is supported", file=sys.stderr)
        return 2
    model = _flag(argv, "-m", "--model") or "gemini-2.5-flash"
    session = _flag(argv, "-r", "--resume") or f"mock-{uuid.uuid4().hex[:12]}"
    prompt = _flag(argv, "-p", "--prompt") or ""
    _emit({"type": "init", "session_id": session, "model": model})
    _emit({"type": "message", "role": "user", "content": (stdin + "\n\n" + prompt).strip()})
    if turn.get("garbage"):
        sys.stdout.write(turn["garbage"] + "\n")
        sys.stdout.flush()
    error = turn.get("error")
    if error:
        _emit({"type": "error", "severity": "error", "message": error.get("message", "error")})
        _emit(
            {
                "type": "result",
                "status": "error",
                "error": {
                    "type": "ApiError",
                    "message": error.get("message", ""),
                    "code": error.get("status"),
                },
                "stats": {"total_tokens": 0, "input_tokens": 0, "output_tokens": 0, "duration_ms": 1},
            }
        )
        return int(turn.get("exit", (int(error.get("status") or 1)) % 256 or 1))
    for n, use in enumerate(turn.get("tool_uses", [])):
        tool_id = f"{use['name']}-{index}-{n}"
        _emit(
            {
                "type": "tool_use",
                "tool_name": use["name"],
                "tool_id": tool_id,
                "parameters": use.get("args", {}),
            }
        )
        _emit(
            {"type": "tool_result", "tool_id": tool_id, "status": "success", "output": use.get("output", "")}
        )
    text = turn.get("text", "")
    chunks = turn.get("chunks") or [text[i : i + 5] for i in range(0, len(text), 5)]
    for index, chunk in enumerate(chunks):
        if index and turn.get("chunk_delay"):
            time.sleep(float(turn["chunk_delay"]))
        _emit({"type": "message", "role": "assistant", "content": chunk, "delta": True})
    if turn.get("no_result"):
        return int(turn.get("exit", 0))
    input_tokens = max(1, len(stdin + prompt) // 4)
    output_tokens = max(1, len(text) // 4)
    _emit(
        {
            "type": "result",
            "status": "success",
            "stats": {
                "total_tokens": input_tokens + output_tokens,
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "cached": 0,
                "duration_ms": 5,
                "tool_calls": len(turn.get("tool_uses", [])),
            },
        }
    )
    return int(turn.get("exit", 0))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
