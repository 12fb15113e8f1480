#!/usr/bin/env python3
"""What a call through the real Gemini CLI costs beside the model time, measured side by side.

Against the wire-level Gemini fake, whose streamed answer takes a fixed "model time"
(``--chunks`` chunks ``--chunk-ms`` apart), three ways of getting the same answer alternate:

1. direct: the CLI's own request (``streamGenerateContent?alt=sse``, the body the CLI sent)
   POSTed with ``http.client`` — the model time alone;
2. raw CLI: ``gemini -m M -o stream-json -p P`` as a subprocess in a private home, split into
   start-up (spawn -> the request reaches the fake), model (request -> last event) and exit;
3. ai_client: ``ai_client.send`` on the ``gemini_cli`` provider (the same CLI, plus the
   adapter, the private home and the logs).

Then the approval bridge: one ``scripts/cli_tool_bridge.py`` run answered by the ``auto``
policy, beside a direct ``POST /api/ask`` from this process.

Run: ``.venv/bin/python scripts/bench_gemini_cli.py [--calls N]`` (needs ``make gemini-cli``).
Prints medians and ratios; nothing passes or fails on absolute times.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.fakes
sys.path.insert(0, str(ROOT / "src"))

from tests.fakes import GeminiFake, Reply  # noqa: E402

from manual_slop.ai import AIClient, RetryPolicy  # noqa: E402
from manual_slop.ai.providers.gemini_cli_home import CliHome, bridge_script, bundled_cli  # noqa: E402

MODEL = "gemini-2.5-flash"
KEY = "bench-key"


def answer(chunks: int, chunk_ms: float) -> Reply:
    pieces = [f"word{n} " for n in range(chunks)]
    return Reply("".join(pieces), chunks=pieces, chunk_delay=chunk_ms / 1000.0)


def raw_cli(binary: str, fake: GeminiFake, home: CliHome, workdir: str) -> dict[str, float]:
    env = {**os.environ, **home.environment(), "GEMINI_API_KEY": KEY, "GOOGLE_GEMINI_BASE_URL": fake.base_url}
    env.update({"GEMINI_CLI_TRUST_WORKSPACE": "true", "GEMINI_CLI_NO_RELAUNCH": "1"})
    seen = len(fake.requests)
    start = time.monotonic()
    proc = subprocess.Popen(
        [binary, "-m", MODEL, "-o", "stream-json", "-p", "hello"],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    last_event = start
    for line in proc.stdout:
        if '"type":"result"' in line:
            last_event = time.monotonic()
    proc.wait()
    end = time.monotonic()
    request = fake.requests[seen]
    return {
        "total": end - start,
        "startup": request.ts - start,
        "model": last_event - request.ts,
        "exit": end - last_event,
    }


def direct_call(fake: GeminiFake, body: Any) -> float:
    start = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", fake.port, timeout=60)
    conn.request(
        "POST",
        f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse",
        json.dumps(body),
        {"Content-Type": "application/json", "x-goog-api-key": KEY},
    )
    response = conn.getresponse()
    response.read()
    conn.close()
    return time.monotonic() - start


def bench_calls(binary: str, calls: int, chunks: int, chunk_ms: float) -> None:
    workdir = tempfile.mkdtemp(prefix="bench-gemini-cli-")
    home = CliHome()
    client = AIClient(retry=RetryPolicy(max_retries=0))
    client.set_provider("gemini_cli", MODEL)
    with GeminiFake(api_key=KEY) as fake:
        client.configure(api_key=KEY, base_url=fake.base_url, binary=binary, timeout_s=120)
        fake.push(*[answer(chunks, chunk_ms) for _ in range(3 * calls + 3)])
        raw_cli(binary, fake, home, workdir)  # warm-up (disk caches)
        body = fake.model_calls()[-1].body
        rows: dict[str, list[float]] = {"direct": [], "raw": [], "client": []}
        parts: dict[str, list[float]] = {"startup": [], "model": [], "exit": []}
        for _ in range(calls):
            rows["direct"].append(direct_call(fake, body))
            measured = raw_cli(binary, fake, home, workdir)
            rows["raw"].append(measured["total"])
            for key in parts:
                parts[key].append(measured[key])
            client.reset_session()
            start = time.monotonic()
            client.send("", "hello", base_dir=workdir, enable_tools=False)
            rows["client"].append(time.monotonic() - start)
    client.cleanup()
    home.remove()
    med = {k: statistics.median(v) for k, v in rows.items()}
    direct, raw, via = med["direct"], med["raw"], med["client"]
    print(f"one call, median of {calls} alternating runs (fake model time {chunks} x {chunk_ms:g} ms):")
    print(f"  direct HTTP call (model time only)  {direct * 1000:8.0f} ms")
    print(f"  raw CLI subprocess                  {raw * 1000:8.0f} ms   ratio {raw / direct:.2f}")
    for key, values in parts.items():
        print(f"    {key:<8} {statistics.median(values) * 1000:8.0f} ms")
    ratio = f"ratio {via / direct:.2f} (vs raw CLI {via / raw:.2f})"
    print(f"  ai_client.send (gemini_cli)         {via * 1000:8.0f} ms   {ratio}")
    print(f"  CLI overhead per call (raw - direct) {(raw - direct) * 1000:7.0f} ms")


def bench_bridge(calls: int) -> None:
    from manual_slop.controller import AppController, LaunchOptions
    from manual_slop.headless import HeadlessTicker
    from manual_slop.hooks import ApiHookClient, HookServer

    folder = Path(tempfile.mkdtemp(prefix="bench-bridge-"))
    (folder / "config.toml").write_text("[approval]\npolicy = 'auto'\n")
    ctrl = AppController(folder / "config.toml", options=LaunchOptions(headless=True), environ={})
    server = HookServer(ctrl, "127.0.0.1", 0).start()
    ticker = threading.Thread(target=HeadlessTicker(ctrl).run, name="bench-ticker", daemon=True)
    ticker.start()
    api = ApiHookClient(server.url, "", 10)
    call = json.dumps({"tool_name": "read_file", "tool_input": {"file_path": "a.txt"}})
    env = {"PATH": os.environ.get("PATH", ""), "SLOP_HOOK_URL": server.url}
    bridge: list[float] = []
    direct: list[float] = []
    try:
        for _ in range(calls):
            start = time.monotonic()
            out = subprocess.run(
                [sys.executable, "-I", str(bridge_script())],
                input=call,
                env=env,
                capture_output=True,
                text=True,
            ).stdout
            bridge.append(time.monotonic() - start)
            assert json.loads(out)["decision"] == "allow", out
            start = time.monotonic()
            assert api.ask("bench", "read_file", {"file_path": "a.txt"})["approved"]
            direct.append(time.monotonic() - start)
    finally:
        api.close()
        server.stop()
        ctrl.request_stop()
        ticker.join(5)
        ctrl.bind_main_thread()
        ctrl.shutdown()
    b, d = statistics.median(bridge), statistics.median(direct)
    print(f"approval bridge, median of {calls} (policy auto, so no human time):")
    print(f"  POST /api/ask from this process     {d * 1000:8.1f} ms")
    print(f"  cli_tool_bridge.py run              {b * 1000:8.1f} ms   ratio {b / d:.1f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--chunk-ms", type=float, default=50.0)
    args = parser.parse_args()
    binary = bundled_cli()
    if binary is None:
        print("the Gemini CLI is not installed: run `make gemini-cli`", file=sys.stderr)
        return 2
    bench_calls(str(binary), args.calls, args.chunks, args.chunk_ms)
    bench_calls(str(binary), args.calls, 1, 0.0)
    bench_bridge(20)
    return 0


if __name__ == "__main__":
    sys.exit(main())
